package host

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/tuple"
)

// poisonBolt prepares the raw poison fixture (it exports ardea_cursor).
func poisonBolt(t *testing.T, rt *Runtime, ic InstanceConfig) (*bolt, *MemoryState, *recorder) {
	t.Helper()
	b, err := compile(t, rt, "poison/raw").NewBolt(context.Background(), ic)
	if err != nil {
		t.Fatal(err)
	}
	var rec recorder
	tc := taskContext("poison", nil, wordStream)
	if err := b.Prepare(context.Background(), tc, &rec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	return b.(*bolt), tc.State.(*MemoryState), &rec
}

func words(es []emitted) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Values[0].AsString())
	}
	return out
}

// TestFailingTupleIsFailedAlone: a batch with tuples that panic, return an
// error and hit a Go runtime error in the middle: each is failed (a fail
// op for its id), the others are processed exactly once, and nothing the
// failed calls emitted or wrote to state is left.
func TestFailingTupleIsFailedAlone(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	var failures []TupleFailure
	ic := instanceConfig("poison")
	ic.OnTupleFailure = func(f TupleFailure) error {
		f.Values = slices.Clone(f.Values)
		failures = append(failures, f)
		return nil
	}
	b, st, rec := poisonBolt(t, rt, ic)
	batch := batchOf(1, "a", "poison one", "b", "a fault", "c", "trap here", "d")
	if err := b.Execute(context.Background(), batch, rec); err != nil {
		t.Fatal(err)
	}
	if got, want := words(rec.take()), []string{"A", "B", "C", "D"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("emitted %q, want %q (each once, none of a failed call's)", got, want)
	}
	if !reflect.DeepEqual(rec.acks, []uint64{1, 3, 5, 7}) || !reflect.DeepEqual(rec.fails, []uint64{2, 4, 6}) {
		t.Fatalf("acks %v fails %v, want acks [1 3 5 7] fails [2 4 6]", rec.acks, rec.fails)
	}
	if got, want := st.Keys(), []string{"n:A", "n:B", "n:C", "n:D"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("state keys %q, want %q (a failed call's writes undone)", got, want)
	}
	for _, k := range st.Keys() {
		if v, _ := st.Get([]byte(k)); !reflect.DeepEqual(v, int64Value(1)) {
			t.Fatalf("state %s = %v, want 1 (counted once)", k, v)
		}
	}
	if len(failures) != 3 {
		t.Fatalf("%d failures reported, want 3: %+v", len(failures), failures)
	}
	for i, want := range []struct {
		id            uint64
		tuple, errors string
	}{
		{2, `["poison one"]`, "poison tuple: poison one"},
		{4, `["a fault"]`, `bad tuple "a fault" at main.go:56`},
		{6, `["trap here"]`, "integer divide by zero"},
	} {
		f := failures[i]
		if f.TupleID != want.id || FormatTuple(f.Values) != want.tuple || !strings.Contains(f.Err.Error(), want.errors) ||
			f.Component != "poison" || f.Task != 7 || f.Consecutive != 1 {
			t.Errorf("failure %d: id %d tuple %s consecutive %d err %v; want id %d tuple %s and an error with %q",
				i, f.TupleID, FormatTuple(f.Values), f.Consecutive, f.Err, want.id, want.tuple, want.errors)
		}
	}
	if got := restarts(b); got != 3 {
		t.Fatalf("%d fresh instances, want 3", got)
	}
	// The fresh instance goes on with the same state.
	if err := b.Execute(context.Background(), batchOf(20, "a"), rec); err != nil {
		t.Fatal(err)
	}
	if v, _ := st.Get([]byte("n:A")); !reflect.DeepEqual(v, int64Value(2)) {
		t.Fatalf("state n:A = %v, want 2", v)
	}
}

// TestFailingTuplePolicyError: the policy's error ends Execute (an
// effectively-once topology rolls back), with nothing of the batch kept.
func TestFailingTuplePolicyError(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	stop := errors.New("roll back")
	ic := instanceConfig("poison")
	ic.OnTupleFailure = func(TupleFailure) error { return stop }
	b, st, rec := poisonBolt(t, rt, ic)
	err := b.Execute(context.Background(), batchOf(1, "a", "poison", "b"), rec)
	if !errors.Is(err, stop) {
		t.Fatalf("err %v, want the policy's", err)
	}
	if len(rec.emits) != 0 || len(rec.acks) != 0 || len(rec.fails) != 0 || st.Len() != 0 {
		t.Fatalf("emits %v acks %v fails %v state %v: want nothing", rec.emits, rec.acks, rec.fails, st.Keys())
	}
}

