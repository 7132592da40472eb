package wordcount_test

// The word count's split and count come in every SDK language; these tests
// hold each to the Go reference (strings.Fields and a map of counts), run
// every language end to end in a real topology, and check that the counts
// one language's count keeps in host-side state are read and continued by
// every other language's count.

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
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

// spaces are every rune unicode.IsSpace accepts, and near misses it does
// not (zero-width space, Mongolian vowel separator, word joiner).
var (
	spaces    = []string{"\t", "\n", "\v", "\f", "\r", " ", "\u0085", "\u00a0", "\u1680", "\u2000", "\u2005", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000"}
	nonSpaces = []string{"\u200b", "\u180e", "\u2060", "\ufeff", "\u001f", "\x00"}
	words     = []string{"heron", "Constantinople-1453", "abcdefgh", "abcdefghijklmnopq", "naïve", "東京", "Zürich", "a", "THE", "x-y", "42", "—", "🦀", "e\u0301", "\xff", "\xe6\x9d", "a\xc0b"}
)

// splitLines builds lines mixing all of the above, deterministically.
func splitLines(n int) []string {
	x := uint32(11)
	next := func(m int) int { x = x*1664525 + 1013904223; return int(x>>8) % m }
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for j := next(9); j > 0; j-- {
			switch next(4) {
			case 0:
				b.WriteString(spaces[next(len(spaces))])
			case 1:
				b.WriteString(nonSpaces[next(len(nonSpaces))])
			default:
				b.WriteString(words[next(len(words))])
			}
			b.WriteString(spaces[next(len(spaces))])
		}
		out[i] = b.String()
	}
	return out
}

// recorder keeps emitted string fields and the acks.
type recorder struct {
	words []string
	ints  []int64
	acks  []uint64
}

func (r *recorder) Emit(_ uint16, _ uint32, _ uint64, _ []byte, values []byte) error {
	vals, _, err := tuple.DecodeValues(nil, values)
	if err != nil {
		return err
	}
	r.words = append(r.words, string(vals[0].B))
	if len(vals) > 1 {
		r.ints = append(r.ints, vals[1].I)
	}
	return nil
}
func (r *recorder) Ack(id uint64) error { r.acks = append(r.acks, id); return nil }
func (r *recorder) Fail(uint64) error   { return nil }

