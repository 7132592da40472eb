package connectors

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// sinkInputs has two inputs so JSON keys come from each record's input.
var sinkInputs = []tuple.InputDecl{
	{Component: "count", Stream: "default", Fields: []string{"word", "count", "ratio", "ok", "raw", "none"}},
	{Component: "other", Stream: "side", Fields: []string{"k"}},
}

func sinkBatch() []byte {
	return batch(
		rec{0, []tuple.Value{tuple.Str("plain"), tuple.Int(3), tuple.Float(0.5), tuple.Boolean(true), tuple.Bin([]byte{0xde, 0xad}), tuple.NullValue()}},
		rec{0, []tuple.Value{tuple.Str("tab\there\nnewline\\back\rcr"), tuple.Int(-9007199254740993), tuple.Float(1e21), tuple.Boolean(false), tuple.Bin(nil), tuple.NullValue()}},
		rec{0, []tuple.Value{tuple.Str(`quote " and </html> & é ☃ ` + "\x01\x7f\u2028\xff"), tuple.Int(0), tuple.Float(math.NaN()), tuple.Boolean(true), tuple.Bin([]byte("hi")), tuple.NullValue()}},
		rec{0, []tuple.Value{tuple.Str(""), tuple.Int(math.MaxInt64), tuple.Float(math.Inf(-1)), tuple.Boolean(false), tuple.Bin([]byte{0}), tuple.Str("extra?")}},
		rec{1, []tuple.Value{tuple.Str("from side")}},
		rec{1, []tuple.Value{tuple.Float(3), tuple.Int(1)}}, // more values than declared fields
	)
}

func runSink(t *testing.T, cfg map[string]string, index, parallelism int, batches ...[]byte) {
	t.Helper()
	runSinkWith(t, cfg, index, parallelism, nil, batches...)
}

// runSinkWith is runSink with the task context edited by edit (if set).
func runSinkWith(t *testing.T, cfg map[string]string, index, parallelism int, edit func(*plugin.TaskContext), batches ...[]byte) {
	t.Helper()
	b, err := newBolt("file", cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := &recorder{}
	tc := taskContext("out", index, parallelism, cfg, nil, sinkInputs)
	if edit != nil {
		edit(&tc)
	}
	if err := b.Prepare(context.Background(), tc, out); err != nil {
		t.Fatal(err)
	}
	for _, in := range batches {
		if err := b.Execute(context.Background(), in, out); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Finish(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(out.emits) != 0 {
		t.Errorf("sink emitted %d tuples", len(out.emits))
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	testutil.Golden(t, name, []byte(got))
}

func TestFileSinkTSVGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.tsv")
	runSink(t, map[string]string{"path": path}, 0, 1, sinkBatch())
	got := readFile(t, path)
	golden(t, "sink_tsv.golden", got)
	// Every record is one line: escapes keep tabs and newlines out of fields.
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 6 || len(strings.Split(lines[1], "\t")) != 6 {
		t.Errorf("got %d lines; line 2 = %q", len(lines), lines[1])
	}
}

func TestFileSinkJSONGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	runSink(t, map[string]string{"path": path, "format": "json"}, 0, 1, sinkBatch())
	got := readFile(t, path)
	golden(t, "sink_json.golden", got)
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 6 {
		t.Fatalf("got %d lines", len(lines))
	}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", i+1, err, l)
		}
	}
	var first struct {
		Word  string
		Count int64
		Raw   []byte
		None  *string
	}
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.Word != "plain" || first.Count != 3 || string(first.Raw) != "\xde\xad" || first.None != nil {
		t.Errorf("first line decodes to %+v, %v", first, err)
	}
	var second map[string]string
	_ = json.Unmarshal([]byte(lines[1]), &second)
	if second["word"] != "tab\there\nnewline\\back\rcr" {
		t.Errorf("escaped string decodes to %q", second["word"])
	}
}

func TestFileSinkParallelismAndDirs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "counts.tsv")
	one := batch(rec{0, []tuple.Value{tuple.Str("x")}})
	for i := range 3 {
		runSink(t, map[string]string{"path": path}, i, 3, one)
	}
	for _, suffix := range []string{".0", ".1", ".2"} {
		if got := readFile(t, path+suffix); got != "x\n" {
			t.Errorf("%s = %q", path+suffix, got)
		}
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s written with parallelism 3: %v", path, err)
	}
}

func TestFileSinkTruncateOrAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.tsv")
	one := batch(rec{0, []tuple.Value{tuple.Str("x")}})
	runSink(t, map[string]string{"path": path}, 0, 1, one)
	runSink(t, map[string]string{"path": path}, 0, 1, one)
	if got := readFile(t, path); got != "x\n" {
		t.Errorf("truncating sink wrote %q", got)
	}
	runSink(t, map[string]string{"path": path, "append": "true"}, 0, 1, one)
	if got := readFile(t, path); got != "x\nx\n" {
		t.Errorf("appending sink wrote %q", got)
	}
}

// checkMode fails t unless path's permission bits are want.
func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %#o, want %#o", path, got, want)
	}
}

