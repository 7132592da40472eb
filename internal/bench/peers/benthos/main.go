// Command benthos is the Benthos v4 runner of Ardea's peers' word count
// (../README.md: the runners' contract). One stream, built in process
// with the public service API in an isolated environment:
//
//	input    ardea_sentences  one reader: batches of batchSize sentences,
//	                          seq 1, 2, ... (the generator spout's choice)
//	pipeline threads: --splits, processor ardea_split: each sentence
//	                          batch into one batch of word messages
//	output   ardea_count      hashes each word to one of --counts
//	                          goroutine-owned maps fed by channels
//
// It is a module of its own so that Ardea's main module does not link
// Benthos; it imports nothing from the main module.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/maphash"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	// The "none" metrics exporter and tracer the stream builder defaults
	// to are registered by the pure components.
	_ "github.com/redpanda-data/benthos/v4/public/components/pure"
	"github.com/redpanda-data/benthos/v4/public/service"
)

const (
	engine  = "benthos"
	version = "4.60.0" // the go.mod requirement

	// batchSize is the input's batch: 1024 sentences (about 9,000 words)
	// a ReadBatch, the unit every later stage handles at once.
	batchSize = 1024
	// shardQueue is each count task's channel capacity, in sub-batches.
	shardQueue = 64
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benthos runner:", err)
		os.Exit(1)
	}
}

func run() error {
	corpusPath := flag.String("corpus", "", "the sentences, one per line")
	splits := flag.Int("splits", 1, "split tasks (the pipeline's threads)")
	counts := flag.Int("counts", 2, "count tasks (goroutine-owned maps)")
	seconds := flag.Float64("seconds", 10, "measured seconds")
	warmup := flag.Float64("warmup", 2, "seconds run before the measurement starts")
	sentences := flag.Uint64("sentences", 0, "finite run: the source emits this many sentences, then the run ends")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	if *corpusPath == "" {
		return errors.New("--corpus is required")
	}
	if *splits < 1 || *counts < 1 {
		return fmt.Errorf("--splits %d and --counts %d must be at least 1", *splits, *counts)
	}
	if *seconds <= 0 || *warmup < 0 {
		return fmt.Errorf("--seconds %v must be positive and --warmup %v not negative", *seconds, *warmup)
	}
	lines, err := readCorpus(*corpusPath)
	if err != nil {
		return err
	}

	sink := newCountSink(*counts)
	strm, err := buildStream(lines, *sentences, *splits, sink)
	if err != nil {
		return fmt.Errorf("building the stream: %w", err)
	}

	if *sentences > 0 {
		// Finite: the input ends after N sentences (ErrEndOfInput), the
		// stream drains and Run returns; then every word is in a map once
		// the count tasks have emptied their channels.
		if err := strm.Run(context.Background()); err != nil {
			return fmt.Errorf("running the stream: %w", err)
		}
		final := sink.drain()
		var words int64
		for _, c := range final {
			words += c
		}
		return printJSON(struct {
			Engine   string `json:"engine"`
			Version  string `json:"version"`
			Words    int64  `json:"words"`
			Distinct int    `json:"distinct"`
			SHA256   string `json:"sha256"`
		}{engine, version, words, len(final), countsDigest(final)})
	}

	// Timed: measure the words the count tasks count between the end of
	// the warm-up and the end of the measured seconds.
	runErr := make(chan error, 1)
	go func() { runErr <- strm.Run(context.Background()) }()
	for sink.counted.Load() == 0 {
		select {
		case err := <-runErr:
			return fmt.Errorf("the stream stopped before any word was counted: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	time.Sleep(time.Duration(*warmup * float64(time.Second)))
	w0, t0 := sink.counted.Load(), time.Now()
	time.Sleep(time.Duration(*seconds * float64(time.Second)))
	w1, t1 := sink.counted.Load(), time.Now()
	if err := strm.StopWithin(10 * time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "benthos runner: stopping the stream:", err)
	}
	select {
	case err := <-runErr:
		if err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "benthos runner: the stream's run ended with:", err)
		}
	case <-time.After(10 * time.Second):
		fmt.Fprintln(os.Stderr, "benthos runner: the stream's run did not return within 10 s of the stop")
	}
	el := t1.Sub(t0).Seconds()
	words := w1 - w0
	return printJSON(struct {
		Engine      string  `json:"engine"`
		Version     string  `json:"version"`
		WordsPerSec int64   `json:"words_per_sec"`
		Words       int64   `json:"words"`
		Seconds     float64 `json:"seconds"`
	}{engine, version, int64(float64(words)/el + 0.5), words, float64(int64(el*1000+0.5)) / 1000})
}

