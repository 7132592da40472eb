package connectors

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/internal/component"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// fixture is a valid config for a connector, for the conformance suites.
type fixture struct {
	name   string
	cfg    map[string]string
	finite bool // spouts: must reach Done
	// opened, if set, runs once the spout is open (to feed it input).
	opened func(t *testing.T, s component.Spout)
}

// fixtures returns the configs each registered connector is tested with;
// the first is its minimal valid config. Every registered connector must
// have an entry (TestConformanceCoversRegistry).
var fixtures = map[string]func(t *testing.T, dir string) []fixture{
	"spout:file": func(t *testing.T, dir string) []fixture {
		path := filepath.Join(dir, "in.txt")
		var b strings.Builder
		for i := range 23 {
			fmt.Fprintf(&b, "line %d\n", i)
		}
		writeFile(t, path, b.String())
		empty := filepath.Join(dir, "empty.txt")
		writeFile(t, empty, "")
		return []fixture{
			{name: "minimal", cfg: map[string]string{"path": path}, finite: true},
			{name: "empty file", cfg: map[string]string{"path": empty}, finite: true},
		}
	},
	"spout:generator": func(t *testing.T, dir string) []fixture {
		return []fixture{
			{name: "minimal", cfg: map[string]string{}},
			{name: "bounded", cfg: map[string]string{"count": "31", "seed": "5"}, finite: true},
			{name: "paced", cfg: map[string]string{"rate": "1000000"}},
		}
	},
	"bolt:file": func(t *testing.T, dir string) []fixture {
		return []fixture{
			{name: "minimal", cfg: map[string]string{"path": filepath.Join(dir, "out", "sink.tsv")}},
			{name: "json", cfg: map[string]string{"path": filepath.Join(dir, "sink.jsonl"), "format": "json"}},
		}
	},
}

func TestConformanceCoversRegistry(t *testing.T) {
	specs := Specs()
	if len(specs) == 0 {
		t.Fatal("no connectors registered")
	}
	for _, s := range specs {
		if fixtures[s.Kind+":"+s.Name] == nil {
			t.Errorf("%s %q has no conformance fixture: add one to fixtures in conformance_test.go", s.Kind, s.Name)
		}
		if s.Kind == KindSpout && s.Name != "generator" && s.Name != "http" {
			found := false
			for k := range sources {
				found = found || strings.HasPrefix(k+"/", s.Name+"/")
			}
			if !found {
				t.Errorf("spout %q has no delivery fixture: add one to sources (delivery_conformance_test.go)", s.Name)
			}
		}
		if err := s.Validate("c", nil); err != nil && !strings.Contains(err.Error(), "required") {
			t.Errorf("%s %q: empty config fails for another reason than required keys: %v", s.Kind, s.Name, err)
		}
	}
}

// checkEmits checks every emit against the context's declared outputs.
func checkEmits(t *testing.T, ctx component.Context, out *recorder) {
	t.Helper()
	for i, e := range out.emits {
		if int(e.stream) >= len(ctx.Outputs) {
			t.Fatalf("emit %d: stream index %d, only %d streams declared", i, e.stream, len(ctx.Outputs))
		}
		vals, n, err := tuple.DecodeValues(nil, e.values)
		if err != nil || n != len(e.values) {
			t.Fatalf("emit %d: malformed values block: %v", i, err)
		}
		if want := len(ctx.Outputs[e.stream].Fields); len(vals) != want {
			t.Fatalf("emit %d: %d fields, stream %q declares %d", i, len(vals), ctx.Outputs[e.stream].Name, want)
		}
		if e.direct != tuple.NoTask {
			t.Fatalf("emit %d: unexpected direct task %d", i, e.direct)
		}
	}
}