// TestMaxConsecutiveFailures: the instance fails when that many tuples in
// a row failed, naming the setting; a tuple that succeeds resets the count.
func TestMaxConsecutiveFailures(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	ic := instanceConfig("poison")
	ic.MaxConsecutiveFailures = 3
	b, _, rec := poisonBolt(t, rt, ic)
	if err := b.Execute(context.Background(), batchOf(1, "poison", "poison", "ok", "poison", "poison"), rec); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rec.fails, []uint64{1, 2, 4, 5}) {
		t.Fatalf("fails %v, want [1 2 4 5]", rec.fails)
	}
	err := b.Execute(context.Background(), batchOf(10, "poison 10", "x"), rec)
	if !errors.Is(err, errTooManyFailures) {
		t.Fatalf("err %v, want ErrTooManyFailures", err)
	}
	mustContain(t, err, "3 tuples in a row failed", "topology.bolt.max_consecutive_failures = 3", `["poison 10"]`, "poison tuple: poison 10")
}

// TestMaxFailingTime: a bolt whose every tuple loops until the call's
// deadline fails the instance once the failing calls took
// topology.bolt.max_failing_time, long before
// topology.bolt.max_consecutive_failures tuples failed, and the error
// names the bound that was hit. Each failing call lasts at least the
// deadline, so the bound is hit after at most 2s / 1s tuples. (The
// deadline also bounds each fresh instance's _initialize: a shorter one
// would fail it on a busy machine.)
func TestMaxFailingTime(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	ic := instanceConfig("poison")
	ic.CallTimeout = time.Second
	ic.MaxFailingTime = 2 * time.Second
	ic.MaxConsecutiveFailures = 1000
	b, _, rec := poisonBolt(t, rt, ic)
	var batch []string
	for i := range 50 {
		batch = append(batch, fmt.Sprintf("loop %d", i))
	}
	err := b.Execute(context.Background(), batchOf(1, batch...), rec)
	if !errors.Is(err, errTooManyFailures) || !errors.Is(err, ErrDeadlineExceeded) {
		t.Fatalf("err %v, want ErrTooManyFailures for the deadline", err)
	}
	mustContain(t, err, "tuples in a row failed in", "the limit topology.bolt.max_failing_time = 2s", `["loop `)
	if n := len(rec.fails); n > 1 {
		t.Errorf("%d tuples failed before the bound, want at most 1 (the second reaches 2s)", n)
	}
}

// TestNoCursorFailsInstance: a module without ardea_cursor fails the
// instance on a failing tuple, as before.
func TestNoCursorFailsInstance(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	called := false
	ic := instanceConfig("misbehave")
	ic.OnTupleFailure = func(TupleFailure) error { called = true; return nil }
	b, err := compile(t, rt, "misbehave").NewBolt(context.Background(), ic)
	if err != nil {
		t.Fatal(err)
	}
	var rec recorder
	if err := b.Prepare(context.Background(), taskContext("misbehave", map[string]string{"mode": "panic"}, wordStream), &rec); err != nil {
		t.Fatal(err)
	}
	err = b.Execute(context.Background(), batchOf(1, "x"), &rec)
	if err == nil || called {
		t.Fatalf("err %v, policy called %v: want the instance failed, no policy", err, called)
	}
	if err := b.Execute(context.Background(), batchOf(2, "y"), &rec); err == nil {
		t.Fatal("the failed instance ran again")
	}
}

func TestFormatTuple(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, c := range []struct {
		vals []tuple.Value
		want string
	}{
		{[]tuple.Value{tuple.Str("a\"b\n"), tuple.Int(-3), tuple.Boolean(true), tuple.NullValue(), tuple.Float(1.5), tuple.Bin([]byte{0, 255})},
			`["a\"b\n", -3, true, null, 1.5, bytes:"\x00\xff"]`},
		{[]tuple.Value{tuple.Str(long), tuple.Str("y")}, fmt.Sprintf(`[%q...(300 bytes), ""...(1 bytes)]`, long[:256])},
	} {
		if got := FormatTuple(tuple.AppendValues(nil, c.vals...)); got != c.want {
			t.Errorf("FormatTuple = %s, want %s", got, c.want)
		}
	}
}

