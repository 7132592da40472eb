//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ardea-dev/ardea/examples/keyed"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// Kafka in, Kafka out, under kill -9: the keyed example's bolts between a
// Kafka spout and a Kafka sink (kfake in the test process; the containers
// reach it over TCP) while a producer keeps writing the input and a random
// container is killed three times. At least once no record is lost;
// effectively once the output topic (read_committed) is exactly a
// fault-free run's.

const kafkaKeys, kafkaPerKey = 200, 250 // 50,000 records

func kafkaKeyedTopology(t *testing.T, brokers, reliability string) string {
	t.Helper()
	yaml := fmt.Sprintf(`name: kk
config:
  topology.reliability: %s
  topology.checkpoint.interval: 300ms
  topology.message.timeout: 3s
  topology.max.spout.pending: 1000
  topology.containers: 3
spouts:
  - name: lines
    module: builtin:kafka
    config: {brokers: "%s", topics: in, group: kk}
bolts:
  - name: parse
    module: %s
    inputs: [{from: lines}]
    outputs: {default: [key, seq]}
  - name: seqstate
    module: %s
    parallelism: 2
    inputs: [{from: parse, grouping: fields, fields: [key]}]
    outputs: {default: [key, seq, count]}
  - name: out
    module: builtin:kafka
    config: {brokers: "%s", topic: out, key_field: key}
    inputs: [{from: seqstate, grouping: fields, fields: [key]}]
`, reliability, brokers, repoPath("examples/keyed/go/parse"), repoPath("examples/keyed/go/seqstate"), brokers)
	p := filepath.Join(t.TempDir(), "kk.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// produceKeyed writes the keyed input to topic in, paced over about ten
// seconds so that kills land while it flows. The last `reserve` chunks
// are held back, in order after the rest, until release is called once
// for each (wait releases what is left and waits for the end): on a slow
// machine the paced part can be used up before the last kill (the
// topology starts late and catches up), and a recovery is only proven by
// new output, so each kill releases fresh input once the topology runs
// again.
func produceKeyed(t *testing.T, cl *kgo.Client, reserve int) (release func(), wait func()) {
	t.Helper()
	in := filepath.Join(t.TempDir(), "input.txt")
	if err := keyed.WriteInput(in, kafkaKeys, kafkaPerKey); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	const chunk = 500
	chunks := (len(lines) + chunk - 1) / chunk
	released := make(chan struct{}, reserve)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for c := 0; c < chunks; c++ {
			if c >= chunks-reserve {
				<-released
			}
			var recs []*kgo.Record
			for _, l := range lines[c*chunk : min((c+1)*chunk, len(lines))] {
				recs = append(recs, &kgo.Record{Topic: "in", Value: []byte(l)})
			}
			if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				t.Errorf("produce the input: %v", err)
				return
			}
			<-tick.C
		}
	}()
	n := 0
	release = func() {
		if n < reserve {
			n++
			released <- struct{}{}
		}
	}
	return release, func() {
		for n < reserve {
			release()
		}
		wg.Wait()
	}
}

// outputReader follows topic out (read_committed) and keeps every record.
type outputReader struct {
	mu     sync.Mutex
	recs   []string
	unique map[string]bool // key:seq
}

func (o *outputReader) count() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return int64(len(o.recs))
}

// distinct is the number of different records (duplicates counted once).
func (o *outputReader) distinct() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.unique)
}

func (o *outputReader) run(ctx context.Context, t *testing.T, brokers string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics("out"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Error(err)
		return
	}
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		o.mu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			o.recs = append(o.recs, string(r.Value))
			var v struct {
				Key string
				Seq int64
			}
			if json.Unmarshal(r.Value, &v) == nil {
				if o.unique == nil {
					o.unique = map[string]bool{}
				}
				o.unique[fmt.Sprintf("%s:%d", v.Key, v.Seq)] = true
			}
		})
		o.mu.Unlock()
	}
}

// tsv writes the records ({"key":..,"seq":..,"count":..}) as the keyed
// example's sink lines, for its checkers.
func (o *outputReader) tsv(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "records.tsv")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	o.mu.Lock()
	for _, r := range o.recs {
		var v struct {
			Key        string
			Seq, Count int64
		}
		if err := json.Unmarshal([]byte(r), &v); err != nil {
			t.Fatalf("output record %q: %v", r, err)
		}
		fmt.Fprintf(w, "%s\t%d\t%d\n", v.Key, v.Seq, v.Count)
	}
	o.mu.Unlock()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