func TestSpoutConformance(t *testing.T) {
	for _, spec := range Specs() {
		if spec.Kind != KindSpout || fixtures["spout:"+spec.Name] == nil {
			continue
		}
		// A fixture that needs a broker it cannot have skips its own subtest.
		t.Run(spec.Name, func(t *testing.T) {
			for _, fx := range fixtures["spout:"+spec.Name](t, t.TempDir()) {
				t.Run(fx.name, func(t *testing.T) {
					if err := spec.Validate("c", fx.cfg); err != nil {
						t.Fatalf("fixture config invalid: %v", err)
					}
					// Close before Open is safe.
					s, err := NewSpout(spec.Name, fx.cfg)
					if err != nil {
						t.Fatal(err)
					}
					if err := s.Close(context.Background()); err != nil {
						t.Fatalf("Close before Open: %v", err)
					}
					// Open fails clearly when the context lacks the declared outputs.
					bad := map[string][]string{}
					for k, v := range spec.Outputs {
						bad[k] = append(v, "extra")
					}
					s, _ = NewSpout(spec.Name, fx.cfg)
					if err := s.Open(context.Background(), taskContext("c", 0, 1, fx.cfg, bad, nil), &recorder{}); err == nil || !strings.Contains(err.Error(), `"c"`) {
						t.Errorf("Open with mismatched outputs = %v, want an error naming the component", err)
					}
					_ = s.Close(context.Background())

					s, _ = NewSpout(spec.Name, fx.cfg)
					ctx := taskContext("c", 0, 1, fx.cfg, spec.Outputs, nil)
					out := &recorder{}
					if err := s.Open(context.Background(), ctx, out); err != nil {
						t.Fatalf("Open: %v", err)
					}
					if fx.opened != nil {
						fx.opened(t, s)
					}
					if err := s.Activate(context.Background()); err != nil {
						t.Fatalf("Activate: %v", err)
					}
					done := false
					for i := 0; i < 200 && !done; i++ {
						max := 1 + i%7
						before := len(out.emits)
						st, err := s.Next(context.Background(), max, out)
						if err != nil {
							t.Fatalf("Next: %v", err)
						}
						if n := len(out.emits) - before; n > max {
							t.Fatalf("Next(%d) emitted %d", max, n)
						}
						if st != component.Emitted && st != component.Idle && st != component.Done {
							t.Fatalf("Next: bad status %d", st)
						}
						done = st == component.Done
					}
					checkEmits(t, ctx, out)
					if fx.finite && !done {
						t.Fatal("finite spout never returned Done")
					}
					if !fx.finite && (done || len(out.emits) == 0) {
						t.Fatalf("endless spout: done=%v, %d emits", done, len(out.emits))
					}
					if done {
						n := len(out.emits)
						for range 3 {
							if st, err := s.Next(context.Background(), 10, out); st != component.Done || err != nil {
								t.Fatalf("Next after Done = %v, %v", st, err)
							}
						}
						if len(out.emits) != n {
							t.Fatal("emitted after Done")
						}
					}
					if err := s.Ack(context.Background(), []uint64{1, 2}, out); err != nil {
						t.Errorf("Ack: %v", err)
					}
					if err := s.Fail(context.Background(), nil, out); err != nil {
						t.Errorf("Fail: %v", err)
					}
					if err := s.Deactivate(context.Background()); err != nil {
						t.Errorf("Deactivate: %v", err)
					}
					for i := range 2 {
						if err := s.Close(context.Background()); err != nil {
							t.Fatalf("Close #%d: %v", i+1, err)
						}
					}
				})
			}
		})
	}
}

// mixedBatch is a batch of n records covering every value kind.
func mixedBatch(n int) []byte {
	var recs []rec
	for i := range n {
		recs = append(recs, rec{0, []tuple.Value{
			tuple.Str(fmt.Sprintf("word %d\twith\ttabs\n", i)), tuple.Int(int64(i) - 50), tuple.Float(float64(i) / 3),
			tuple.Boolean(i%2 == 0), tuple.Bin([]byte{byte(i), 0xff}), tuple.NullValue(),
		}})
	}
	recs = append(recs, rec{0, []tuple.Value{tuple.Float(math.Inf(1)), tuple.Float(math.NaN()), tuple.Str("\xff"),
		tuple.Str(""), tuple.Bin(nil), tuple.Int(math.MinInt64)}})
	return batch(recs...)
}

var conformanceInputs = []tuple.InputDecl{{Component: "up", Stream: "default", Fields: []string{"s", "i", "f", "b", "bytes", "null"}}}

func TestBoltConformance(t *testing.T) {
	for _, spec := range Specs() {
		if spec.Kind != KindBolt || fixtures["bolt:"+spec.Name] == nil {
			continue
		}
		t.Run(spec.Name, func(t *testing.T) {
			for _, fx := range fixtures["bolt:"+spec.Name](t, t.TempDir()) {
				t.Run(fx.name, func(t *testing.T) {
					b, err := NewBolt(spec.Name, fx.cfg)
					if err != nil {
						t.Fatal(err)
					}
					if err := b.Close(context.Background()); err != nil {
						t.Fatalf("Close before Prepare: %v", err)
					}
					b, _ = NewBolt(spec.Name, fx.cfg)
					ctx := taskContext("c", 0, 1, fx.cfg, spec.Outputs, conformanceInputs)
					out := &recorder{}
					if err := b.Prepare(context.Background(), ctx, out); err != nil {
						t.Fatalf("Prepare: %v", err)
					}
					for _, in := range [][]byte{mixedBatch(100), batch(), mixedBatch(1)} {
						if err := b.Execute(context.Background(), in, out); err != nil {
							t.Fatalf("Execute: %v", err)
						}
					}
					if err := b.Execute(context.Background(), []byte{1, 0, 0, 0, 9}, out); err == nil || !strings.Contains(err.Error(), `"c"`) {
						t.Errorf("Execute(malformed batch) = %v, want an error naming the component", err)
					}
					if err := b.Tick(context.Background(), out); err != nil {
						t.Fatalf("Tick: %v", err)
					}
					if err := b.Finish(context.Background(), out); err != nil {
						t.Fatalf("Finish: %v", err)
					}
					checkEmits(t, ctx, out)
					if len(spec.Outputs) == 0 && len(out.emits) > 0 {
						t.Errorf("bolt without outputs emitted %d tuples", len(out.emits))
					}
					for i := range 2 {
						if err := b.Close(context.Background()); err != nil {
							t.Fatalf("Close #%d: %v", i+1, err)
						}
					}
				})
			}
		})
	}
}
