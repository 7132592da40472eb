package connectors

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/connectors/plugin/conformance"
	"github.com/ardea-dev/ardea/internal/tuple"
)

func ackingContext(comp string, index, par int, cfg map[string]string, st plugin.State) plugin.TaskContext {
	ctx := taskContext(comp, index, par, cfg, map[string][]string{"default": {"line"}}, nil)
	ctx.Acking = true
	if st != nil {
		ctx.State = st
	}
	return ctx
}

// nextAll calls Next until it returns Done or Idle (at most limit times).
func nextAll(t *testing.T, s plugin.Spout, budget int, out *recorder, limit int) plugin.Status {
	t.Helper()
	for range limit {
		st, err := s.Next(context.Background(), budget, out)
		if err != nil {
			t.Fatal(err)
		}
		if st != plugin.Emitted {
			return st
		}
	}
	t.Fatalf("Next still emitting after %d calls", limit)
	return 0
}

// TestFileSpoutAtLeastOnce: lines carry their line number as message id,
// failed ones are emitted again from Next (also after the end of the
// file), Done waits for every outcome, and the saved position is the
// oldest line not yet acked.
func TestFileSpoutAtLeastOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	var b strings.Builder
	for i := range 20 {
		fmt.Fprintf(&b, "line-%02d\n", i)
	}
	writeFile(t, path, b.String())
	cfg := map[string]string{"path": path, "max_line_bytes": "100"}
	st := conformance.NewMemState()
	s, err := newSpout("file", cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := &recorder{}
	if err := s.Open(context.Background(), ackingContext("lines", 0, 1, cfg, st), out); err != nil {
		t.Fatal(err)
	}
	if got := nextAll(t, s, 8, out, 10); got != plugin.Idle {
		t.Fatalf("at the end with lines pending: %v, want idle", got)
	}
	var ids []uint64
	for _, e := range out.emits {
		ids = append(ids, e.msgID)
	}
	if want := seq(1, 20); !slices.Equal(ids, want) {
		t.Fatalf("message ids %v, want %v", ids, want)
	}
	// Ack all but lines 3 and 11 (ids 4, 12); fail them.
	var acked []uint64
	for _, id := range ids {
		if id != 4 && id != 12 {
			acked = append(acked, id)
		}
	}
	s.Ack(context.Background(), acked, out)
	s.(*fileSpout).savePosition()
	if got := resumeLine(t, st, s.(*fileSpout).posKey); got != 3 {
		t.Fatalf("saved position at line %d, want 3 (the oldest pending)", got)
	}
	s.Fail(context.Background(), []uint64{4, 12}, out)
	out.emits = nil
	if got := nextAll(t, s, 8, out, 10); got != plugin.Idle {
		t.Fatalf("after the replays: %v, want idle", got)
	}
	if got := out.lines(t); !slices.Equal(got, []string{"line-03", "line-11"}) || out.emits[0].msgID != 4 || out.emits[1].msgID != 12 {
		t.Fatalf("replayed %v (ids %d, %d)", got, out.emits[0].msgID, out.emits[1].msgID)
	}
	s.Ack(context.Background(), []uint64{4, 12}, out)
	if got, err := s.Next(context.Background(), 8, out); err != nil || got != plugin.Done {
		t.Fatalf("everything acked: %v %v, want done", got, err)
	}
	s.Close(context.Background())

	// Without acking, ids are 0 and nothing is kept.
	s2, _ := newSpout("file", cfg)
	out2 := &recorder{}
	ctx := ackingContext("lines", 0, 1, cfg, nil)
	ctx.Acking = false
	if err := s2.Open(context.Background(), ctx, out2); err != nil {
		t.Fatal(err)
	}
	drain(t, s2, 8, out2, 10)
	for _, e := range out2.emits {
		if e.msgID != 0 {
			t.Fatal("a message id without acking")
		}
	}
}

// resumeLine is the line number a restarted instance would go on from.
func resumeLine(t *testing.T, st *conformance.MemState, key []byte) int64 {
	t.Helper()
	v, ok := st.Get(key)
	if !ok || len(v) != 16 {
		t.Fatal("no saved position")
	}
	return int64(v[8]) | int64(v[9])<<8
}