// TestStateUndoScopes: a call's scope inside a probation transaction; the
// inner undo restores values updated in place, deleted and added keys and
// the size, the outer rollback the rest.
func TestStateUndoScopes(t *testing.T) {
	s := NewMemoryState(8)
	s.Put([]byte("a"), []byte("1111"))
	s.Put([]byte("b"), []byte("2"))
	before := s.Bytes()
	s.Begin()
	s.Put([]byte("a"), []byte("1112")) // in place
	m := s.Mark()
	s.Put([]byte("a"), []byte("9999"))
	s.Put([]byte("a"), []byte("99999"))
	s.Delete([]byte("b"))
	s.Put([]byte("c"), []byte("3"))
	s.UndoTo(m)
	s.Release(m)
	if v, _ := s.Get([]byte("a")); string(v) != "1112" {
		t.Fatalf("a = %q after the inner undo, want 1112", v)
	}
	if v, ok := s.Get([]byte("b")); !ok || string(v) != "2" {
		t.Fatalf("b = %q %v, want 2", v, ok)
	}
	if _, ok := s.Get([]byte("c")); ok || s.Len() != 2 {
		t.Fatalf("c present %v, %d keys: want the inner writes gone", ok, s.Len())
	}
	s.Rollback()
	if v, _ := s.Get([]byte("a")); string(v) != "1111" || s.Bytes() != before {
		t.Fatalf("a = %q, %d bytes after the rollback, want 1111 and %d", v, s.Bytes(), before)
	}
	m = s.Mark()
	s.Put([]byte("d"), []byte("4"))
	s.Release(m)
	if v, _ := s.Get([]byte("d")); string(v) != "4" || len(s.undo) != 0 || len(s.undoBuf) != 0 {
		t.Fatalf("d = %q, log %d entries: want the write kept and the log empty", v, len(s.undo))
	}
}

