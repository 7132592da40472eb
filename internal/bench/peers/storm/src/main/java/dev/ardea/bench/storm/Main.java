package dev.ardea.bench.storm;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.apache.storm.Config;
import org.apache.storm.LocalCluster;
import org.apache.storm.generated.KillOptions;
import org.apache.storm.spout.SpoutOutputCollector;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.topology.base.BaseRichBolt;
import org.apache.storm.topology.base.BaseRichSpout;
import org.apache.storm.tuple.Fields;
import org.apache.storm.tuple.Tuple;
import org.apache.storm.tuple.Values;
import org.apache.storm.utils.TupleUtils;
import org.apache.storm.utils.VersionInfo;

/**
 * Ardea's word count on Apache Storm, one of `ardea bench peers`' runners
 * (internal/bench/peers/README.md, "The runners' contract").
 *
 * <p>A LocalCluster in this JVM runs one worker with a spout (1 task) that
 * emits the generator spout's sentences, a split bolt (--splits tasks,
 * shuffle grouping) and a count bolt (--counts tasks, fields grouping on
 * the word, a HashMap per task). Acking is off: no ackers, no message ids,
 * no anchors (at most once). The count tasks add what they counted to one
 * process-wide LongAdder every 1024 words (and on a tick tuple each
 * second), which the main thread samples.
 */
public final class Main {
    static final String ENGINE = "storm";
    static final String TOPOLOGY = "ardea-wordcount";
    static final String SPOUT = "sentences";
    static final String SPLIT = "split";
    static final String COUNT = "count";

    /** Words the count tasks counted so far (the tasks add in batches). */
    static final LongAdder COUNTED = new LongAdder();
    /** Each count task's map, by task id, for the finite run's digest. */
    static final ConcurrentHashMap<Integer, Map<String, long[]>> TASK_COUNTS = new ConcurrentHashMap<>();

    /** How many words a count task counts before it adds them to COUNTED. */
    static final int COUNTED_BATCH = 1024;

    private Main() {}

    /**
     * The line of the corpus the source's seq-th sentence is (seq from 1):
     * the generator spout's choice with seed 0, splitmix64 in wrapping
     * 64-bit arithmetic, the remainder taken unsigned.
     */
    static int sentenceIndex(long seq, int lines) {
        long z = seq * 0xBF58476D1CE4E5B9L; // base 0: base*0x9E3779B97F4A7C15 is 0
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        z = z ^ (z >>> 31);
        return (int) Long.remainderUnsigned(z, lines);
    }

    /** The sentences, each emitted as a one-field tuple ("sentence"), without a message id. */
    public static final class SentenceSpout extends BaseRichSpout {
        private static final long serialVersionUID = 1L;
        private final String[] lines;
        private final long limit; // 0: unbounded
        private transient SpoutOutputCollector out;
        private transient long seq;

        SentenceSpout(String[] lines, long limit) {
            this.lines = lines;
            this.limit = limit;
        }

        @Override
        public void open(Map<String, Object> conf, TopologyContext context, SpoutOutputCollector collector) {
            this.out = collector;
            this.seq = 0;
        }

        @Override
        public void nextTuple() {
            if (limit > 0 && seq >= limit) {
                return; // done: Storm's spout wait strategy idles the executor
            }
            seq++;
            out.emit(new Values(lines[sentenceIndex(seq, lines.length)]));
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer declarer) {
            declarer.declare(new Fields("sentence"));
        }
    }

    /** A sentence's words, separated by spaces, each an unanchored tuple ("word"). */
    public static final class SplitBolt extends BaseRichBolt {
        private static final long serialVersionUID = 1L;
        private transient OutputCollector out;

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext context, OutputCollector collector) {
            this.out = collector;
        }