// TestFileSinkModes: the sink's output is a tenant's data, the owner's
// only like the daemon's data dir: a file it creates is 0600 and the
// folders it makes for it 0700, whatever the config; a file or folder
// that exists already keeps its mode.
func TestFileSinkModes(t *testing.T) {
	one := batch(rec{0, []tuple.Value{tuple.Str("x")}})
	for _, c := range []struct {
		name        string
		cfg         map[string]string
		parallelism int
		files       []string // written, under the sink's path
	}{
		{"single", nil, 1, []string{""}},
		{"append", map[string]string{"append": "true"}, 1, []string{""}},
		{"parallel", nil, 2, []string{".0", ".1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			path := filepath.Join(base, "a", "b", "out.tsv")
			cfg := map[string]string{"path": path}
			for k, v := range c.cfg {
				cfg[k] = v
			}
			for i := range c.parallelism {
				runSink(t, cfg, i, c.parallelism, one)
			}
			for _, suffix := range c.files {
				checkMode(t, path+suffix, 0o600)
			}
			checkMode(t, filepath.Join(base, "a"), 0o700)
			checkMode(t, filepath.Join(base, "a", "b"), 0o700)
		})
	}
	t.Run("existing", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "out.tsv")
		writeFile(t, path, "old\n")
		if err := os.Chmod(path, 0o640); err != nil {
			t.Fatal(err)
		}
		runSink(t, map[string]string{"path": path}, 0, 1, one)
		checkMode(t, path, 0o640)
	})
}

// TestFileSinkRestart: a restarted task (plugin.TaskContext.Restarted)
// appends to what it wrote instead of truncating, and a last line a
// killed process left half written is cut off (append: it is ended, the
// file may hold someone else's lines); effectively once, a restart without
// a checkpointed length is a restore to the beginning and truncates.
func TestFileSinkRestart(t *testing.T) {
	one := batch(rec{0, []tuple.Value{tuple.Str("x")}})
	restarted := func(tc *plugin.TaskContext) { tc.Restarted = true }
	for _, tc := range []struct {
		name, before string
		append       bool
		edit         func(*plugin.TaskContext)
		want         string
	}{
		{"first start", "old\n", false, nil, "x\n"},
		{"restart", "a\nb\n", false, restarted, "a\nb\nx\n"},
		{"restart after a torn line", "a\nb\nhalf a li", false, restarted, "a\nb\nx\n"},
		{"restart after a torn first line", "half a li", false, restarted, "x\n"},
		{"append, restart after a torn line", "a\nhalf a li", true, restarted, "a\nhalf a li\nx\n"},
		{"append, first start", "a\nno newline", true, nil, "a\nno newlinex\n"},
		{"effectively once, restart to the beginning", "a\nb\n", false, func(tc *plugin.TaskContext) {
			tc.Restarted, tc.Checkpointing, tc.State = true, true, host.NewMemoryState(0)
		}, "x\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.tsv")
			writeFile(t, path, tc.before)
			cfg := map[string]string{"path": path}
			if tc.append {
				cfg["append"] = "true"
			}
			runSinkWith(t, cfg, 0, 1, tc.edit, one)
			if got := readFile(t, path); got != tc.want {
				t.Errorf("wrote %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFileSinkFlushInterval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.tsv")
	cfg := map[string]string{"path": path, "flush_interval": "2s"}
	b, err := newBolt("file", cfg)
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Unix(1000, 0)}
	b.(*fileSink).now = clock.now
	out := &recorder{}
	if err := b.Prepare(context.Background(), taskContext("out", 0, 1, cfg, nil, sinkInputs), out); err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	one := batch(rec{0, []tuple.Value{tuple.Str("a")}})
	if err := b.Execute(context.Background(), one, out); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "" {
		t.Fatalf("flushed before the interval: %q", got)
	}
	clock.advance(1999 * time.Millisecond)
	if err := b.Tick(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "" {
		t.Fatalf("flushed before the interval: %q", got)
	}
	clock.advance(time.Millisecond)
	if err := b.Tick(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "a\n" {
		t.Fatalf("after the interval (Tick) = %q", got)
	}
	if err := b.Execute(context.Background(), one, out); err != nil {
		t.Fatal(err)
	}
	clock.advance(3 * time.Second)
	if err := b.Execute(context.Background(), one, out); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "a\na\na\n" {
		t.Fatalf("after the interval (Execute) = %q", got)
	}
	if err := b.Execute(context.Background(), one, out); err != nil {
		t.Fatal(err)
	}
	if err := b.Finish(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, path); got != "a\na\na\na\n" {
		t.Fatalf("after Finish = %q", got)
	}
}

func TestFileSinkErrors(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	writeFile(t, blocker, "")
	b, _ := newBolt("file", map[string]string{"path": filepath.Join(blocker, "out.tsv")})
	err := b.Prepare(context.Background(), taskContext("out", 0, 1, nil, nil, sinkInputs), &recorder{})
	if err == nil || !strings.Contains(err.Error(), `component "out" task 1: file sink`) {
		t.Errorf("Prepare under a file = %v", err)
	}
	for cfg, want := range map[string]string{
		"format=csv":          `config "format": expected one of tsv, json, got "csv"`,
		"flush_interval=soon": `config "flush_interval": expected a duration such as 500ms or 2s, got "soon"`,
		"flush_interval=0s":   `config "flush_interval": must be >= 1ms, got 0s`,
		"append=maybe":        `config "append": expected true or false, got "maybe"`,
	} {
		k, v, _ := strings.Cut(cfg, "=")
		if _, err := newBolt("file", map[string]string{"path": "x", k: v}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewBolt(%s) = %v, want %q", cfg, err, want)
		}
	}
	// JSON needs the record's input to be declared.
	path := filepath.Join(dir, "j.jsonl")
	b, _ = newBolt("file", map[string]string{"path": path, "format": "json"})
	if err := b.Prepare(context.Background(), taskContext("out", 0, 1, nil, nil, sinkInputs[:1]), &recorder{}); err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	err = b.Execute(context.Background(), batch(rec{3, []tuple.Value{tuple.Str("x")}}), &recorder{})
	if err == nil || !strings.Contains(err.Error(), "input index 3, but the task has 1 inputs") {
		t.Errorf("Execute(undeclared input) = %v", err)
	}
}