// TestTrapReportPointsAtUserCode: a trap's report names the user's
// function (demangled for Rust), with file:line where the module has
// DWARF (C), and folds the SDK's and the runtime's frames into one line
// per run.
func TestTrapReportPointsAtUserCode(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	lines := tuple.StreamDecl{Name: "default", Fields: []string{"line"}}
	for _, c := range []struct {
		lang      string
		want, not []string
	}{
		{"raw", []string{"wasm stack trace:\n\t... 3 SDK/runtime frames\n\tmain.execute.func1(i32) i32\n\tgithub.com_ardea_dev_ardea_host_testdata_guestabi.Records(i32) i32\n\tmain.execute(i32) i32\n\t... 1 SDK/runtime frame"},
			[]string{"runtime.gopanic", "\t.main"}},
		{"rust", []string{"poison tuple: poison x at host/testdata/poison/rust/src/lib.rs:15:13", "SDK/runtime frames\n\t<poison::Upper as ardea::runtime::Bolt>::execute(i32,i32,i32,i32)\n\t... "},
			[]string{"_ZN", "std::panicking", "dlmalloc"}},
		{"c", []string{"poison.c:24: poison tuple: poison x", "SDK/runtime frames\n\texecute(i32) i32\n\t\t0x", ": host/testdata/poison/c/poison.c:", "\t... 1 SDK/runtime frame"},
			[]string{"ardea_fatal", "ardea_export_execute"}},
		{"assemblyscript", []string{"poison tuple: poison x at assembly/index.ts:13:7", "wasm stack trace:\n\t... 4 SDK/runtime frames"},
			[]string{"~lib/"}},
	} {
		var got error
		ic := instanceConfig("poison")
		ic.OnTupleFailure = func(f TupleFailure) error { got = f.Err; return nil }
		b, err := compile(t, rt, "poison/"+c.lang).NewBolt(context.Background(), ic)
		if err != nil {
			t.Fatal(err)
		}
		var rec recorder
		tc := taskContext("poison", nil, lines)
		tc.Context.Inputs = []tuple.InputDecl{{Component: "lines", Stream: "default", Fields: []string{"line"}}}
		if err := b.Prepare(context.Background(), tc, &rec); err != nil {
			t.Fatal(err)
		}
		if err := b.Execute(context.Background(), batchOf(1, "a", "poison x"), &rec); err != nil {
			t.Fatal(err)
		}
		_ = b.Close(context.Background())
		if got == nil {
			t.Fatalf("%s: no failing tuple", c.lang)
		}
		report, _, _ := strings.Cut(got.Error(), "\nguest stderr:")
		for _, w := range c.want {
			if !strings.Contains(report, w) {
				t.Errorf("%s: report\n%s\ndoes not contain %q", c.lang, report, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(report, n) {
				t.Errorf("%s: report\n%s\ncontains %q", c.lang, report, n)
			}
		}
	}
}

func TestDemangleRust(t *testing.T) {
	for in, want := range map[string]string{
		"_ZN3std9panicking20rust_panic_with_hook17h6ac9107c42850161E":                              "std::panicking::rust_panic_with_hook",
		"_ZN54_$LT$poison..Upper$u20$as$u20$ardea..runtime..Bolt$GT$7execute17h1bbb30d585c0fcc4E":  "<poison::Upper as ardea::runtime::Bolt>::execute",
		"_ZN3std9panicking19begin_panic_handler28_$u7b$$u7b$closure$u7d$$u7d$17h8ef066ac4d1e7406E": "std::panicking::begin_panic_handler::{{closure}}",
		"main.execute": "main.execute",
		"_ZN3bad":      "_ZN3bad",
	} {
		if got := demangleRust(in); got != want {
			t.Errorf("demangleRust(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestFailingTupleDeadline: a tuple that loops until the call's deadline
// fails alone; the rest of the batch goes on in a fresh instance.
func TestFailingTupleDeadline(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	var failed []TupleFailure
	ic := instanceConfig("poison")
	ic.CallTimeout = time.Second
	ic.OnTupleFailure = func(f TupleFailure) error { failed = append(failed, f); return nil }
	b, _, rec := poisonBolt(t, rt, ic)
	if err := b.Execute(context.Background(), batchOf(1, "a", "loop", "b"), rec); err != nil {
		t.Fatal(err)
	}
	if got := words(rec.take()); !reflect.DeepEqual(got, []string{"A", "B"}) || !reflect.DeepEqual(rec.fails, []uint64{2}) {
		t.Fatalf("emitted %q, failed %v: want A, B and tuple 2 failed", got, rec.fails)
	}
	if len(failed) != 1 || !errors.Is(failed[0].Err, ErrDeadlineExceeded) {
		t.Fatalf("failures %+v: want one, the deadline", failed)
	}
}

// TestFailingTupleMemoryBomb: a tuple that allocates until the instance's
// memory limit fails alone; the rest of the batch goes on in a fresh
// instance, which starts with a fresh linear memory.
func TestFailingTupleMemoryBomb(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	var failed []TupleFailure
	ic := instanceConfig("poison")
	ic.MemoryLimitPages = 256 // 16 MiB
	ic.OnTupleFailure = func(f TupleFailure) error { failed = append(failed, f); return nil }
	b, _, rec := poisonBolt(t, rt, ic)
	if err := b.Execute(context.Background(), batchOf(1, "a", "bomb", "b", "bomb again", "c"), rec); err != nil {
		t.Fatal(err)
	}
	if got := words(rec.take()); !reflect.DeepEqual(got, []string{"A", "B", "C"}) || !reflect.DeepEqual(rec.fails, []uint64{2, 4}) {
		t.Fatalf("emitted %q, failed %v: want A, B, C and tuples 2 and 4 failed", got, rec.fails)
	}
	if len(failed) != 2 {
		t.Fatalf("failures %+v: want two", failed)
	}
	for _, f := range failed {
		if !errors.Is(f.Err, ErrMemoryLimit) && !errors.Is(f.Err, errExited) {
			t.Fatalf("failure %v: want the memory limit (or the guest's exit on it)", f.Err)
		}
	}
}

// TestFailingTuplesStop: a stop (the context's end) while a batch's
// tuples each loop until the call's deadline ends Execute after the
// tuple running then, not after every tuple of the batch has looped.
func TestFailingTuplesStop(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Config{})
	ic := instanceConfig("poison")
	ic.CallTimeout = 200 * time.Millisecond
	ic.MaxConsecutiveFailures = 1000
	b, _, rec := poisonBolt(t, rt, ic)
	ctx, cancel := context.WithCancel(context.Background())
	var calls int
	b.ic.OnTupleFailure = func(TupleFailure) error {
		if calls++; calls == 2 {
			cancel() // the stop comes while the second tuple fails
		}
		return nil
	}
	loops := make([]string, 50)
	for i := range loops {
		loops[i] = "loop"
	}
	err := b.Execute(ctx, batchOf(1, loops...), rec)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Execute after a stop: %v, want the stop (context.Canceled)", err)
	}
	if calls != 2 || len(rec.fails) != 2 {
		t.Fatalf("%d failures reported, %d tuples failed: want 2 of 50 (nothing run after the stop)", calls, len(rec.fails))
	}
}
