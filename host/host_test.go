package host

import (
	"context"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/tuple"
)

var (
	wordStream  = tuple.StreamDecl{Name: "default", Fields: []string{"word"}}
	countStream = tuple.StreamDecl{Name: "counts", Fields: []string{"word", "count"}}
)

func strInt(s string, n int64) []tuple.Value { return []tuple.Value{tuple.Str(s), tuple.Int(n)} }

func int64Value(n int64) []byte {
	return binary.LittleEndian.AppendUint64(nil, uint64(n))
}

func TestBoltLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := newRuntime(t, Config{})
	b, err := compile(t, rt, "echo").NewBolt(ctx, instanceConfig("echo"))
	if err != nil {
		t.Fatal(err)
	}
	var rec recorder
	var met metrics
	tc := taskContext("echo", map[string]string{"echo.count": "1"}, wordStream, countStream)
	tc.Metric = met.add
	st := tc.State.(*MemoryState)

	if err := b.Execute(context.Background(), batchOf(1, "x"), &rec); err == nil {
		t.Fatal("execute before prepare: want an error")
	}
	if err := b.Prepare(context.Background(), tc, &rec); err != nil {
		t.Fatal(err)
	}
	if err := b.Execute(context.Background(), batchOf(11, "a", "b", "a"), &rec); err != nil {
		t.Fatal(err)
	}
	want := []emitted{
		{Stream: 0, Direct: tuple.NoTask, Anchors: []uint64{11}, Values: []tuple.Value{tuple.Str("a")}},
		{Stream: 1, Direct: tuple.NoTask, Anchors: []uint64{11}, Values: strInt("a", 1)},
		{Stream: 0, Direct: tuple.NoTask, Anchors: []uint64{12}, Values: []tuple.Value{tuple.Str("b")}},
		{Stream: 1, Direct: tuple.NoTask, Anchors: []uint64{12}, Values: strInt("b", 1)},
		{Stream: 0, Direct: tuple.NoTask, Anchors: []uint64{13}, Values: []tuple.Value{tuple.Str("a")}},
		{Stream: 1, Direct: tuple.NoTask, Anchors: []uint64{13}, Values: strInt("a", 2)},
	}
	if got := rec.take(); !reflect.DeepEqual(got, want) {
		t.Fatalf("emits:\n got %+v\nwant %+v", got, want)
	}
	if v, _ := st.Get([]byte("k:a")); !reflect.DeepEqual(v, int64Value(2)) {
		t.Fatalf("state k:a = %v, want 2", v)
	}
	if got := met.get("echo.tuples"); got != 3 {
		t.Fatalf("metric echo.tuples = %d, want 3", got)
	}
	if err := b.Tick(context.Background(), &rec); err != nil {
		t.Fatal(err)
	}
	// "-b" deletes b's count (state_delete); a batch larger than the first
	// buffer makes the host ask the guest for a bigger one.
	big := make([]string, 5000)
	for i := range big {
		big[i] = "-b"
	}
	if err := b.Execute(context.Background(), batchOf(100, big...), &rec); err != nil {
		t.Fatal(err)
	}
	if got := len(rec.take()); got != 5000 {
		t.Fatalf("big batch: %d emits, want 5000", got)
	}
	if _, ok := st.Get([]byte("k:b")); ok {
		t.Fatal("k:b still in state after -b")
	}
	// A stored value larger than the guest's 16-byte read buffer: the guest
	// calls state_get again with a bigger one (the counter then restarts,
	// as the value is not 8 bytes).
	st.Put([]byte("k:z"), make([]byte, 40))
	if err := b.Execute(context.Background(), batchOf(200, "z", "c", "d", "e", "f", "g", "h"), &rec); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); len(got) != 14 || !reflect.DeepEqual(got[1].Values, strInt("z", 1)) {
		t.Fatalf("emits after oversized value: %+v", got)
	}
	// Finish scans k: (state_scan; the result outgrows the guest's first
	// buffer, so it asks twice), emits the counts in key order and replaces
	// them by "finished" (state_write).
	if err := b.Finish(context.Background(), &rec); err != nil {
		t.Fatal(err)
	}
	want = nil
	for _, w := range []string{"a", "c", "d", "e", "f", "g", "h", "z"} {
		n := int64(1)
		if w == "a" {
			n = 2
		}
		want = append(want, emitted{Stream: 1, Direct: tuple.NoTask, Values: strInt(w, n)})
	}
	if got := rec.take(); !reflect.DeepEqual(got, want) {
		t.Fatalf("finish emits:\n got %+v\nwant %+v", got, want)
	}
	if got, want := st.Keys(), []string{"batches", "finished"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("state keys after finish = %q, want %q", got, want)
	}
	if v, _ := st.Get([]byte("batches")); !reflect.DeepEqual(v, int64Value(3)) {
		t.Fatalf("batches = %v, want 3", v)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	err = b.Execute(context.Background(), batchOf(1, "x"), &rec)
	if !errors.Is(err, errClosed) {
		t.Fatalf("execute after close: %v, want ErrClosed", err)
	}
	mustContain(t, err, "component echo task 7", "closed")
	if err := b.Close(context.Background()); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func TestSpoutLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := newRuntime(t, Config{})
	s, err := compile(t, rt, "counter").NewSpout(ctx, instanceConfig("counter"))
	if err != nil {
		t.Fatal(err)
	}
	var rec recorder
	var met metrics
	tc := taskContext("counter", map[string]string{"count.n": "5"},
		tuple.StreamDecl{Name: "default", Fields: []string{"n", "ts"}})
	tc.Metric = met.add
	before := coarse(time.Now().UnixNano()) // guests read guestClockResolution
	if err := s.Open(context.Background(), tc, &rec); err != nil {
		t.Fatal(err)
	}
	check := func(st plugin.Status, wantSt plugin.Status, ids ...uint64) {
		t.Helper()
		if st != wantSt {
			t.Fatalf("status %d, want %d", st, wantSt)
		}
		got := rec.take()
		if len(got) != len(ids) {
			t.Fatalf("%d emits, want %d: %+v", len(got), len(ids), got)
		}
		for i, e := range got {
			if e.MsgID != ids[i] || e.Values[0].I != int64(ids[i]-1) || e.Stream != 0 {
				t.Fatalf("emit %d = %+v, want msg id %d and n %d", i, e, ids[i], ids[i]-1)
			}
			if ts := e.Values[1].I; ts < before {
				t.Fatalf("ts %d from ardea.now is before the test started (%d)", ts, before)
			}
		}
	}
	st, err := s.Next(context.Background(), 2, &rec)
	if err != nil {
		t.Fatal(err)
	}
	check(st, plugin.Emitted, 1, 2)
	if err := s.Deactivate(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, err = s.Next(context.Background(), 2, &rec)
	if err != nil {
		t.Fatal(err)
	}
	check(st, plugin.Idle)
	if err := s.Activate(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, err = s.Next(context.Background(), 10, &rec)
	if err != nil {
		t.Fatal(err)
	}
	check(st, plugin.Done, 3, 4, 5)
	if err := s.Ack(context.Background(), []uint64{1, 2}, &rec); err != nil {
		t.Fatal(err)
	}
	if got := met.get("acked"); got != 2 {
		t.Fatalf("acked metric = %d, want 2", got)
	}
	if err := s.Fail(context.Background(), []uint64{3}, &rec); err != nil {
		t.Fatal(err)
	}
	check(plugin.Emitted, plugin.Emitted, 3) // replayed
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestRestartKeepsState: a new instance with the same MemoryState sees
// what the previous one stored.
func TestRestartKeepsState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := newRuntime(t, Config{})
	mod := compile(t, rt, "echo")
	st := NewMemoryState(16)
	run := func(words ...string) []emitted {
		b, err := mod.NewBolt(ctx, instanceConfig("echo"))
		if err != nil {
			t.Fatal(err)
		}
		var rec recorder
		tc := taskContext("echo", map[string]string{"echo.count": "1"}, wordStream, countStream)
		tc.State = st
		if err := b.Prepare(context.Background(), tc, &rec); err != nil {
			t.Fatal(err)
		}
		if err := b.Execute(context.Background(), batchOf(1, words...), &rec); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		return rec.take()
	}
	run("a", "a")
	got := run("a")
	if len(got) != 2 || !reflect.DeepEqual(got[1].Values, strInt("a", 3)) {
		t.Fatalf("after restart: %+v, want count 3 for a", got)
	}
	if v, _ := st.Get([]byte("batches")); !reflect.DeepEqual(v, int64Value(2)) {
		t.Fatalf("batches = %v, want 2", v)
	}
}

func TestGuestOutputReachesSlog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var logs logBuffer
	rt := newRuntime(t, Config{Logger: logs.logger()})
	b, err := compile(t, rt, "misbehave").NewBolt(ctx, instanceConfig("loud"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Prepare(context.Background(), taskContext("loud", map[string]string{"mode": "stdio"}, wordStream), &recorder{}); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(context.Background()); err != nil { // flushes the partial stdout line
		t.Fatal(err)
	}
	want := []struct{ msg, level, stream string }{
		{"hello from stdout", "INFO", "stdout"},
		{"second line", "INFO", "stdout"},
		{"hello from stderr", "WARN", "stderr"},
		{"guest warning loud", "WARN", "log"},
		{"guest debug", "DEBUG", "log"},
		{"partial", "INFO", "stdout"},
	}
	recs := logs.records(t)
	for _, w := range want {
		found := false
		for _, r := range recs {
			if r["msg"] != w.msg {
				continue
			}
			found = true
			if r["level"] != w.level || r["stream"] != w.stream || r["topology"] != "topo" ||
				r["component"] != "loud" || r["task"] != float64(7) {
				t.Errorf("record %v: want level %s stream %s topology topo component loud task 7", r, w.level, w.stream)
			}
		}
		if !found {
			t.Errorf("no log record %q in %v", w.msg, recs)
		}
	}
}

// TestCompileCachedByContent: the same bytes under another name share the
// compiled code but keep their own name for errors.
func TestCompileCachedByContent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := newRuntime(t, Config{})
	a := compile(t, rt, "echo")
	raw, err := readFixture("echo")
	if err != nil {
		t.Fatal(err)
	}
	b, err := rt.CompileBytes(ctx, "copy-of-echo.wasm", raw)
	if err != nil {
		t.Fatal(err)
	}
	if a.c != b.c {
		t.Fatal("same content compiled twice")
	}
	if b.Name() != "copy-of-echo.wasm" || a.Name() != fixture("echo") {
		t.Fatalf("names %q %q", a.Name(), b.Name())
	}
	if a.digest() != b.digest() {
		t.Fatal("sha differs")
	}
}