func runKafkaKills(t *testing.T, reliability string, seed uint64) *outputReader {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in"), kfake.SeedTopics(3, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	d := startDaemon(t, t.TempDir())
	d.ok(t, "submit", kafkaKeyedTopology(t, brokers, reliability))
	out := &outputReader{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go out.run(ctx, t, brokers)
	const kills = 3
	release, produced := produceKeyed(t, cl, kills)
	testutil.EventuallyWithin(t, time.Minute, "output", func() (bool, string) { return out.count() > 0, "none yet" })
	r := rand.New(rand.NewPCG(seed, seed+1))
	for k := 1; k <= kills; k++ {
		// The first progress reading is taken once the topology runs
		// again: fresh input then proves it processes.
		first := true
		progress := func() int64 {
			n := out.count()
			if first {
				first = false
				release()
			}
			return n
		}
		rec := killAndRecoverBy(t, d, "kk", progress, r, func(st api.Status) bool {
			c := st.Checkpoints
			return c == nil || c.Rollbacks >= k && !c.RollingBack
		})
		t.Logf("%s: recovery after kill %d: %.2fs", reliability, k, rec.Seconds())
	}
	produced()
	t0 := time.Now()
	const total = kafkaKeys * kafkaPerKey
	testutil.EventuallyWithin(t, 3*time.Minute, "every record in topic out", func() (bool, string) {
		n := out.distinct()
		return n >= total, fmt.Sprintf("%d of %d", n, total)
	})
	t.Logf("%s: every record in topic out after %v", reliability, time.Since(t0))
	if reliability == "effectively_once" {
		// Whatever might still come would be a duplicate: give it a chance.
		d.ok(t, "deactivate", "kk")
	}
	d.ok(t, "kill", "kk")
	return out
}

func TestKafkaAtLeastOnceUnderKills(t *testing.T) {
	testutil.StartsProcesses(t, "ardea host processes and kills them while records flow")
	besideOthers(t)
	out := runKafkaKills(t, "at_least_once", 11)
	dups, err := keyed.CheckAtLeastOnce(out.tsv(t), kafkaKeys, kafkaPerKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Kafka at least once: every record in topic out; %d duplicates", dups)
}

func TestKafkaEffectivelyOnceUnderKills(t *testing.T) {
	testutil.StartsProcesses(t, "ardea host processes and kills them while records flow")
	besideOthers(t)
	out := runKafkaKills(t, "effectively_once", 13)
	if err := keyed.CheckExact(out.tsv(t), kafkaKeys, kafkaPerKey); err != nil {
		t.Fatal(err)
	}
}

// TestKafkaPoisonToDeadLetters: records a bolt fails every time go to the
// dead-letter topic after max_retries, with headers naming their source and
// the instance that failed them, while `ardea run` goes on.
func TestKafkaPoisonToDeadLetters(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "in", "dlq"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics("dlq"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 5 {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "in", Value: fmt.Appendf(nil, "r%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	topo := filepath.Join(t.TempDir(), "poison.yaml")
	yaml := fmt.Sprintf(`name: poison
config: {topology.reliability: at_least_once}
spouts:
  - name: in
    module: builtin:kafka
    config: {brokers: "%s", topics: in, max_retries: "2", dead_letter_topic: dlq}
bolts:
  - name: failing
    module: %s
    inputs: [{from: in}]
`, brokers, repoPath("wasm-sdk/c/testdata/failall.wasm"))
	if err := os.WriteFile(topo, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	// The run goes on until the test has read the dead letters (the
	// duration only guards against a hang): it ends as on Ctrl-C.
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if code, _, stderr := runArdeaContext(ctx, t, "run", topo, "--duration", "2m", "--tolerate-failures"); code != 0 {
			t.Errorf("ardea run: exit %d: %s", code, stderr)
		}
	}()
	defer func() { stop(); <-done }()
	var got []*kgo.Record
	deadline := time.Now().Add(time.Minute)
	for len(got) < 5 && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, r) })
		cancel()
	}
	if len(got) != 5 {
		t.Fatalf("%d dead letters, want 5", len(got))
	}
	for _, r := range got {
		hs := map[string]string{}
		for _, h := range r.Headers {
			hs[h.Key] = string(h.Value)
		}
		if hs["ardea-failures"] != "2" || !strings.HasPrefix(hs["ardea-source"], "in/0/") ||
			!strings.Contains(hs["ardea-error"], "last: failed by failing/0 version ") {
			t.Errorf("dead letter %s: headers %v", r.Value, hs)
		}
	}
	t.Logf("a dead letter's error: %s", func() string {
		for _, h := range got[0].Headers {
			if h.Key == "ardea-error" {
				return string(h.Value)
			}
		}
		return ""
	}())
}
