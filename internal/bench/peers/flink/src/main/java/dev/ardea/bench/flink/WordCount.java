package dev.ardea.bench.flink;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichFlatMapFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.util.EnvironmentInformation;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

/**
 * Ardea's word count on Apache Flink: the Flink peer of {@code ardea bench peers}
 * (internal/bench/peers/README.md is the contract this program follows).
 *
 * <p>The job: one source task (Flink's sequence source, {@code fromSequence(1, N)}, mapped to
 * sentences) whose seq-th sentence is the corpus line the generator spout picks
 * (splitmix64(seq) mod lines, seq from 1), chained with the split
 * (FlatMap to words), then {@code keyBy(word)} over the network to the count tasks, each a
 * map from word to count. It runs on a MiniCluster in this JVM with two task managers of
 * one slot each, so one of the count tasks reads its words from the other task manager
 * through Flink's network stack (Netty, credit-based flow control), the other through a
 * local channel, as on a two-machine cluster.
 *
 * <p>Timed run: the count tasks add what they counted to {@link #WORDS} (one LongAdder
 * for the JVM, which the MiniCluster shares, added to every {@value #FLUSH} words so it is
 * no bottleneck); the main thread samples it after the warm-up and after the measured
 * seconds, cancels the job and prints one JSON line. Finite run: the source is bounded
 * (N sentences), each count task merges its map into {@link #FINAL} when it closes at the
 * end of its input, and once the job has finished the main thread prints the digest.
 */
public final class WordCount {

  static final String ENGINE = "flink";
  /** The version this runner is built against (pom.xml); the running Flink's if it knows. */
  static final String FLINK_VERSION = "2.3.0";
  /** Words a count task counts before it adds them to {@link #WORDS}. */
  static final int FLUSH = 1024;

  /** Words counted by all count tasks of this JVM (the MiniCluster runs here). */
  static final LongAdder WORDS = new LongAdder();
  /** The count tasks' final maps, merged as each task closes (finite runs). */
  static final ConcurrentHashMap<String, Long> FINAL = new ConcurrentHashMap<>();

  private WordCount() {}

  public static void main(String[] args) {
    int code;
    try {
      code = run(Options.parse(args), System.out);
    } catch (UsageException e) {
      System.err.println("ardea-peer-flink: " + e.getMessage());
      System.err.println(Options.USAGE);
      code = 2;
    } catch (Throwable e) {
      System.err.println("ardea-peer-flink: " + e);
      e.printStackTrace(System.err);
      code = 1;
    }
    System.out.flush();
    System.err.flush();
    // The MiniCluster's threads (RPC, Netty, metrics) are not all daemons; exit
    // rather than wait for every one of them.
    System.exit(code);
  }

  static int run(Options o, PrintStream out) throws Exception {
    String[] corpus = readCorpus(o.corpus);

    StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(config(o));
    // The job's own parallelism is set per operator below.
    env.setParallelism(o.counts);

    long sentences = o.sentences > 0 ? o.sentences : Long.MAX_VALUE;
    DataStream<String> lines;
    if (o.source.equals("generator")) {
      // DataGeneratorSource with a GeneratorFunction: Flink's data generator. Not the
      // default: its reader is wrapped in a RateLimitedSourceReader even without a rate
      // limit, which answers NOTHING_AVAILABLE after every record and makes the source
      // task go through a fresh availability future per sentence. On 2 cores it ran at
      // 8.3 to 10.3 M words/s against 10.1 to 10.8 M for the sequence source (README.md).
      DataGeneratorSource<String> source =
          new DataGeneratorSource<>(new Sentences(corpus), sentences, Types.STRING);
      lines =
          env.fromSource(source, WatermarkStrategy.noWatermarks(), "sentences").setParallelism(1);
    } else {
      // fromSequence: the new-Source-API NumberSequenceSource (seq = 1, 2, ..., N, or
      // Long.MAX_VALUE for a timed run), its reader emitting while records remain,
      // chained with the map to the sentence and with the split.
      lines =
          env.fromSequence(1, sentences)
              .setParallelism(1)
              .name("seq")
              .map(new Sentence(corpus))
              .setParallelism(1)
              .name("sentences");
    }

    lines
        .flatMap(new Split())
        .setParallelism(o.splits)
        .name("split")
        .keyBy(word -> word, Types.STRING)
        .flatMap(new Count())
        .returns(Types.VOID)
        .setParallelism(o.counts)
        .name("count")
        .sinkTo(new DiscardingSink<>())
        .setParallelism(o.counts)
        .name("none");

    JobClient job = env.executeAsync("ardea-wordcount");
    if (o.sentences > 0) {
      return finite(job, out);
    }
    return timed(o, job, out);
  }

