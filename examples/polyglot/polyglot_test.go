package polyglot_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/tuple"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

func readTSV(t *testing.T, path string) map[string]int64 {
	t.Helper()
	got, err := wordcount.ReadCounts(path, false)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func run(t *testing.T, topology string, containers int, sets ...string) map[string]int64 {
	t.Helper()
	top, err := ardea.LoadFile(topology)
	if err != nil {
		t.Fatal(err)
	}
	if err := top.SetAll(sets); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "counts.tsv")
	if err := top.Set("out.path=" + out); err != nil {
		t.Fatal(err)
	}
	if err := top.Validate(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig}); err != nil {
		t.Fatal(err)
	}
	res, err := daemon.Run(context.Background(), daemon.RunOptions{Topology: top, Containers: containers, CacheDir: testutil.RunCacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Finished {
		t.Fatal("the topology did not finish its input")
	}
	return readTSV(t, out)
}

// TestPolyglotMatchesGoWordCount: Rust split, AssemblyScript upper and C
// count give exactly the counts of the Go word count on the same input.
func TestPolyglotMatchesGoWordCount(t *testing.T) {
	top, err := ardea.LoadFile("topology.yaml")
	if err != nil {
		t.Fatal(err)
	}
	modules := map[string]string{"split": "../wordcount/rust/split.wasm", "upper": "upper.wasm", "count": "../wordcount/c/count.wasm"}
	for _, c := range top.Bolts() {
		if want, ok := modules[c.Name]; ok && c.Module != want {
			t.Errorf("component %s: module %s, want %s", c.Name, c.Module, want)
		}
		delete(modules, c.Name)
	}
	if len(modules) != 0 {
		t.Errorf("components missing: %v", modules)
	}
	data, err := os.ReadFile("../wordcount/input.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := wordcount.Reference(strings.Split(string(data), "\n"))
	// The fast tier runs the committed builds of the Go word count's
	// folders; the full run builds them, as the example does.
	var prebuilt []string
	if testing.Short() {
		prebuilt = testutil.GoWordCountModules()
	}
	goCounts := run(t, "../wordcount/topology.yaml", 1, prebuilt...)
	got := run(t, "topology.yaml", 2)
	for name, m := range map[string]map[string]int64{"go word count": goCounts, "polyglot": got} {
		if len(m) != len(want) {
			t.Errorf("%s: %d distinct words, want %d", name, len(m), len(want))
		}
		for w, n := range want {
			if m[w] != n {
				t.Errorf("%s: word %q: count %d, want %d", name, w, m[w], n)
			}
		}
	}
}

type recorder struct{ got [][2]string }

func (r *recorder) Emit(_ uint16, _ uint32, _ uint64, _ []byte, values []byte) error {
	vals, _, err := tuple.DecodeValues(nil, values)
	if err != nil {
		return err
	}
	if len(vals) != 2 {
		return fmt.Errorf("emitted %d fields, want 2", len(vals))
	}
	r.got = append(r.got, [2]string{string(vals[0].B), string(vals[1].B)})
	return nil
}
func (r *recorder) Ack(uint64) error  { return nil }
func (r *recorder) Fail(uint64) error { return nil }

// TestUpperKeepsTheWord: upper emits each word unchanged and its upper case.
func TestUpperKeepsTheWord(t *testing.T) {
	ctx := context.Background()
	rt, err := host.NewRuntime(ctx, host.Config{Logger: slog.New(slog.DiscardHandler), CacheDir: testutil.CompileCache()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	m, err := rt.Compile(ctx, "upper.wasm")
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.NewBolt(ctx, host.InstanceConfig{Topology: "polyglot", Component: "upper", TaskID: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	rec := &recorder{}
	err = b.Prepare(context.Background(), plugin.TaskContext{
		Context: tuple.Context{Topology: "polyglot", Component: "upper", TaskID: 1, Parallelism: 1,
			Outputs: []tuple.StreamDecl{{Name: "default", Fields: []string{"word", "upper"}}},
			Inputs:  []tuple.InputDecl{{Component: "split", Stream: "default", Fields: []string{"word"}}}},
		State: host.NewMemoryState(256), MaxKeyGroups: 256, Metric: func(string, int64) {},
	}, rec)
	if err != nil {
		t.Fatal(err)
	}
	var w tuple.BatchWriter
	w.Reset()
	words := []string{"heron", "naïve", "東京", "x-Y", ""}
	for i, s := range words {
		w.Append(0, 1, uint64(i+1), tuple.AppendValues(nil, tuple.Str(s)))
	}
	if err := b.Execute(context.Background(), w.Buf, rec); err != nil {
		t.Fatal(err)
	}
	want := [][2]string{{"heron", "HERON"}, {"naïve", "NAÏVE"}, {"東京", "東京"}, {"x-Y", "X-Y"}, {"", ""}}
	if !slices.Equal(rec.got, want) {
		t.Fatalf("emitted %q, want %q", rec.got, want)
	}
}
