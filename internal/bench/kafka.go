package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// KafkaOptions configures the Kafka benchmark.
type KafkaOptions struct {
	Brokers  string // seed brokers of the broker under test
	Records  int    // default 500,000
	Size     int    // value bytes (default 100)
	CacheDir string
}

// KafkaResult is what `ardea bench kafka --json` prints: records/s from a
// Kafka topic through one WebAssembly bolt back to Kafka, beside a plain
// franz-go consume-produce loop over the same input in the same run.
type KafkaResult struct {
	Records          int     `json:"records"`
	ValueBytes       int     `json:"value_bytes"`
	BaselinePerSec   float64 `json:"franz_go_loop_records_per_sec"`
	ArdeaPerSec      float64 `json:"ardea_records_per_sec"`
	Ratio            float64 `json:"ratio"`
	ArdeaStartupSecs float64 `json:"ardea_startup_secs"`
	CPUs             int     `json:"cpus"`
}

// boltModule is the one bolt: the Rust word-count split (each value here
// is one word, so one tuple out per record; it acks its input). The
// benchmark runs from the source tree.
func boltModule() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "examples", "wordcount", "rust", "split.wasm")
}

// Kafka fills a topic with Records records, copies it to another topic
// with a plain franz-go loop, then with Ardea (builtin:kafka -> the Rust split
// -> builtin:kafka, at least once), and times both until the output topic
// holds every record.
func Kafka(ctx context.Context, o KafkaOptions) (*KafkaResult, error) {
	if o.Records <= 0 {
		o.Records = 500_000
	}
	if o.Size <= 0 {
		o.Size = 100
	}
	seeds := kgo.SeedBrokers(strings.Split(o.Brokers, ",")...)
	cl, err := kgo.NewClient(seeds, kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	run := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	in, outBase, outArdea := run+"-in", run+"-base", run+"-ardea"
	if _, err := adm.CreateTopics(ctx, 3, 1, nil, in, outBase, outArdea); err != nil {
		return nil, fmt.Errorf("create topics: %w", err)
	}
	value := []byte(strings.Repeat("x", o.Size))
	for i := 0; i < o.Records; i += 10_000 {
		recs := make([]*kgo.Record, 0, 10_000)
		for range min(10_000, o.Records-i) {
			recs = append(recs, &kgo.Record{Topic: in, Value: value})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return nil, fmt.Errorf("fill %s: %w", in, err)
		}
	}
	res := &KafkaResult{Records: o.Records, ValueBytes: o.Size, CPUs: runtime.NumCPU()}

	// Baseline: consume, produce, commit.
	start := time.Now()
	if err := copyLoop(ctx, seeds, in, outBase, o.Records); err != nil {
		return nil, fmt.Errorf("franz-go loop: %w", err)
	}
	res.BaselinePerSec = float64(o.Records) / time.Since(start).Seconds()

	yaml := fmt.Sprintf(`name: kafkabench
config: {topology.reliability: at_least_once, topology.max.spout.pending: "20000"}
spouts:
  - name: in
    module: builtin:kafka
    config: {brokers: "%[1]s", topics: %[2]s, group: %[2]s-ardea}
bolts:
  - name: split
    module: %[3]s
    inputs: [{from: in}]
    outputs: {default: [word]}
  - name: out
    module: builtin:kafka
    config: {brokers: "%[1]s", topic: %[4]s, value_field: word}
    inputs: [{from: split}]
`, o.Brokers, in, boltModule(), outArdea)
	top, err := ardea.Parse([]byte(yaml), "", "kafkabench.yaml")
	if err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	start = time.Now()
	go func() {
		_, err := daemon.Run(runCtx, daemon.RunOptions{Topology: top, CacheDir: o.CacheDir})
		done <- err
	}()
	var first time.Time
	for {
		ends, err := adm.ListEndOffsets(ctx, outArdea)
		if err != nil {
			return nil, err
		}
		var n int64
		ends.Each(func(l kadm.ListedOffset) { n += l.Offset })
		if n > 0 && first.IsZero() {
			first = time.Now()
		}
		if n >= int64(o.Records) {
			break
		}
		select {
		case err := <-done:
			return nil, fmt.Errorf("the topology stopped after %d of %d records: %v", n, o.Records, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	res.ArdeaPerSec = float64(o.Records) / time.Since(start).Seconds()
	res.ArdeaStartupSecs = first.Sub(start).Seconds()
	res.Ratio = res.ArdeaPerSec / res.BaselinePerSec
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		return nil, err
	}
	return res, nil
}

// copyLoop is the plain franz-go consume-produce loop: poll, produce the
// batch, wait, commit.
func copyLoop(ctx context.Context, seeds kgo.Opt, in, out string, n int) error {
	cl, err := kgo.NewClient(seeds, kgo.ConsumerGroup(in+"-base"), kgo.ConsumeTopics(in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	copied := 0
	for copied < n {
		fs := cl.PollRecords(ctx, 10_000)
		if err := fs.Err0(); err != nil {
			return err
		}
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, &kgo.Record{Topic: out, Value: r.Value}) })
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return err
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			return err
		}
		copied += len(recs)
	}
	return nil
}
