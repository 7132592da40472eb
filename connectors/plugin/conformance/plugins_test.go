package conformance

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// The tiny plugins the suites are tested with: one of each kind, correct
// when its flaw is "", and with one flaw a suite must catch otherwise
// (conformance_test.go).

// count is a finite spout: the numbers 1..count on stream default.
var countSpec = plugin.Spec{
	Name:    "count",
	Summary: "Emits the numbers 1 to count (finite).",
	Fields: []plugin.Field{
		{Name: "count", Type: plugin.TypeInt, Required: true, Min: "1", Doc: "how many numbers"},
	},
	Outputs: map[string][]string{"default": {"n"}},
}

type countSpout struct {
	flaw    string
	n, next int64
	comp    string
	done    bool
	closed  bool
}

func (s *countSpout) Open(_ context.Context, tc plugin.TaskContext, _ plugin.Collector) error {
	s.comp = tc.Component
	if s.flaw != "accepts any outputs" && (len(tc.Outputs) != 1 || len(tc.Outputs[0].Fields) != 1) {
		return fmt.Errorf("component %q: count emits one field on one stream, the topology declares %v", tc.Component, tc.Outputs)
	}
	return nil
}

func (s *countSpout) Next(_ context.Context, max int, out plugin.Collector) (plugin.Status, error) {
	if s.next >= s.n && s.flaw != "ignores its count" {
		if s.done && s.flaw == "emits after done" {
			return plugin.Done, s.emit(out, 0)
		}
		s.done = true
		return plugin.Done, nil
	}
	if s.flaw == "emits more than asked" {
		max++
	}
	for i := 0; i < max && (s.next < s.n || s.flaw == "ignores its count"); i++ {
		s.next++
		if err := s.emit(out, s.next); err != nil {
			return plugin.Emitted, err
		}
	}
	return plugin.Emitted, nil
}

func (s *countSpout) emit(out plugin.Collector, n int64) error {
	vals := plugin.AppendValues(nil, plugin.Int(n))
	if s.flaw == "emits an undeclared field" {
		vals = plugin.AppendValues(nil, plugin.Int(n), plugin.Str("extra"))
	}
	return out.Emit(0, plugin.NoTask, uint64(n), nil, vals)
}

func (s *countSpout) Ack(context.Context, []uint64, plugin.Collector) error  { return nil }
func (s *countSpout) Fail(context.Context, []uint64, plugin.Collector) error { return nil }
func (s *countSpout) Activate(context.Context) error                         { return nil }
func (s *countSpout) Deactivate(context.Context) error                       { return nil }

func (s *countSpout) Close(context.Context) error {
	if s.closed && s.flaw == "fails a second close" {
		return errors.New("already closed")
	}
	s.closed = true
	return nil
}

// tally is a sink bolt: it counts its input and acks each tracked tuple.
var tallySpec = plugin.Spec{
	Name:    "tally",
	Summary: "Counts its input tuples (a sink).",
	Fields: []plugin.Field{
		{Name: "label", Type: plugin.TypeString, Required: true, Doc: "what the count is called"},
	},
}

type tallyBolt struct {
	flaw   string
	comp   string
	acking bool
	n      int
}

func (b *tallyBolt) Prepare(_ context.Context, tc plugin.TaskContext, _ plugin.Collector) error {
	b.comp, b.acking = tc.Component, tc.Acking
	return nil
}

func (b *tallyBolt) Execute(_ context.Context, batch []byte, out plugin.Collector) error {
	r, err := plugin.NewBatchReader(batch)
	if err != nil {
		if b.flaw == "accepts a malformed batch" {
			return nil
		}
		return fmt.Errorf("component %q: %w", b.comp, err)
	}
	for {
		rec, ok, err := r.Next()
		if err != nil {
			if b.flaw == "accepts a malformed batch" {
				return nil
			}
			return fmt.Errorf("component %q: %w", b.comp, err)
		}
		if !ok {
			return nil
		}
		b.n++
		if b.flaw == "emits without outputs" {
			anchors := binary.LittleEndian.AppendUint64(nil, rec.TupleID)
			if err := out.Emit(0, plugin.NoTask, 0, anchors, plugin.AppendValues(nil, plugin.Int(int64(b.n)))); err != nil {
				return err
			}
		}
		if !b.acking || rec.TupleID == 0 {
			continue
		}
		switch {
		case b.flaw == "loses records" && b.n%3 == 0:
			// neither acked nor failed
		case b.flaw == "acks twice":
			if err := out.Ack(rec.TupleID); err != nil {
				return err
			}
			fallthrough
		default:
			if err := out.Ack(rec.TupleID); err != nil {
				return err
			}
		}
	}
}