// buildStream registers the three plugins in an isolated environment
// (service.NewEnvironment: a copy of the global one, which stays
// untouched) and builds the stream from YAML, as a Benthos user would.
func buildStream(lines [][]byte, sentences uint64, splits int, sink *countSink) (*service.Stream, error) {
	env := service.NewEnvironment()

	err := env.RegisterBatchInput("ardea_sentences",
		service.NewConfigSpec().
			Summary("The generator spout's sentences, in its order (seq 1, 2, ...), in batches.").
			Field(service.NewIntField("sentences").Default(0).Description("Sentences before the input ends; 0: unbounded.")).
			Field(service.NewIntField("batch_size").Default(batchSize)),
		func(conf *service.ParsedConfig, _ *service.Resources) (service.BatchInput, error) {
			n, err := conf.FieldInt("sentences")
			if err != nil {
				return nil, err
			}
			b, err := conf.FieldInt("batch_size")
			if err != nil {
				return nil, err
			}
			if n < 0 || b < 1 {
				return nil, fmt.Errorf("sentences %d must not be negative and batch_size %d positive", n, b)
			}
			return &sentenceInput{lines: lines, n: uint64(n), batch: uint64(b)}, nil
		})
	if err != nil {
		return nil, err
	}

	err = env.RegisterBatchProcessor("ardea_split",
		service.NewConfigSpec().Summary("Splits each sentence into one message per word (separated by spaces)."),
		func(*service.ParsedConfig, *service.Resources) (service.BatchProcessor, error) {
			return splitProcessor{}, nil
		})
	if err != nil {
		return nil, err
	}

	err = env.RegisterBatchOutput("ardea_count",
		service.NewConfigSpec().
			Summary("Counts words by key over the runner's count tasks.").
			Field(service.NewOutputMaxInFlightField()),
		func(conf *service.ParsedConfig, _ *service.Resources) (service.BatchOutput, service.BatchPolicy, int, error) {
			mif, err := conf.FieldMaxInFlight()
			if err != nil {
				return nil, service.BatchPolicy{}, 0, err
			}
			// No batch policy: the pipeline's word batches are written as
			// they come.
			return sink, service.BatchPolicy{}, mif, nil
		})
	if err != nil {
		return nil, err
	}

	b := env.NewStreamBuilder()
	// max_in_flight = --splits: one WriteBatch in flight per pipeline
	// thread; a write only hands the words to the count tasks' channels.
	yaml := fmt.Sprintf(`
input:
  ardea_sentences:
    sentences: %d
    batch_size: %d
pipeline:
  threads: %d
  processors:
    - ardea_split: {}
output:
  ardea_count:
    max_in_flight: %d
logger:
  level: none
metrics:
  none: {}
`, sentences, batchSize, splits, splits)
	if err := b.SetYAML(yaml); err != nil {
		return nil, err
	}
	return b.Build()
}

// sentenceInput is the source task: one reader (Benthos calls ReadBatch
// from one goroutine), at most once: its ack does nothing and it never
// replays (not wrapped in AutoRetryNacksBatched).
type sentenceInput struct {
	lines [][]byte
	n     uint64 // 0: unbounded
	batch uint64
	seq   uint64 // the last sentence emitted
}

func (s *sentenceInput) Connect(context.Context) error { return nil }

func (s *sentenceInput) ReadBatch(ctx context.Context) (service.MessageBatch, service.AckFunc, error) {
	k := s.batch
	if s.n > 0 {
		if s.seq >= s.n {
			return nil, nil, service.ErrEndOfInput
		}
		k = min(k, s.n-s.seq)
	}
	lines := uint64(len(s.lines))
	out := make(service.MessageBatch, k)
	for i := range out {
		s.seq++
		// The corpus line's bytes are shared, never written.
		out[i] = service.NewMessage(s.lines[sentenceIndex(0, s.seq)%lines])
	}
	return out, noAck, nil
}

func (s *sentenceInput) Close(context.Context) error { return nil }

func noAck(context.Context, error) error { return nil }

