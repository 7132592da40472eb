package conformance

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/connectors/plugin"
)

// SpoutFixture is one config a spout is tested with.
type SpoutFixture struct {
	Name   string
	Config map[string]string
	// Finite: the spout must reach Done within the suite's Next calls;
	// otherwise it must emit and never be Done.
	Finite bool
	// Opened, if set, runs once the spout is open (to feed it input).
	Opened func(t *testing.T, s plugin.Spout)
	// Bus is the container's NATS connection the spout gets, if it needs
	// one (plugin.TaskContext.Bus).
	Bus *nats.Conn
}

// BoltFixture is one config a bolt is tested with.
type BoltFixture struct {
	Name   string
	Config map[string]string
	// Inputs the bolt is prepared with; nil: Inputs (one stream of six
	// fields, one of each value kind), which the suite's batches fill.
	Inputs []plugin.InputDecl
	// Batches it executes; nil: MixedBatch(100), an empty batch and
	// MixedBatch(1).
	Batches [][]byte
	// Bus is the container's NATS connection the bolt gets, if it needs
	// one (plugin.TaskContext.Bus).
	Bus *nats.Conn
}

// Inputs is the input a bolt is prepared with unless its fixture says:
// component "up", stream "default", a field of each value kind.
var Inputs = []plugin.InputDecl{{Component: "up", Stream: "default", Fields: []string{"s", "i", "f", "b", "bytes", "null"}}}