  /**
   * The MiniCluster's and the job's settings: as a Flink user tunes a throughput job that
   * needs no fault tolerance.
   */
  static Configuration config(Options o) {
    Configuration conf = new Configuration();
    // Two task managers; one slot each unless the job's widest operator needs more
    // (all operators share a slot group, so a slot holds one subtask of each).
    conf.set(TaskManagerOptions.MINI_CLUSTER_NUM_TASK_MANAGERS, 2);
    conf.set(TaskManagerOptions.NUM_TASK_SLOTS, (Math.max(o.splits, o.counts) + 1) / 2);
    // Streaming mode for the finite run too: a bounded source in BATCH mode would
    // sort the words by key and count them stage by stage, another job than this.
    conf.set(ExecutionOptions.RUNTIME_MODE, RuntimeExecutionMode.STREAMING);
    // Object reuse: chained operators hand records over without the defensive copy
    // (Flink's first throughput advice; safe here, no function keeps its input).
    conf.set(PipelineOptions.OBJECT_REUSE, true);
    // Network buffers are shipped when full, not every 100 ms nor on a timer: the
    // setting Flink documents for maximum throughput. The segment size (32 KiB) and
    // the buffers per channel and gate stay Flink's defaults; buffer debloating
    // (off by default) tunes checkpoint alignment, which this job does not do.
    conf.set(ExecutionOptions.BUFFER_TIMEOUT_ENABLED, false);
    // No watermarks are used: no periodic watermark timer either.
    conf.set(PipelineOptions.AUTO_WATERMARK_INTERVAL, Duration.ZERO);
    // At most once: no checkpoints (none is configured) and no restarts.
    conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
    // -Dflink.KEY=VALUE sets Flink's KEY over the above, to try another tuning.
    Map<String, String> overrides = new HashMap<>();
    for (String name : System.getProperties().stringPropertyNames()) {
      if (name.startsWith("flink.")) {
        overrides.put(name.substring("flink.".length()), System.getProperty(name));
      }
    }
    conf.addAll(Configuration.fromMap(overrides));
    return conf;
  }

  static int timed(Options o, JobClient job, PrintStream out) throws Exception {
    long start = System.nanoTime();
    while (WORDS.sum() == 0) {
      JobStatus status = job.getJobStatus().get();
      if (status.isGloballyTerminalState()) {
        job.getJobExecutionResult().get(); // throws the failure's cause
        throw new IllegalStateException("the job ended (" + status + ") before counting a word");
      }
      if (System.nanoTime() - start > TimeUnit.SECONDS.toNanos(120)) {
        throw new IllegalStateException("no word counted after 120 s (job " + status + ")");
      }
      Thread.sleep(5);
    }
    sleep(o.warmup);
    long c0 = cpuNanos();
    long w0 = WORDS.sum();
    long t0 = System.nanoTime();
    sleep(o.seconds);
    long w1 = WORDS.sum();
    long t1 = System.nanoTime();
    long c1 = cpuNanos();
    JobStatus status = job.getJobStatus().get();
    if (status != JobStatus.RUNNING) {
      throw new IllegalStateException("the job is " + status + " at the end of the measurement");
    }
    job.cancel().get(60, TimeUnit.SECONDS);
    try {
      // Completes (exceptionally: cancelled) once the job is gone; the local
      // executor's MiniCluster then shuts itself down.
      job.getJobExecutionResult().get(60, TimeUnit.SECONDS);
    } catch (ExecutionException expected) {
      // the cancellation
    }

    long words = w1 - w0;
    double seconds = (t1 - t0) / 1e9;
    if (c0 >= 0 && c1 >= c0) {
      // A diagnostic on stderr: the JVM's CPU time over the measured seconds, which
      // tells a CPU-bound run from one that other processes starved.
      double cpu = (c1 - c0) / 1e9;
      System.err.printf(
          Locale.ROOT,
          "ardea-peer-flink: %.2f CPU seconds in %.3f s, %.0f words per CPU second%n",
          cpu,
          seconds,
          words / cpu);
    }
    out.printf(
        Locale.ROOT,
        "{\"engine\":\"%s\",\"version\":\"%s\",\"words_per_sec\":%d,\"words\":%d,\"seconds\":%.3f}%n",
        ENGINE,
        version(),
        Math.round(words / seconds),
        words,
        seconds);
    return 0;
  }