        @Override
        public void execute(Tuple input) {
            String s = input.getString(0);
            int n = s.length();
            int i = 0;
            while (i < n) {
                int j = s.indexOf(' ', i);
                if (j < 0) {
                    j = n;
                }
                if (j > i) {
                    out.emit(new Values(s.substring(i, j)));
                }
                i = j + 1;
            }
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer declarer) {
            declarer.declare(new Fields("word"));
        }
    }

    /** Counts words in a HashMap of its own; adds to COUNTED every 1024 words and on each tick. */
    public static final class CountBolt extends BaseRichBolt {
        private static final long serialVersionUID = 1L;
        private transient HashMap<String, long[]> counts;
        private transient int pending;

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext context, OutputCollector collector) {
            counts = new HashMap<>();
            pending = 0;
            TASK_COUNTS.put(context.getThisTaskId(), counts);
        }

        @Override
        public void execute(Tuple input) {
            if (TupleUtils.isTick(input)) {
                flush();
                return;
            }
            String word = input.getString(0);
            long[] c = counts.get(word);
            if (c == null) {
                c = new long[1];
                counts.put(word, c);
            }
            c[0]++;
            if (++pending == COUNTED_BATCH) {
                flush();
            }
        }

        // The map's writes happen before the adder's (a volatile write), so
        // the main thread, once it has read a total that includes them, sees
        // them too.
        private void flush() {
            if (pending > 0) {
                COUNTED.add(pending);
                pending = 0;
            }
        }

        @Override
        public Map<String, Object> getComponentConfiguration() {
            Map<String, Object> conf = new HashMap<>();
            conf.put(Config.TOPOLOGY_TICK_TUPLE_FREQ_SECS, 1); // flushes the last words of a finite run
            return conf;
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer declarer) {}
    }

    static final class Args {
        String corpus;
        int splits = 1;
        int counts = 2;
        double seconds = 10;
        double warmup = 2;
        long sentences = 0; // 0: timed run

        static Args parse(String[] argv) {
            Args a = new Args();
            for (int i = 0; i < argv.length; i++) {
                String flag = argv[i];
                String value = null;
                int eq = flag.indexOf('=');
                if (flag.startsWith("--") && eq > 0) {
                    value = flag.substring(eq + 1);
                    flag = flag.substring(0, eq);
                } else if (i + 1 < argv.length) {
                    value = argv[++i];
                }
                if (value == null) {
                    throw new IllegalArgumentException("flag " + flag + " needs a value");
                }
                switch (flag.replaceFirst("^--?", "")) {
                    case "corpus" -> a.corpus = value;
                    case "splits" -> a.splits = Integer.parseInt(value);
                    case "counts" -> a.counts = Integer.parseInt(value);
                    case "seconds" -> a.seconds = Double.parseDouble(value);
                    case "warmup" -> a.warmup = Double.parseDouble(value);
                    case "sentences" -> a.sentences = Long.parseLong(value);
                    default -> throw new IllegalArgumentException("unknown flag " + flag);
                }
            }
            if (a.corpus == null) {
                throw new IllegalArgumentException("--corpus FILE is required");
            }
            if (a.splits < 1 || a.counts < 1) {
                throw new IllegalArgumentException("--splits and --counts must be at least 1");
            }
            if (a.seconds <= 0 || a.warmup < 0 || a.sentences < 0) {
                throw new IllegalArgumentException("--seconds must be positive, --warmup and --sentences not negative");
            }
            return a;
        }
    }

    /**
     * The topology's configuration, tuned as a Storm user tunes a
     * throughput job (Storm's docs/Performance.md and its own storm-perf
     * word count, FileReadWordCountTopo).
     */
    static Config topologyConfig(boolean finite) {
        Config conf = new Config();
        // One worker: every tuple stays in the JVM, passed by reference
        // between executors' queues, never serialized. (So Kryo
        // registration would change nothing: Storm only serializes tuples
        // that cross workers; String fields are registered by default.)
        conf.setNumWorkers(1);
        // Acking off (at most once): no acker executors; the spout emits
        // without message ids and the bolts without anchors.
        conf.setNumAckers(0);
        conf.put(Config.TOPOLOGY_EVENTLOGGER_EXECUTORS, 0);
        // Batching within the worker: each producer batches its writes into
        // a consumer's receive queue, 1000 tuples at a time (storm-perf's
        // setting; default 1), and the flush tuples (every 1 ms, the
        // default topology.batch.flush.interval.millis) push out partial
        // batches. The receive queues keep their default 32768 slots.
        //
        // Not in a finite run (--sentences): there Storm 2.8 can strand the
        // last partial batch of a producer that met backpressure. A tuple it
        // later moves from its pendingEmits into the queue
        // (tryTransfer(t, null)) does not mark that queue for the next flush
        // tuple, and a flush that drains only part of a batch unmarks it;
        // the remainder then waits for the producer's next emit to that
        // queue, which in a stream comes at once and at the end of a finite
        // run never does (we saw 8605 of 888006 words stay uncounted). So a
        // finite run, which checks the counts, not the speed, keeps Storm's
        // default of 1: no batching, nothing to strand.
        conf.put(Config.TOPOLOGY_PRODUCER_BATCH_SIZE, finite ? 1 : 1000);
        // topology.transfer.batch.size is left at its default (1): it
        // batches writes into the worker transfer queue, which only tuples
        // bound for another worker use, and there is none.
        // Sample executor stats rarely (storm-perf's value; default 0.05).
        conf.put(Config.TOPOLOGY_STATS_SAMPLE_RATE, 0.0005);
        // storm-perf's word count turns load-aware shuffling off too.
        conf.put(Config.TOPOLOGY_DISABLE_LOADAWARE_MESSAGING, true);
        // Wait strategies stay Storm's default (progressive: spin, park,
        // then sleep 1 ms). storm-perf busy-polls its bolts
        // (WaitStrategyPark with 0 µs), which pays on a machine with a core
        // per executor but not when executors share few cores.
        return conf;
    }

    public static void main(String[] argv) {
        // Only the JSON line goes to stdout: anything else that writes to
        // System.out (a library's banner) goes to stderr.
        PrintStream stdout = System.out;
        System.setOut(System.err);
        int code;
        try {
            stdout.println(run(Args.parse(argv)));
            stdout.flush();
            code = 0;
        } catch (Throwable t) {
            System.err.println("ardea-peer-storm: " + t);
            t.printStackTrace(System.err);
            code = 1;
        }
        exit(code);
    }

    private static LocalCluster cluster;

    static String run(Args a) throws Exception {
        String[] lines = readCorpus(a.corpus);
        long expected = 0;
        if (a.sentences > 0) {
            int[] wordsIn = new int[lines.length];
            for (int i = 0; i < lines.length; i++) {
                wordsIn[i] = words(lines[i]);
            }
            for (long seq = 1; seq <= a.sentences; seq++) {
                expected += wordsIn[sentenceIndex(seq, lines.length)];
            }
        }

        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout(SPOUT, new SentenceSpout(lines, a.sentences), 1);
        builder.setBolt(SPLIT, new SplitBolt(), a.splits).shuffleGrouping(SPOUT);
        builder.setBolt(COUNT, new CountBolt(), a.counts).fieldsGrouping(SPLIT, new Fields("word"));

        // One supervisor with one slot: the one worker, run in this JVM.
        cluster = new LocalCluster.Builder().withSupervisors(1).withPortsPerSupervisor(1).build();
        cluster.submitTopology(TOPOLOGY, topologyConfig(a.sentences > 0), builder.createTopology());

        String json;
        if (a.sentences > 0) {
            json = finite(a, expected);
        } else {
            json = timed(a);
        }
        killTopology();
        return json;
    }

    static void killTopology() {
        try {
            KillOptions now = new KillOptions();
            now.set_wait_secs(0);
            cluster.killTopologyWithOpts(TOPOLOGY, now);
        } catch (Exception e) {
            System.err.println("ardea-peer-storm: killing the topology: " + e);
        }
    }

    /** Waits for the first counted words (the topology's start), at most 3 minutes. */
    static void awaitFlow() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(3);
        while (COUNTED.sum() == 0) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no word counted 3 minutes after the topology's submission");
            }
            Thread.sleep(20);
        }
    }

    static String timed(Args a) throws InterruptedException {
        awaitFlow();
        sleepSeconds(a.warmup);
        long t0 = System.nanoTime();
        long c0 = COUNTED.sum();
        sleepSeconds(a.seconds);
        long c1 = COUNTED.sum();
        long t1 = System.nanoTime();
        long words = c1 - c0;
        double secs = (t1 - t0) / 1e9;
        return String.format(Locale.ROOT,
                "{\"engine\":\"%s\",\"version\":\"%s\",\"words_per_sec\":%d,\"words\":%d,\"seconds\":%.3f}",
                ENGINE, stormVersion(), Math.round(words / secs), words, secs);
    }

    static String finite(Args a, long expected) throws Exception {
        awaitFlow();
        // Done once the total is the corpus' word count for those sentences
        // and has stayed so for half a second; a total that stops short for
        // a minute (or passes it) is a failure.
        long last = -1;
        long since = System.nanoTime();
        while (true) {
            long now = System.nanoTime();
            long c = COUNTED.sum();
            if (c > expected) {
                throw new IllegalStateException("counted " + c + " words, the sentences have " + expected);
            }
            if (c != last) {
                last = c;
                since = now;
            } else if (c == expected && now - since >= TimeUnit.MILLISECONDS.toNanos(500)) {
                break;
            } else if (now - since >= TimeUnit.SECONDS.toNanos(60)) {
                throw new IllegalStateException("counted " + c + " words of " + expected + ", none more for 60 s");
            }
            Thread.sleep(20);
        }
        Map<String, Long> merged = new HashMap<>();
        long words = 0;
        if (TASK_COUNTS.size() != a.counts) {
            throw new IllegalStateException(TASK_COUNTS.size() + " count tasks reported, want " + a.counts);
        }
        for (Map<String, long[]> task : TASK_COUNTS.values()) {
            for (Map.Entry<String, long[]> e : task.entrySet()) {
                if (merged.put(e.getKey(), e.getValue()[0]) != null) {
                    throw new IllegalStateException("word " + e.getKey() + " counted by two tasks");
                }
                words += e.getValue()[0];
            }
        }
        if (words != expected) {
            throw new IllegalStateException("the maps hold " + words + " words, the sentences have " + expected);
        }
        return String.format(Locale.ROOT,
                "{\"engine\":\"%s\",\"version\":\"%s\",\"words\":%d,\"distinct\":%d,\"sha256\":\"%s\"}",
                ENGINE, stormVersion(), words, merged.size(), digest(merged));
    }

    /** SHA-256 (hex) of the sorted "word\tcount\n" lines, sorted by their UTF-8 bytes. */
    static String digest(Map<String, Long> counts) throws Exception {
        List<byte[]> lines = new ArrayList<>(counts.size());
        for (Map.Entry<String, Long> e : counts.entrySet()) {
            lines.add((e.getKey() + "\t" + e.getValue() + "\n").getBytes(StandardCharsets.UTF_8));
        }
        lines.sort(Arrays::compareUnsigned);
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        for (byte[] l : lines) {
            sha.update(l);
        }
        StringBuilder hex = new StringBuilder(64);
        for (byte b : sha.digest()) {
            hex.append(String.format("%02x", b & 0xff));
        }
        return hex.toString();
    }

    /** The words in a sentence, as SplitBolt splits it. */
    static int words(String s) {
        int n = 0;
        int i = 0;
        while (i < s.length()) {
            int j = s.indexOf(' ', i);
            if (j < 0) {
                j = s.length();
            }
            if (j > i) {
                n++;
            }
            i = j + 1;
        }
        return n;
    }

    static String[] readCorpus(String path) throws IOException {
        List<String> lines = Files.readAllLines(Path.of(path), StandardCharsets.UTF_8);
        if (lines.isEmpty()) {
            throw new IllegalArgumentException("corpus " + path + " has no lines");
        }
        return lines.toArray(new String[0]);
    }

    static void sleepSeconds(double s) throws InterruptedException {
        long ns = (long) (s * 1e9);
        long end = System.nanoTime() + ns;
        long left;
        while ((left = end - System.nanoTime()) > 0) {
            TimeUnit.NANOSECONDS.sleep(left);
        }
    }

    /** The Storm on the classpath (storm-client's version file), else the one the pom names. */
    static String stormVersion() {
        try {
            String v = VersionInfo.getVersion();
            if (v != null && !v.isEmpty() && !v.equalsIgnoreCase("unknown")) {
                return v;
            }
        } catch (Throwable ignored) {
            // fall back below
        }
        try (InputStream in = Main.class.getResourceAsStream("/ardea-peer-storm.properties")) {
            Properties p = new Properties();
            if (in != null) {
                p.load(in);
            }
            return p.getProperty("storm.version", "unknown");
        } catch (IOException e) {
            return "unknown";
        }
    }

    /**
     * Shuts the LocalCluster down and exits. A LocalCluster leaves threads
     * behind, and its shutdown can hang, so a watchdog halts the JVM with
     * the same code if shutting down takes over 20 seconds.
     */
    static void exit(int code) {
        System.out.flush();
        System.err.flush();
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(20_000);
            } catch (InterruptedException ignored) {
                // halt anyway
            }
            System.err.println("ardea-peer-storm: shutdown took over 20 s, halting");
            Runtime.getRuntime().halt(code);
        }, "ardea-exit-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
        if (cluster != null) {
            try {
                cluster.close();
            } catch (Throwable t) {
                System.err.println("ardea-peer-storm: shutting the cluster down: " + t);
            }
        }
        System.exit(code);
    }
}