func (b *tallyBolt) Tick(context.Context, plugin.Collector) error   { return nil }
func (b *tallyBolt) Finish(context.Context, plugin.Collector) error { return nil }
func (b *tallyBolt) Close(context.Context) error                    { return nil }

// queue is a spout of an in-memory source (queues, by name) with dead
// letters in memory (letters, by name): a record failed max_retries times
// is written there, and Replay puts it back in its queue.
var queueSpec = plugin.Spec{
	Name:    "queue",
	Summary: "Reads an in-memory queue, at least once, with dead letters.",
	Fields: []plugin.Field{
		{Name: "queue", Type: plugin.TypeString, Required: true, Doc: "the queue to read"},
		{Name: "max_retries", Type: plugin.TypeInt, Default: "2", Min: "1", Doc: "failures before a record is a dead letter"},
		{Name: "dead_letter", Type: plugin.TypeString, Doc: "where dead letters go; empty: failed records are retried forever"},
	},
	Outputs: map[string][]string{"default": {"payload"}},
}

// queueDeadLetterSpec is the destination's: the fields of the spout it
// reads.
var queueDeadLetterSpec = plugin.Spec{
	Name:    "queue",
	Summary: "The dead letters of a queue spout, in memory.",
	Fields: []plugin.Field{
		{Name: "queue", Type: plugin.TypeString, Required: true, Doc: "the queue a replay puts records back in"},
		{Name: "dead_letter", Type: plugin.TypeString, Doc: "where the dead letters are"},
	},
}

// memory holds the queues and the dead letters, by name.
var memory = struct {
	sync.Mutex
	queues  map[string][]string
	letters map[string][]api.DeadLetter
}{queues: map[string][]string{}, letters: map[string][]api.DeadLetter{}}

func push(queue string, payloads ...string) {
	memory.Lock()
	defer memory.Unlock()
	memory.queues[queue] = append(memory.queues[queue], payloads...)
}

type queueSpout struct {
	flaw             string
	queue, dead      string
	maxRetries       int
	comp             string
	nextID           uint64
	pending          map[uint64]string
	failures         map[string]int
	retry            []string
	lettersForgotten int
}

func (s *queueSpout) Open(_ context.Context, tc plugin.TaskContext, _ plugin.Collector) error {
	s.comp = tc.Component
	if len(tc.Outputs) != 1 || len(tc.Outputs[0].Fields) != 1 {
		return fmt.Errorf("component %q: queue emits one field on one stream, the topology declares %v", tc.Component, tc.Outputs)
	}
	s.pending, s.failures = map[uint64]string{}, map[string]int{}
	return nil
}

func (s *queueSpout) Next(_ context.Context, max int, out plugin.Collector) (plugin.Status, error) {
	memory.Lock()
	q := memory.queues[s.queue]
	var take []string
	for len(take) < max && len(s.retry) > 0 {
		take, s.retry = append(take, s.retry[0]), s.retry[1:]
	}
	for len(take) < max && len(q) > 0 {
		take, q = append(take, q[0]), q[1:]
	}
	memory.queues[s.queue] = q
	memory.Unlock()
	if len(take) == 0 {
		return plugin.Idle, nil
	}
	for _, p := range take {
		s.nextID++
		s.pending[s.nextID] = p
		if err := out.Emit(0, plugin.NoTask, s.nextID, nil, plugin.AppendValues(nil, plugin.Str(p))); err != nil {
			return plugin.Emitted, err
		}
	}
	return plugin.Emitted, nil
}

func (s *queueSpout) Ack(_ context.Context, ids []uint64, _ plugin.Collector) error {
	for _, id := range ids {
		delete(s.pending, id)
	}
	return nil
}

func (s *queueSpout) Fail(_ context.Context, ids []uint64, _ plugin.Collector) error {
	for _, id := range ids {
		p, ok := s.pending[id]
		if !ok {
			continue
		}
		delete(s.pending, id)
		s.failures[p]++
		if s.dead == "" || s.failures[p] < s.maxRetries {
			s.retry = append(s.retry, p)
			continue
		}
		if s.flaw == "loses a dead letter" && s.lettersForgotten == 0 {
			s.lettersForgotten++
			continue
		}
		comp := s.comp
		if s.flaw == "names no component" {
			comp = ""
		}
		memory.Lock()
		memory.letters[s.dead] = append(memory.letters[s.dead], api.DeadLetter{Component: comp, Destination: "memory:" + s.dead,
			Source: s.queue, Failures: s.failures[p], Error: "failed", Value: p})
		memory.Unlock()
		delete(s.failures, p)
	}
	return nil
}