func seq(from, to uint64) []uint64 {
	var out []uint64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// TestGeneratorReplayAndRewind: failed sentences come back identical with
// the same id, and an instance opened on the saved state goes on where the
// last one stopped (what a checkpoint restore relies on).
func TestGeneratorReplayAndRewind(t *testing.T) {
	cfg := map[string]string{"count": "40"}
	st := conformance.NewMemState()
	s, err := newSpout("generator", cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := &recorder{}
	if err := s.Open(context.Background(), ackingContext("gen", 1, 2, cfg, st), out); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(context.Background(), 10, out); err != nil {
		t.Fatal(err)
	}
	first := slices.Clone(out.emits)
	s.Fail(context.Background(), []uint64{3}, out)
	out.emits = nil
	if _, err := s.Next(context.Background(), 10, out); err != nil {
		t.Fatal(err)
	}
	if out.emits[0].msgID != 3 || string(out.emits[0].values) != string(first[2].values) {
		t.Fatalf("replay of 3: id %d %q", out.emits[0].msgID, out.emits[0].values)
	}
	if len(out.emits) != 10 || out.emits[1].msgID != 11 {
		t.Fatalf("after the replay: %d emits, next id %d", len(out.emits), out.emits[1].msgID)
	}
	// A restart from the state goes on at sentence 20, identical to what
	// an uninterrupted generator emits.
	s2, _ := newSpout("generator", cfg)
	out2 := &recorder{}
	if err := s2.Open(context.Background(), ackingContext("gen", 1, 2, cfg, st), out2); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Next(context.Background(), 5, out2); err != nil {
		t.Fatal(err)
	}
	ref, _ := newSpout("generator", cfg)
	outRef := &recorder{}
	if err := ref.Open(context.Background(), ackingContext("gen", 1, 2, cfg, nil), outRef); err != nil {
		t.Fatal(err)
	}
	if _, err := ref.Next(context.Background(), 25, outRef); err != nil {
		t.Fatal(err)
	}
	for i, e := range out2.emits {
		if want := outRef.emits[19+i]; e.msgID != want.msgID || string(e.values) != string(want.values) {
			t.Fatalf("restarted emit %d: id %d, want %d", i, e.msgID, want.msgID)
		}
	}
	// Done only once every sentence was acked.
	s2.Ack(context.Background(), seq(1, 40), out2)
	for range 10 {
		if _, err := s2.Next(context.Background(), 100, out2); err != nil {
			t.Fatal(err)
		}
	}
	s2.Ack(context.Background(), seq(1, 40), out2)
	if st, err := s2.Next(context.Background(), 100, out2); err != nil || st != plugin.Done {
		t.Fatalf("all acked: %v %v", st, err)
	}
}

// trackedBatch encodes records with the given tuple ids and one string field.
func trackedBatch(ids []uint64, lines ...string) []byte {
	var w tuple.BatchWriter
	w.Reset()
	for i, l := range lines {
		w.Append(0, 1, ids[i], tuple.AppendValues(nil, tuple.Str(l)))
	}
	return w.Buf
}

// checkingCollector checks, at each ack, that the acked line is already
// in the file.
type checkingCollector struct {
	recorder
	t     *testing.T
	path  string
	lines map[uint64]string
}

func (c *checkingCollector) Ack(id uint64) error {
	b, err := os.ReadFile(c.path)
	if err != nil || !strings.Contains(string(b), c.lines[id]+"\n") {
		c.t.Errorf("tuple %d acked before its line %q was in the file (%v)", id, c.lines[id], err)
	}
	return c.recorder.Ack(id)
}

// TestFileSinkAtLeastOnceAndCheckpoints: tracked tuples are acked only
// once their lines are in the file, untracked ones never; a snapshot
// records the length, and an instance restored from that state truncates
// what was written after it.
func TestFileSinkAtLeastOnceAndCheckpoints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.tsv")
	cfg := map[string]string{"path": path}
	st := conformance.NewMemState()
	ctx := taskContext("out", 0, 1, cfg, nil, []tuple.InputDecl{{Component: "x", Stream: "default", Fields: []string{"line"}}})
	ctx.State = st
	b, err := newBolt("file", cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := &checkingCollector{t: t, path: path, lines: map[uint64]string{7: "a", 8: "b"}}
	if err := b.Prepare(context.Background(), ctx, out); err != nil {
		t.Fatal(err)
	}
	if err := b.Execute(context.Background(), trackedBatch([]uint64{7, 0, 8}, "a", "untracked", "b"), out); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.acks, []uint64{7, 8}) {
		t.Fatalf("acks %v, want [7 8]", out.acks)
	}
	snap := b.(plugin.Snapshotter)
	if err := snap.Snapshot(context.Background(), 1, out); err != nil {
		t.Fatal(err)
	}
	if err := b.Execute(context.Background(), trackedBatch([]uint64{0}, "after the checkpoint"), out); err != nil {
		t.Fatal(err)
	}
	b.Close(context.Background())
	b2, _ := newBolt("file", cfg)
	if err := b2.Prepare(context.Background(), ctx, &recorder{}); err != nil {
		t.Fatal(err)
	}
	b2.Close(context.Background())
	got, _ := os.ReadFile(path)
	if string(got) != "a\nuntracked\nb\n" {
		t.Fatalf("after the restore the file holds %q", got)
	}
}

// TestFileSpoutRate: with rate set, a task emits about rate lines per
// second (a token bucket of half a second), and Idle when ahead.
func TestFileSpoutRate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.txt")
	writeFile(t, path, strings.Repeat("x\n", 100))
	cfg := map[string]string{"path": path, "max_line_bytes": "10", "rate": "10"}
	s, err := newSpout("file", cfg)
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Unix(1000, 0)}
	s.(*fileSpout).now = clock.now
	out := &recorder{}
	if err := s.Open(context.Background(), taskContext("lines", 0, 1, cfg, map[string][]string{"default": {"line"}}, nil), out); err != nil {
		t.Fatal(err)
	}
	next := func() (plugin.Status, int) {
		before := len(out.emits)
		st, err := s.Next(context.Background(), 100, out)
		if err != nil {
			t.Fatal(err)
		}
		return st, len(out.emits) - before
	}
	if st, n := next(); st != plugin.Emitted || n != 1 {
		t.Fatalf("first call = %v, %d; want one line", st, n)
	}
	if st, n := next(); st != plugin.Idle || n != 0 {
		t.Fatalf("ahead of schedule = %v, %d; want idle", st, n)
	}
	clock.advance(300 * time.Millisecond)
	if st, n := next(); st != plugin.Emitted || n != 3 {
		t.Fatalf("after 300ms = %v, %d; want 3 lines", st, n)
	}
	clock.advance(10 * time.Second) // the bucket holds half a second
	if _, n := next(); n != 5 {
		t.Fatalf("after a long pause: %d lines, want 5", n)
	}
}