  static int finite(JobClient job, PrintStream out) throws Exception {
    job.getJobExecutionResult().get(); // throws if the job failed
    long words = 0;
    for (long c : FINAL.values()) {
      words += c;
    }
    if (words != WORDS.sum()) {
      throw new IllegalStateException(
          "the final maps hold " + words + " words, the count tasks counted " + WORDS.sum());
    }
    out.printf(
        Locale.ROOT,
        "{\"engine\":\"%s\",\"version\":\"%s\",\"words\":%d,\"distinct\":%d,\"sha256\":\"%s\"}%n",
        ENGINE,
        version(),
        words,
        FINAL.size(),
        digest(FINAL));
    return 0;
  }

  /**
   * The SHA-256 (hex) of the counts as "word\tcount\n" lines sorted by their UTF-8 bytes
   * (peers.CountsDigest).
   */
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
    return HexFormat.of().formatHex(sha.digest());
  }

  /** The JVM's CPU time in nanoseconds, or -1 where the JVM does not tell. */
  static long cpuNanos() {
    if (ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.OperatingSystemMXBean os) {
      return os.getProcessCpuTime();
    }
    return -1;
  }

  static String version() {
    String v = EnvironmentInformation.getVersion();
    return v == null || v.isEmpty() || v.startsWith("<") ? FLINK_VERSION : v;
  }

  static String[] readCorpus(String path) throws IOException {
    List<String> lines = new ArrayList<>();
    for (String l : Files.readAllLines(Path.of(path), StandardCharsets.UTF_8)) {
      if (!l.isEmpty()) {
        lines.add(l);
      }
    }
    if (lines.isEmpty()) {
      throw new IOException(path + " has no sentences");
    }
    return lines.toArray(new String[0]);
  }

  static void sleep(double seconds) throws InterruptedException {
    long nanos = (long) (seconds * 1e9);
    long end = System.nanoTime() + nanos;
    for (long left = nanos; left > 0; left = end - System.nanoTime()) {
      TimeUnit.NANOSECONDS.sleep(left);
    }
  }

  /**
   * splitmix64 of seq with base 0, mod the corpus's lines: the generator spout's choice of
   * its seq-th sentence (connectors.sentenceIndex), in Java's wrapping 64-bit arithmetic.
   */
  static int sentenceIndex(long seq, int lines) {
    long z = seq * 0xBF58476D1CE4E5B9L; // base*0x9E3779B97F4A7C15 with base 0
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    z ^= z >>> 31;
    return (int) Long.remainderUnsigned(z, lines);
  }

  /**
   * The source's generator: DataGeneratorSource numbers its elements from 0, the
   * contract's seq starts at 1.
   */
  static final class Sentences implements GeneratorFunction<Long, String> {
    private static final long serialVersionUID = 1L;
    private final String[] corpus;

    Sentences(String[] corpus) {
      this.corpus = corpus;
    }

    @Override
    public String map(Long index) {
      return corpus[sentenceIndex(index + 1, corpus.length)];
    }
  }

  /** The source's sequence number (from 1) to its sentence. */
  static final class Sentence implements MapFunction<Long, String> {
    private static final long serialVersionUID = 1L;
    private final String[] corpus;

    Sentence(String[] corpus) {
      this.corpus = corpus;
    }

    @Override
    public String map(Long seq) {
      return corpus[sentenceIndex(seq, corpus.length)];
    }
  }

  /** The split: a sentence's words, separated by spaces (runs of them, as strings.Fields). */
  static final class Split implements FlatMapFunction<String, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public void flatMap(String sentence, Collector<String> out) {
      int n = sentence.length();
      int i = 0;
      while (i < n) {
        while (i < n && sentence.charAt(i) == ' ') {
          i++;
        }
        int j = i;
        while (j < n && sentence.charAt(j) != ' ') {
          j++;
        }
        if (j > i) {
          out.collect(sentence.substring(i, j));
        }
        i = j;
      }
    }
  }

  /**
   * The count: after {@code keyBy(word)}, a plain HashMap from word to a mutable counter in
   * each count task, emitting nothing.
   *
   * <p>Why not keyed ValueState: the job runs at most once without checkpoints, so Flink's
   * state would buy nothing but costs per word a second hash lookup in the state backend's
   * table (on top of the key-group assignment every keyed operator does), a boxed Long and
   * a put. The plain map is what a Flink user writes for a count that is never
   * checkpointed, and it is the faster of the two: on 2 cores, 10.3 and 10.6 M words/s
   * against 8.5 and 8.4 M with a ValueState&lt;Long&gt; (heap state backend), run for run.
   *
   * <p>The words travel as bare Strings, not Tuple2&lt;String, Long&gt;: the 1 in each
   * tuple would be serialized and shipped for nothing, since the count adds one per word
   * it receives.
   */
  static final class Count extends RichFlatMapFunction<String, Void> {
    private static final long serialVersionUID = 1L;
    private transient HashMap<String, Counter> counts;
    private transient int unflushed;

    @Override
    public void open(OpenContext context) {
      counts = new HashMap<>(1024);
      unflushed = 0;
    }

    @Override
    public void flatMap(String word, Collector<Void> out) {
      Counter c = counts.get(word);
      if (c == null) {
        c = new Counter();
        counts.put(word, c);
      }
      c.n++;
      if (++unflushed == FLUSH) {
        WORDS.add(FLUSH);
        unflushed = 0;
      }
    }

    @Override
    public void close() {
      if (counts == null) {
        return;
      }
      WORDS.add(unflushed);
      unflushed = 0;
      for (Map.Entry<String, Counter> e : counts.entrySet()) {
        FINAL.merge(e.getKey(), e.getValue().n, Long::sum);
      }
    }
  }

  static final class Counter {
    long n;
  }

  static final class UsageException extends Exception {
    private static final long serialVersionUID = 1L;

    UsageException(String message) {
      super(message);
    }
  }

  /** The runners' flags (internal/bench/peers/README.md). */
  static final class Options {
    static final String USAGE =
        "usage: java -jar ardea-peer-flink.jar --corpus FILE [--splits N] [--counts N]"
            + " [--seconds S] [--warmup S] [--sentences N] [--source sequence|generator]";

    String corpus;
    int splits = 1;
    int counts = 2;
    double seconds = 10;
    double warmup = 2;
    long sentences;
    String source = "sequence";

    static Options parse(String[] args) throws UsageException {
      Options o = new Options();
      for (int i = 0; i < args.length; i++) {
        String a = args[i];
        String name;
        String value;
        int eq = a.indexOf('=');
        if (a.startsWith("--") && eq > 0) {
          name = a.substring(2, eq);
          value = a.substring(eq + 1);
        } else if (a.startsWith("--")) {
          name = a.substring(2);
          if (i + 1 >= args.length) {
            throw new UsageException("flag " + a + " needs a value");
          }
          value = args[++i];
        } else {
          throw new UsageException("unexpected argument " + a);
        }
        try {
          switch (name) {
            case "corpus" -> o.corpus = value;
            case "splits" -> o.splits = Integer.parseInt(value);
            case "counts" -> o.counts = Integer.parseInt(value);
            case "seconds" -> o.seconds = Double.parseDouble(value);
            case "warmup" -> o.warmup = Double.parseDouble(value);
            case "sentences" -> o.sentences = Long.parseLong(value);
            case "source" -> o.source = value;
            default -> throw new UsageException("unknown flag --" + name);
          }
        } catch (NumberFormatException e) {
          throw new UsageException("--" + name + ": not a number: " + value);
        }
      }
      if (o.corpus == null) {
        throw new UsageException("--corpus is required");
      }
      if (o.splits < 1 || o.counts < 1) {
        throw new UsageException("--splits and --counts must be at least 1");
      }
      if (!(o.seconds > 0) || !(o.warmup >= 0)) {
        throw new UsageException("--seconds must be positive and --warmup not negative");
      }
      if (!o.source.equals("sequence") && !o.source.equals("generator")) {
        throw new UsageException("--source is sequence (the default) or generator");
      }
      if (o.sentences < 0) {
        throw new UsageException("--sentences must not be negative");
      }
      return o;
    }
  }
}