func (s *queueSpout) Activate(context.Context) error   { return nil }
func (s *queueSpout) Deactivate(context.Context) error { return nil }
func (s *queueSpout) Close(context.Context) error      { return nil }

type queueStore struct {
	flaw        string
	queue, dead string
}

func (st *queueStore) List(context.Context) ([]api.DeadLetter, error) {
	memory.Lock()
	defer memory.Unlock()
	dl := slices.Clone(memory.letters[st.dead])
	if st.flaw == "listing takes them" {
		delete(memory.letters, st.dead)
	}
	return dl, nil
}

func (st *queueStore) Replay(context.Context) ([]api.DeadLetter, error) {
	memory.Lock()
	dl := memory.letters[st.dead]
	delete(memory.letters, st.dead)
	memory.Unlock()
	if st.flaw == "replays nowhere" {
		return dl, nil
	}
	for _, d := range dl {
		push(st.queue, d.Value)
	}
	return dl, nil
}

// mem is a metrics sink writing to an in-memory receiver (receivers, by
// name).
var memSpec = plugin.Spec{
	Name:    "mem",
	Summary: "Keeps every batch in memory.",
	Fields: []plugin.Field{
		{Name: "receiver", Type: plugin.TypeString, Required: true, Doc: "the receiver to write to"},
	},
}

var receivers = struct {
	sync.Mutex
	got map[string][]*plugin.MetricsBatch
}{got: map[string][]*plugin.MetricsBatch{}}

func received(name string) []*plugin.MetricsBatch {
	receivers.Lock()
	defer receivers.Unlock()
	return slices.Clone(receivers.got[name])
}

type memSink struct {
	flaw     string
	receiver string
	stuck    chan struct{} // closed by Close: a stuck Write returns
	once     sync.Once
}

func (s *memSink) Write(ctx context.Context, b *plugin.MetricsBatch) error {
	if ctx.Err() != nil {
		if s.flaw == "blocks past its context" {
			<-s.stuck
		}
		return ctx.Err()
	}
	if s.flaw == "fails to write" {
		return errors.New("receiver refused the batch")
	}
	c := *b
	if s.flaw == "loses samples" && len(c.Samples) > 1 {
		c.Samples = c.Samples[:1]
	}
	receivers.Lock()
	receivers.got[s.receiver] = append(receivers.got[s.receiver], &c)
	receivers.Unlock()
	return nil
}

func (s *memSink) Close() error {
	s.once.Do(func() { close(s.stuck) })
	if s.flaw == "fails to close" {
		return errors.New("close failed")
	}
	return nil
}

// environment registers the four plugins, each with flaw (a flaw of
// another kind leaves a plugin correct).
func environment(flaw string) (*plugin.Environment, error) {
	env := plugin.NewEmptyEnvironment()
	dlSpec := queueDeadLetterSpec
	if flaw == "declares other fields" {
		dlSpec.Fields = slices.Clone(dlSpec.Fields)
		dlSpec.Fields[1].Default = "letters"
	}
	return env, errors.Join(
		env.RegisterSpout(countSpec, func(cfg plugin.Config) (plugin.Spout, error) {
			n, err := cfg.Int("count")
			return &countSpout{flaw: flaw, n: n}, err
		}),
		env.RegisterBolt(tallySpec, func(cfg plugin.Config) (plugin.Bolt, error) {
			_, err := cfg.String("label")
			return &tallyBolt{flaw: flaw}, err
		}),
		env.RegisterSpout(queueSpec, func(cfg plugin.Config) (plugin.Spout, error) {
			r := cfg.Reader()
			s := &queueSpout{flaw: flaw, queue: r.String("queue"), dead: r.String("dead_letter"), maxRetries: int(r.Int("max_retries"))}
			return s, r.Err()
		}),
		env.RegisterDeadLetter(dlSpec, func(cfg plugin.Config, _ plugin.DeadLetterOwner) (plugin.DeadLetterStore, error) {
			r := cfg.Reader()
			st := &queueStore{flaw: flaw, queue: r.String("queue"), dead: r.String("dead_letter")}
			if err := r.Err(); err != nil {
				return nil, err
			}
			if st.dead == "" && flaw != "lists without a destination" {
				return nil, fmt.Errorf("no dead_letter set: %w", plugin.ErrNoDeadLetters)
			}
			return st, nil
		}),
		env.RegisterMetricsSink(memSpec, func(_ context.Context, cfg plugin.Config, _ *slog.Logger) (plugin.MetricsSink, error) {
			name, err := cfg.String("receiver")
			if flaw == "ignores its receiver" {
				name = "default"
			}
			return &memSink{flaw: flaw, receiver: name, stuck: make(chan struct{})}, err
		}),
	)
}