// sentenceIndex is the generator spout's splitmix64 choice
// (connectors.sentenceIndex without the modulus): the seq-th sentence
// of a source with base seed+task.
func sentenceIndex(base, seq uint64) uint64 {
	z := base*0x9E3779B97F4A7C15 + seq*0xBF58476D1CE4E5B9
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	z ^= z >> 31
	return z
}

// splitProcessor turns a batch of sentences into one batch of words. Word
// messages are shallow copies of their sentence's message (the API's rule
// for a processor's results) whose bytes are the word's slice of the
// sentence's bytes: no copy of the text.
type splitProcessor struct{}

func (splitProcessor) ProcessBatch(_ context.Context, batch service.MessageBatch) ([]service.MessageBatch, error) {
	words := make(service.MessageBatch, 0, len(batch)*10)
	for _, m := range batch {
		b, err := m.AsBytes()
		if err != nil {
			return nil, err
		}
		start := -1
		for i, c := range b {
			if c == ' ' {
				if start >= 0 {
					w := m.Copy()
					w.SetBytes(b[start:i:i])
					words = append(words, w)
					start = -1
				}
			} else if start < 0 {
				start = i
			}
		}
		if start >= 0 {
			w := m.Copy()
			w.SetBytes(b[start:len(b):len(b)])
			words = append(words, w)
		}
	}
	if len(words) == 0 {
		return nil, nil
	}
	return []service.MessageBatch{words}, nil
}

func (splitProcessor) Close(context.Context) error { return nil }

// countSink is the count stage. Benthos has no keyed shuffle between
// pipeline threads, so the output does the keying: WriteBatch hashes each
// word to one of the count tasks and hands each task its sub-batch over a
// channel; each task is a goroutine that owns its map (no locks on the
// maps), counts the sub-batch, then adds its size to counted (one atomic
// add per sub-batch). WriteBatch returns once the words are handed over:
// at most once, nothing waits for the counting.
type countSink struct {
	seed    maphash.Seed
	shards  []chan [][]byte
	maps    []map[string]int64
	wg      sync.WaitGroup
	counted atomic.Int64
}

func newCountSink(n int) *countSink {
	s := &countSink{seed: maphash.MakeSeed(), shards: make([]chan [][]byte, n), maps: make([]map[string]int64, n)}
	for i := range n {
		ch := make(chan [][]byte, shardQueue)
		m := map[string]int64{}
		s.shards[i], s.maps[i] = ch, m
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for words := range ch {
				for _, w := range words {
					m[string(w)]++
				}
				s.counted.Add(int64(len(words)))
			}
		}()
	}
	return s
}

func (s *countSink) Connect(context.Context) error { return nil }

func (s *countSink) WriteBatch(ctx context.Context, batch service.MessageBatch) error {
	n := uint64(len(s.shards))
	parts := make([][][]byte, n)
	for i := range parts {
		parts[i] = make([][]byte, 0, len(batch)/int(n)+len(batch)/8+1)
	}
	for _, m := range batch {
		w, err := m.AsBytes()
		if err != nil {
			return err
		}
		k := maphash.Bytes(s.seed, w) % n
		parts[k] = append(parts[k], w)
	}
	for i, p := range parts {
		if len(p) == 0 {
			continue
		}
		select {
		case s.shards[i] <- p:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Close does nothing: the count tasks outlive the stream, main drains them.
func (s *countSink) Close(context.Context) error { return nil }

// drain ends the count tasks once every write has returned (the stream's
// Run has) and merges their maps (the keys are disjoint).
func (s *countSink) drain() map[string]int64 {
	for _, ch := range s.shards {
		close(ch)
	}
	s.wg.Wait()
	out := map[string]int64{}
	for _, m := range s.maps {
		for w, c := range m {
			out[w] += c
		}
	}
	return out
}

func readCorpus(path string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the corpus: %w", err)
	}
	var lines [][]byte
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		lines = append(lines, []byte(l))
	}
	if len(data) == 0 || len(lines) == 0 {
		return nil, fmt.Errorf("the corpus %s has no lines", path)
	}
	return lines, nil
}

// countsDigest is the SHA-256 (hex) of the sorted "word<TAB>count\n"
// lines (peers.CountsDigest).
func countsDigest(counts map[string]int64) string {
	lines := make([]string, 0, len(counts))
	for w, c := range counts {
		lines = append(lines, fmt.Sprintf("%s\t%d\n", w, c))
	}
	slices.Sort(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func printJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Printf("%s\n", b)
	return err
}