// TestFileSpoutDeadLetter: at least once, a line that failed max_retries
// times goes to the dead-letter file instead of being replayed forever, and
// the spout can finish; max_retries without dead_letter is refused.
func TestFileSpoutDeadLetter(t *testing.T) {
	dir := t.TempDir()
	path, dead := filepath.Join(dir, "in.txt"), filepath.Join(dir, "dead.txt")
	writeFile(t, path, "good\npoison\n")
	if _, err := newSpout("file", map[string]string{"path": path, "max_retries": "2"}); err == nil || !strings.Contains(err.Error(), "dead_letter") {
		t.Fatalf("max_retries without dead_letter: %v", err)
	}
	cfg := map[string]string{"path": path, "max_retries": "2", "dead_letter": dead}
	s, err := newSpout("file", cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := &recorder{}
	if err := s.Open(context.Background(), ackingContext("lines", 0, 1, cfg, nil), out); err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	nextAll(t, s, 8, out, 5)
	s.Ack(context.Background(), []uint64{1}, out)
	for range 2 {
		s.(plugin.FailureNoter).NoteFailures([]plugin.Failure{{MsgID: 2, By: "parse[0] version abc"}})
		if err := s.Fail(context.Background(), []uint64{2}, out); err != nil {
			t.Fatal(err)
		}
		nextAll(t, s, 8, out, 5)
	}
	if st, err := s.Next(context.Background(), 8, out); err != nil || st != plugin.Done {
		t.Fatalf("after the dead letter: %v %v, want done", st, err)
	}
	if got := readAll(t, dead); got != `{"line":2,"topology":"test","component":"lines","failures":2,"error":"2 failures; last: failed by parse[0] version abc","value":"poison"}`+"\n" {
		t.Fatalf("dead letter file holds %q", got)
	}
	checkMode(t, dead, 0o600) // a tenant's data
	ctx := context.Background()
	dl, err := deadLetters(ctx, "t", "lines", "builtin:file", cfg)
	if err != nil || len(dl) != 1 || dl[0].Value != "poison" || dl[0].Source != path+":2" || dl[0].Failures != 2 || !strings.Contains(dl[0].Error, "parse[0] version abc") {
		t.Fatalf("DeadLetters = %+v, %v", dl, err)
	}
	if _, err := replayDeadLetters(ctx, "t", "lines", "builtin:file", cfg); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, path); got != "good\npoison\npoison\n" {
		t.Fatalf("after the replay the input holds %q", got)
	}
	if dl, err := deadLetters(ctx, "t", "lines", "builtin:file", cfg); err != nil || len(dl) != 0 {
		t.Fatalf("DeadLetters after the replay = %+v, %v", dl, err)
	}
	if _, err := deadLetters(ctx, "t", "lines", "builtin:file", map[string]string{"path": path}); !errors.Is(err, ErrNoDeadLetters) {
		t.Fatalf("DeadLetters without dead_letter: %v", err)
	}
}

func readAll(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