func instance(t *testing.T, rt *host.Runtime, wasm []byte, name string, state *host.MemoryState, in, out []string, rec *recorder) plugin.Bolt {
	t.Helper()
	ctx := context.Background()
	m, err := rt.CompileBytes(ctx, name, wasm)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.NewBolt(ctx, host.InstanceConfig{Topology: "wc", Component: name, TaskID: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	cctx := plugin.TaskContext{
		Context: tuple.Context{Topology: "wc", Component: name, TaskID: 1, Parallelism: 1,
			Outputs: []tuple.StreamDecl{{Name: "default", Fields: out}},
			Inputs:  []tuple.InputDecl{{Component: "up", Stream: "default", Fields: in}}},
		State: state, MaxKeyGroups: 256, Metric: func(string, int64) {},
	}
	if err := b.Prepare(context.Background(), cctx, rec); err != nil {
		t.Fatal(err)
	}
	return b
}

func stringBatch(first uint64, items []string) []byte {
	var w tuple.BatchWriter
	w.Reset()
	for i, s := range items {
		w.Append(0, 1, first+uint64(i), tuple.AppendValues(nil, tuple.Str(s)))
	}
	return w.Buf
}

// compileCache is the CacheDir of every runtime in the package, the
// tests' shared one (testutil.CompileCache), and runCache is the
// end-to-end runs' cache dir, whose compiled code is that one: each
// language's modules are compiled once per machine, where a cache per
// runtime compiled them again in each of the 16 pairs of
// TestCountStateIsSharedAcrossLanguages, in each split test and in each
// end-to-end run (a Go module takes seconds, many more under -race).
var compileCache, runCache = testutil.CompileCache(), ""

func TestMain(m *testing.M) {
	testutil.MainWithDir(m, "ardea-wordcount-test-", func(d string) { runCache = testutil.LinkCompileCache(d) })
}

func newRuntime(t *testing.T) *host.Runtime {
	t.Helper()
	rt, err := host.NewRuntime(context.Background(), host.Config{Logger: slog.New(slog.DiscardHandler), CacheDir: compileCache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	return rt
}

// TestSplitMatchesStringsFields: every language's split emits exactly
// strings.Fields of each line, in order, and acks every line.
func TestSplitMatchesStringsFields(t *testing.T) {
	lines := splitLines(2000)
	var want []string
	for _, l := range lines {
		want = append(want, strings.Fields(l)...)
	}
	for _, lang := range wordcount.Languages {
		t.Run(lang, func(t *testing.T) {
			split, _, err := wordcount.Modules(lang)
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder{}
			b := instance(t, newRuntime(t), split, "split", host.NewMemoryState(256), []string{"line"}, []string{"word"}, rec)
			for i := 0; i < len(lines); i += 500 {
				if err := b.Execute(context.Background(), stringBatch(uint64(i+1), lines[i:i+500]), rec); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(rec.words, want) {
				for i := range min(len(rec.words), len(want)) {
					if rec.words[i] != want[i] {
						t.Fatalf("word %d = %q, want %q (%d words, want %d)", i, rec.words[i], want[i], len(rec.words), len(want))
					}
				}
				t.Fatalf("%d words, want %d", len(rec.words), len(want))
			}
			if len(rec.acks) != len(lines) {
				t.Errorf("%d lines acked, want %d", len(rec.acks), len(lines))
			}
		})
	}
}

// TestCountStateIsSharedAcrossLanguages: each language's count continues
// the counts another language's count left in the task's host-side state,
// so one can replace the other without losing counts.
func TestCountStateIsSharedAcrossLanguages(t *testing.T) {
	ws := []string{"a", "b", "a", "東京", "a\x1fb", "", "b", "a"}
	for _, first := range wordcount.Languages {
		for _, second := range wordcount.Languages {
			t.Run(first+"-then-"+second, func(t *testing.T) {
				rt := newRuntime(t)
				state := host.NewMemoryState(256)
				want := map[string]int64{}
				var wantInts []int64
				for _, lang := range []string{first, second} {
					_, count, err := wordcount.Modules(lang)
					if err != nil {
						t.Fatal(err)
					}
					rec := &recorder{}
					b := instance(t, rt, count, "count-"+lang, state, []string{"word"}, []string{"word", "count"}, rec)
					wantInts = wantInts[:0]
					for _, w := range ws {
						want[w]++
						wantInts = append(wantInts, want[w])
					}
					if err := b.Execute(context.Background(), stringBatch(1, ws), rec); err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(rec.words, ws) || !slices.Equal(rec.ints, wantInts) {
						t.Fatalf("%s emitted %q %v, want %q %v", lang, rec.words, rec.ints, ws, wantInts)
					}
					if err := b.Close(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				for w, n := range want {
					v, ok := state.Get([]byte(w))
					if !ok || len(v) != 8 || int64(binary.LittleEndian.Uint64(v)) != n {
						t.Errorf("host state for %q = %x, want int64 %d", w, v, n)
					}
				}
			})
		}
	}
}

// TestWordCountEveryLanguage runs the word-count topology end to end (file
// spout, split, count, file sink; 2 containers over NATS) in every
// language and compares the final counts with the reference.
func TestWordCountEveryLanguage(t *testing.T) {
	// The file sink writes JSON strings, which cannot carry invalid UTF-8;
	// TestSplitMatchesStringsFields covers that.
	lines := splitLines(3000)
	for i, l := range lines {
		lines[i] = strings.ToValidUTF8(l, "?")
	}
	want := wordcount.Reference(lines)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, lang := range wordcount.Languages {
		t.Run(lang, func(t *testing.T) {
			split, count, err := wordcount.Modules(lang)
			if err != nil {
				t.Fatal(err)
			}
			d := t.TempDir()
			for name, b := range map[string][]byte{"split.wasm": split, "count.wasm": count} {
				if err := os.WriteFile(filepath.Join(d, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out := filepath.Join(d, "counts.tsv")
			b := ardea.NewBuilder("wordcount-" + lang)
			b.Spout("lines", "builtin:file").Config("path", in)
			b.Bolt("split", filepath.Join(d, "split.wasm")).Parallelism(2).Shuffle("lines").Output("default", "word")
			b.Bolt("count", filepath.Join(d, "count.wasm")).Parallelism(2).Fields("split", "word").Output("default", "word", "count")
			b.Bolt("out", "builtin:file").Config("path", out).Config("format", "json").Fields("count", "word")
			top, err := b.BuildWith(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
			if err != nil {
				t.Fatal(err)
			}
			res, err := daemon.Run(context.Background(), daemon.RunOptions{Topology: top, Containers: 2, CacheDir: runCache})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Finished {
				t.Fatal("the topology did not finish its input")
			}
			got := readJSONCounts(t, out)
			if len(got) != len(want) {
				t.Errorf("%d distinct words, want %d", len(got), len(want))
			}
			for w, n := range want {
				if got[w] != n {
					t.Errorf("word %q: count %d, want %d", w, got[w], n)
				}
			}
		})
	}
}

// readJSONCounts reads the file sink's JSON lines ({"word":..,"count":..})
// and keeps the largest count per word.
func readJSONCounts(t *testing.T, path string) map[string]int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		w, n, err := parseCountLine(sc.Text())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		got[w] = max(got[w], n)
	}
	return got
}

func parseCountLine(line string) (string, int64, error) {
	var rec struct {
		Word  string `json:"word"`
		Count int64  `json:"count"`
	}
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		return "", 0, fmt.Errorf("line %q: %w", line, err)
	}
	return rec.Word, rec.Count, nil
}
