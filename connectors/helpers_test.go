package connectors

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/connectors/plugin/conformance"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// recorder is a Collector that keeps copies of what it is given, like the
// runner's collector does.
type recorder struct {
	emits []emitted
	acks  []uint64
	fails []uint64
}

type emitted struct {
	stream uint16
	direct uint32
	msgID  uint64
	values []byte
}

func (r *recorder) Emit(stream uint16, direct uint32, msgID uint64, anchors, values []byte) error {
	r.emits = append(r.emits, emitted{stream, direct, msgID, bytes.Clone(values)})
	return nil
}
func (r *recorder) Ack(id uint64) error  { r.acks = append(r.acks, id); return nil }
func (r *recorder) Fail(id uint64) error { r.fails = append(r.fails, id); return nil }

// decode returns each emitted tuple's fields.
func (r *recorder) decode(t *testing.T) [][]tuple.Value {
	t.Helper()
	var out [][]tuple.Value
	for i, e := range r.emits {
		vals, n, err := tuple.DecodeValues(nil, e.values)
		if err != nil || n != len(e.values) {
			t.Fatalf("emit %d: bad values block (%d of %d bytes): %v", i, n, len(e.values), err)
		}
		out = append(out, vals)
	}
	return out
}

// lines returns the emitted single-string tuples as strings.
func (r *recorder) lines(t *testing.T) []string {
	t.Helper()
	var out []string
	for i, vals := range r.decode(t) {
		if len(vals) != 1 || vals[0].Kind != tuple.String {
			t.Fatalf("emit %d: want one string field, got %v", i, vals)
		}
		out = append(out, vals[0].AsString())
	}
	return out
}

// taskContext builds a task context (conformance.NewTaskContext) of
// topology "test".
func taskContext(comp string, index, parallelism int, cfg map[string]string, outputs map[string][]string, inputs []tuple.InputDecl) plugin.TaskContext {
	c := conformance.NewTaskContext(comp, index, parallelism, cfg, outputs, inputs)
	c.Context.Topology = "test"
	return c
}

// drain calls Next until Done (at most limit calls), checking max.
func drain(t *testing.T, s plugin.Spout, max int, out *recorder, limit int) {
	t.Helper()
	for i := 0; i < limit; i++ {
		before := len(out.emits)
		st, err := s.Next(context.Background(), max, out)
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if got := len(out.emits) - before; got > max {
			t.Fatalf("Next(%d) emitted %d", max, got)
		}
		if st == plugin.Done {
			return
		}
	}
	t.Fatalf("no Done after %d calls", limit)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeClock is a manually advanced clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// batch encodes records (input index, values) as an input batch.
func batch(recs ...rec) []byte {
	var w tuple.BatchWriter
	w.Reset()
	for i, r := range recs {
		w.Append(r.input, 7, uint64(i), tuple.AppendValues(nil, r.vals...))
	}
	return w.Buf
}

type rec struct {
	input uint16
	vals  []tuple.Value
}