// checkSpec checks what the registry promises of any spec: it is
// registered with its kind, and an empty config is refused only for its
// required fields, each named.
func checkSpec(t *testing.T, env *plugin.Environment, kind plugin.Kind, name string) plugin.Spec {
	t.Helper()
	spec, ok := env.Lookup(kind, name)
	if !ok {
		t.Fatalf("%s %q is not registered", kind, name)
	}
	err := spec.Validate("c", nil)
	for _, f := range spec.Fields {
		if f.Required && (err == nil || !strings.Contains(err.Error(), f.Name)) {
			t.Errorf("%s %q: an empty config is not refused naming required field %q: %v", kind, name, f.Name, err)
		}
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else if err != nil {
		errs = []error{err}
	}
	for _, e := range errs {
		var ce *plugin.ConfigError
		if !errors.As(e, &ce) || ce.Plugin != name || !strings.HasPrefix(ce.Err.Error(), "required") {
			t.Errorf("%s %q: an empty config fails for another reason than a required field: %v", kind, name, e)
		}
	}
	return spec
}

// checkEmits checks every emit against the task's declared outputs.
func checkEmits(t *testing.T, tc plugin.TaskContext, out *Recorder) {
	t.Helper()
	for i, e := range out.Emits() {
		if int(e.Stream) >= len(tc.Outputs) {
			t.Fatalf("emit %d: stream index %d, only %d streams declared", i, e.Stream, len(tc.Outputs))
		}
		vals, n, err := plugin.DecodeValues(nil, e.Values)
		if err != nil || n != len(e.Values) {
			t.Fatalf("emit %d: malformed values block: %v", i, err)
		}
		if want := len(tc.Outputs[e.Stream].Fields); len(vals) != want {
			t.Fatalf("emit %d: %d fields, stream %q declares %d", i, len(vals), tc.Outputs[e.Stream].Name, want)
		}
		if e.Direct != plugin.NoTask {
			t.Fatalf("emit %d: unexpected direct task %d", i, e.Direct)
		}
	}
}

// TestSpout runs spout name of env through its life with each fixture:
// Close before Open is safe; Open fails naming the component when the
// task's outputs differ from the spec's; Next never emits more than asked,
// returns a valid status, emits only the declared fields, reaches Done for
// a finite fixture (and stays there, emitting nothing) and emits for an
// endless one; Ack, Fail and Deactivate succeed; Close twice succeeds.
func TestSpout(t *testing.T, env *plugin.Environment, name string, fixtures ...SpoutFixture) {
	t.Helper()
	spec := checkSpec(t, env, plugin.KindSpout, name)
	if len(fixtures) == 0 {
		t.Fatalf("spout %q: no fixtures", name)
	}
	for _, fx := range fixtures {
		t.Run(fx.Name, func(t *testing.T) {
			ctx := t.Context()
			closeCtx := context.WithoutCancel(ctx)
			if err := spec.Validate("c", fx.Config); err != nil {
				t.Fatalf("fixture config invalid: %v", err)
			}
			s, err := env.NewSpout(name, fx.Config)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(closeCtx); err != nil {
				t.Fatalf("Close before Open: %v", err)
			}

			bad := map[string][]string{}
			for k, v := range spec.Outputs {
				bad[k] = append(slices.Clone(v), "extra")
			}
			if s, err = env.NewSpout(name, fx.Config); err != nil {
				t.Fatal(err)
			}
			if err := s.Open(ctx, NewTaskContext("c", 0, 1, fx.Config, bad, nil), &Recorder{}); err == nil || !strings.Contains(err.Error(), `"c"`) {
				t.Errorf("Open with mismatched outputs = %v, want an error naming the component", err)
			}
			_ = s.Close(closeCtx)

			if s, err = env.NewSpout(name, fx.Config); err != nil {
				t.Fatal(err)
			}
			tc := NewTaskContext("c", 0, 1, fx.Config, spec.Outputs, nil)
			tc.Bus = fx.Bus
			out := &Recorder{}
			if err := s.Open(ctx, tc, out); err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close(closeCtx)
			if fx.Opened != nil {
				fx.Opened(t, s)
			}
			if err := s.Activate(ctx); err != nil {
				t.Fatalf("Activate: %v", err)
			}
			done := false
			for i := 0; i < 200 && !done; i++ {
				max := 1 + i%7
				before := len(out.Emits())
				st, err := s.Next(ctx, max, out)
				if err != nil {
					t.Fatalf("Next: %v", err)
				}
				if n := len(out.Emits()) - before; n > max {
					t.Fatalf("Next(%d) emitted %d", max, n)
				}
				if st != plugin.Emitted && st != plugin.Idle && st != plugin.Done {
					t.Fatalf("Next: bad status %d", st)
				}
				done = st == plugin.Done
			}
			checkEmits(t, tc, out)
			if fx.Finite && !done {
				t.Fatal("finite spout never returned Done")
			}
			if !fx.Finite && (done || len(out.Emits()) == 0) {
				t.Fatalf("endless spout: done=%v, %d emits", done, len(out.Emits()))
			}
			if done {
				n := len(out.Emits())
				for range 3 {
					if st, err := s.Next(ctx, 10, out); st != plugin.Done || err != nil {
						t.Fatalf("Next after Done = %v, %v", st, err)
					}
				}
				if len(out.Emits()) != n {
					t.Fatal("emitted after Done")
				}
			}
			if err := s.Ack(ctx, []uint64{1, 2}, out); err != nil {
				t.Errorf("Ack: %v", err)
			}
			if err := s.Fail(ctx, nil, out); err != nil {
				t.Errorf("Fail: %v", err)
			}
			if err := s.Deactivate(ctx); err != nil {
				t.Errorf("Deactivate: %v", err)
			}
			for i := range 2 {
				if err := s.Close(closeCtx); err != nil {
					t.Fatalf("Close #%d: %v", i+1, err)
				}
			}
		})
	}
}

// MixedBatch is an input batch of n records covering every value kind,
// then one of edge values (infinity, NaN, invalid UTF-8, empty strings,
// the smallest int), on input 0 with the fields of Inputs.
func MixedBatch(n int) []byte {
	var w plugin.BatchWriter
	w.Reset()
	for i := range n {
		w.Append(0, 7, uint64(i+1), plugin.AppendValues(nil,
			plugin.Str(fmt.Sprintf("word %d\twith\ttabs\n", i)), plugin.Int(int64(i)-50), plugin.Float(float64(i)/3),
			plugin.Boolean(i%2 == 0), plugin.Bin([]byte{byte(i), 0xff}), plugin.NullValue()))
	}
	w.Append(0, 7, uint64(n+1), plugin.AppendValues(nil, plugin.Float(math.Inf(1)), plugin.Float(math.NaN()), plugin.Str("\xff"),
		plugin.Str(""), plugin.Bin(nil), plugin.Int(math.MinInt64)))
	return w.Buf
}

// emptyBatch is a batch of no records.
func emptyBatch() []byte {
	var w plugin.BatchWriter
	w.Reset()
	return w.Buf
}

// TestBolt runs bolt name of env through its life with each fixture:
// Close before Prepare is safe; Prepare, Execute of every batch, Tick and
// Finish succeed; a malformed batch is refused naming the component; it
// emits only the declared fields (nothing for a sink); Close twice
// succeeds. With the default inputs it then checks at least once: each
// tracked input tuple gets exactly one outcome (ack or fail), tuples of
// another shape included.
func TestBolt(t *testing.T, env *plugin.Environment, name string, fixtures ...BoltFixture) {
	t.Helper()
	spec := checkSpec(t, env, plugin.KindBolt, name)
	if len(fixtures) == 0 {
		t.Fatalf("bolt %q: no fixtures", name)
	}
	for _, fx := range fixtures {
		t.Run(fx.Name, func(t *testing.T) {
			ctx := t.Context()
			closeCtx := context.WithoutCancel(ctx)
			inputs, batches := fx.Inputs, fx.Batches
			if inputs == nil {
				inputs = Inputs
			}
			if batches == nil {
				batches = [][]byte{MixedBatch(100), emptyBatch(), MixedBatch(1)}
			}
			b, err := env.NewBolt(name, fx.Config)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Close(closeCtx); err != nil {
				t.Fatalf("Close before Prepare: %v", err)
			}
			if b, err = env.NewBolt(name, fx.Config); err != nil {
				t.Fatal(err)
			}
			tc := NewTaskContext("c", 0, 1, fx.Config, spec.Outputs, inputs)
			tc.Bus = fx.Bus
			out := &Recorder{}
			if err := b.Prepare(ctx, tc, out); err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			defer b.Close(closeCtx)
			for i, in := range batches {
				if err := b.Execute(ctx, in, out); err != nil {
					t.Fatalf("Execute(batch %d): %v", i, err)
				}
			}
			if err := b.Execute(ctx, []byte{1, 0, 0, 0, 9}, out); err == nil || !strings.Contains(err.Error(), `"c"`) {
				t.Errorf("Execute(malformed batch) = %v, want an error naming the component", err)
			}
			if err := b.Tick(ctx, out); err != nil {
				t.Fatalf("Tick: %v", err)
			}
			if err := b.Finish(ctx, out); err != nil {
				t.Fatalf("Finish: %v", err)
			}
			checkEmits(t, tc, out)
			if len(spec.Outputs) == 0 && len(out.Emits()) > 0 {
				t.Errorf("bolt without outputs emitted %d tuples", len(out.Emits()))
			}
			for i := range 2 {
				if err := b.Close(closeCtx); err != nil {
					t.Fatalf("Close #%d: %v", i+1, err)
				}
			}
			if fx.Inputs == nil {
				outcomes(t, env, name, spec, fx.Config, fx.Bus)
			}
		})
	}
}

// outcomes checks at least once: the bolt gives each tracked input tuple
// exactly one outcome (ack, or fail), for tuples of the declared shape and
// of another alike, and most of the well-formed ones are acked.
func outcomes(t *testing.T, env *plugin.Environment, name string, spec plugin.Spec, cfg map[string]string, bus *nats.Conn) {
	t.Helper()
	ctx := t.Context()
	b, err := env.NewBolt(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tc := NewTaskContext("c", 0, 1, cfg, spec.Outputs, Inputs)
	tc.Bus = bus
	tc.Acking = true
	out := &Recorder{}
	if err := b.Prepare(ctx, tc, out); err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.WithoutCancel(ctx))
	var w plugin.BatchWriter
	w.Reset()
	const n = 40
	for i := range n {
		vals := plugin.AppendValues(nil, plugin.Str(fmt.Sprintf("w%d", i)), plugin.Int(int64(i)), plugin.Float(0.5),
			plugin.Boolean(true), plugin.Bin([]byte{1}), plugin.NullValue())
		if i%10 == 3 {
			vals = plugin.AppendValues(nil, plugin.Str("short")) // another shape
		}
		w.Append(0, 7, uint64(i+1), vals)
	}
	if err := b.Execute(ctx, w.Buf, out); err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]int{}
	for _, id := range append(out.Acks(), out.Fails()...) {
		seen[id]++
	}
	for id := uint64(1); id <= n; id++ {
		if seen[id] != 1 {
			t.Errorf("at least once: tuple %d got %d outcomes, want 1 (acks %v fails %v)", id, seen[id], out.Acks(), out.Fails())
		}
	}
	if acks := len(out.Acks()); acks < n-4 {
		t.Errorf("at least once: only %d of %d well-formed tuples acked", acks, n-4)
	}
}
