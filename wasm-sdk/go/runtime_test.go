package ardea

import (
	"bytes"
	"errors"
	"math"
	"regexp"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/ardea-dev/ardea/wasm-sdk/go/internal/fakehost"
	"github.com/ardea-dev/ardea/wasm-sdk/go/internal/tuple"
)

func TestBufferStaysPut(t *testing.T) {
	r := newRuntime(hostAdapter{newFakeHost(t)})
	a := r.buffer(10)
	if len(a) < 10 {
		t.Fatalf("buffer(10) has %d bytes", len(a))
	}
	if b := r.buffer(int32(len(a))); unsafe.SliceData(a) != unsafe.SliceData(b) {
		t.Error("buffer moved although it had room")
	}
	c := r.buffer(int32(len(a) + 1))
	if len(c) <= len(a) || unsafe.SliceData(a) == unsafe.SliceData(c) {
		t.Error("buffer did not grow")
	}
	if d := r.buffer(0); unsafe.SliceData(d) != unsafe.SliceData(c) {
		t.Error("a smaller request moved the buffer")
	}
}

func TestContextAccessors(t *testing.T) {
	var got *Context
	x := newHarness(t, nil, &funcBolt{prepare: func(c *Context) error { got = c; return nil }})
	x.prepare(wordContext("word", "count"))
	x.h.NowNanos = 1_700_000_000_123_456_789
	if got.Topology() != "wc" || got.Component() != "count" || got.TaskID() != 4 || got.TaskIndex() != 1 || got.Parallelism() != 2 {
		t.Errorf("context = %s %s %d %d %d", got.Topology(), got.Component(), got.TaskID(), got.TaskIndex(), got.Parallelism())
	}
	if v, ok := got.Config("greeting"); !ok || v != "hi" {
		t.Errorf("Config(greeting) = %q %v", v, ok)
	}
	if _, ok := got.Config("missing"); ok {
		t.Error("Config(missing) found")
	}
	if got.ConfigOr("missing", "def") != "def" || got.ConfigOr("greeting", "def") != "hi" {
		t.Error("ConfigOr")
	}
	if n, err := got.ConfigInt("n", 0); n != 42 || err != nil {
		t.Errorf("ConfigInt = %d %v", n, err)
	}
	if _, err := got.ConfigInt("greeting", 0); err == nil {
		t.Error("ConfigInt of a word did not fail")
	}
	if k := got.ConfigKeys(); strings.Join(k, ",") != "greeting,n" {
		t.Errorf("ConfigKeys = %q", k)
	}
	if o := got.Outputs(); len(o) != 2 || o[1].Name != "side" || o[0].Fields[1] != "count" {
		t.Errorf("Outputs = %+v", o)
	}
	if in := got.Inputs(); len(in) != 2 || in[1].Stream != "pairs" || in[1].Fields[1] != "v" {
		t.Errorf("Inputs = %+v", in)
	}
	if got.Now().UnixNano() != x.h.NowNanos {
		t.Errorf("Now = %v", got.Now())
	}
}

func TestExecuteEmitsAndAcks(t *testing.T) {
	var seen []string
	x := newHarness(t, nil, &funcBolt{exec: func(tp Tuple, c *BoltCollector) error {
		seen = append(seen, tp.Component()+"/"+tp.Stream()+" "+tp.String(0))
		if tp.SourceTask() != 7 || tp.Input() != 0 || tp.Len() != 1 || tp.Fields()[0] != "word" {
			t.Errorf("tuple %d: source %d input %d len %d fields %q", tp.ID(), tp.SourceTask(), tp.Input(), tp.Len(), tp.Fields())
		}
		c.EmitAnchored(tp, tp.String(0), int64(len(tp.BytesView(0))))
		c.EmitTo("side", Text(tp.BytesView(0)))
		c.Ack(tp)
		return nil
	}})
	x.prepare(wordContext("word", "count"))
	x.mustOK(x.execute(batchOf([]tuple.Value{tuple.Str("a")}, []tuple.Value{tuple.Str("héllo")})), 0, "execute")
	if strings.Join(seen, ",") != "split/default a,split/default héllo" {
		t.Errorf("seen %q", seen)
	}
	if len(x.h.Emits) != 1 {
		t.Fatalf("%d emit calls, want 1", len(x.h.Emits))
	}
	want := tuple.AppendEmit(nil, 0, tuple.NoTask, 0, []uint64{1}, tuple.AppendValues(nil, tuple.Str("a"), tuple.Int(1)))
	want = tuple.AppendEmit(want, 1, tuple.NoTask, 0, nil, tuple.AppendValues(nil, tuple.Str("a")))
	want = tuple.AppendAck(want, 1)
	want = tuple.AppendEmit(want, 0, tuple.NoTask, 0, []uint64{2}, tuple.AppendValues(nil, tuple.Str("héllo"), tuple.Int(6)))
	want = tuple.AppendEmit(want, 1, tuple.NoTask, 0, nil, tuple.AppendValues(nil, tuple.Str("héllo")))
	want = tuple.AppendAck(want, 2)
	if !bytes.Equal(x.h.Emits[0], want) {
		t.Errorf("ops\n%x\nwant\n%x", x.h.Emits[0], want)
	}
}

func TestUntrackedTuplesAreNotAnchoredOrAcked(t *testing.T) {
	x := newHarness(t, nil, &funcBolt{exec: func(tp Tuple, c *BoltCollector) error {
		c.EmitAnchored(tp, "w", 1)
		c.EmitMultiAnchored("default", []Tuple{tp, tp}, "w", 2)
		c.Ack(tp)
		c.Fail(tp)
		return nil
	}})
	x.prepare(wordContext("word", "count"))
	var w tuple.BatchWriter
	w.Reset()
	w.Append(0, 1, 0, tuple.AppendValues(nil, tuple.Str("x")))
	x.mustOK(x.execute(w.Buf), 0, "execute")
	ops := x.h.ops()
	if len(ops) != 2 || len(ops[0].Anchors) != 0 || len(ops[1].Anchors) != 0 {
		t.Errorf("ops = %+v", ops)
	}
}

func TestTupleAccessors(t *testing.T) {
	vals := []tuple.Value{tuple.NullValue(), tuple.Bin([]byte{1, 2}), tuple.Str("s"), tuple.Int(math.MinInt64),
		tuple.Float(-2.5), tuple.Boolean(true)}
	ctx := wordContext("word")
	ctx.Inputs[0].Fields = []string{"n", "b", "s", "i", "f", "t"}
	var kept Tuple
	x := newHarness(t, nil, &funcBolt{exec: func(tp Tuple, c *BoltCollector) error {
		if !tp.IsNull(0) || tp.Kind(1) != KindBytes || tp.Kind(5) != KindBool {
			t.Error("kinds")
		}
		if tp.String(0) != "" || tp.Int(0) != 0 || tp.Float(0) != 0 || tp.Bool(0) || tp.Bytes(0) != nil {
			t.Error("null does not read as zero values")
		}
		if !bytes.Equal(tp.Bytes(1), []byte{1, 2}) || tp.String(1) != "\x01\x02" || tp.String(2) != "s" ||
			!bytes.Equal(tp.Bytes(2), []byte("s")) || tp.Int(3) != math.MinInt64 || tp.Float(4) != -2.5 || !tp.Bool(5) {
			t.Error("values")
		}
		if tp.StringByName("s") != "s" || tp.IntByName("i") != math.MinInt64 || tp.FloatByName("f") != -2.5 ||
			!tp.BoolByName("t") || !bytes.Equal(tp.BytesByName("b"), []byte{1, 2}) || tp.Index("nope") != -1 {
			t.Error("by name")
		}
		v := tp.Values()
		if v[0] != nil || !bytes.Equal(v[1].([]byte), []byte{1, 2}) || v[2] != "s" || v[3] != int64(math.MinInt64) || v[4] != -2.5 || v[5] != true {
			t.Errorf("Values = %#v", v)
		}
		if !bytes.Equal(tp.Raw(), tuple.AppendValues(nil, vals...)) {
			t.Error("Raw")
		}
		kept = tp.Copy()
		c.Ack(tp)
		return nil
	}})
	x.prepare(ctx)
	b := batchOf(vals)
	x.mustOK(x.execute(b), 0, "execute")
	clear(x.r.in) // the copy must not view the buffer
	if kept.String(2) != "s" || kept.ID() != 1 || kept.Component() != "split" {
		t.Error("Copy does not own its values")
	}
	// A wrong-kind accessor panics with a KindError, reported as the error.
	x.r.bolt.(*funcBolt).exec = func(tp Tuple, c *BoltCollector) error {
		_ = tp.Int(2)
		return nil
	}
	x.mustFail(x.execute(b), "ardea: field 2 (s) is string, not int64")
	x.r.bolt.(*funcBolt).exec = func(tp Tuple, c *BoltCollector) error {
		_ = tp.StringByName("missing")
		return nil
	}
	x.mustFail(x.execute(b), `has no field "missing"`)
}

func TestEmitValueKinds(t *testing.T) {
	ctx := wordContext("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o")
	x := newHarness(t, nil, &funcBolt{exec: func(tp Tuple, c *BoltCollector) error {
		c.Emit(nil, "s", Text("t"), []byte{9}, true, float64(1.5), float32(0.25), int(-1), int8(-2), int16(-3),
			int32(-4), int64(-5), uint8(6), uint16(7), uint32(8))
		c.Emit(nil, "", Text(nil), []byte(nil), false, 0.0, float32(0), uint(9), uint64(math.MaxInt64), 0, 0, 0, 0, 0, 0)
		return nil
	}})
	x.prepare(ctx)
	x.mustOK(x.execute(batchOf(nil)), 0, "execute")
	ops := x.h.ops()
	want := []tuple.Value{tuple.NullValue(), tuple.Str("s"), tuple.Str("t"), tuple.Bin([]byte{9}), tuple.Boolean(true),
		tuple.Float(1.5), tuple.Float(0.25), tuple.Int(-1), tuple.Int(-2), tuple.Int(-3), tuple.Int(-4), tuple.Int(-5),
		tuple.Int(6), tuple.Int(7), tuple.Int(8)}
	if len(ops) != 2 || !bytes.Equal(ops[0].Values, tuple.AppendValues(nil, want...)) {
		t.Fatalf("ops = %+v", ops)
	}
	want2 := []tuple.Value{tuple.NullValue(), tuple.Str(""), tuple.Str(""), tuple.Bin(nil), tuple.Boolean(false),
		tuple.Float(0), tuple.Float(0), tuple.Int(9), tuple.Int(math.MaxInt64), tuple.Int(0), tuple.Int(0), tuple.Int(0),
		tuple.Int(0), tuple.Int(0), tuple.Int(0)}
	if !bytes.Equal(ops[1].Values, tuple.AppendValues(nil, want2...)) {
		t.Errorf("second op values %x", ops[1].Values)
	}
}

func TestEmitErrorsFailTheCall(t *testing.T) {
	cases := []struct {
		name string
		emit func(Tuple, *BoltCollector)
		want string
	}{
		{"undeclared stream", func(tp Tuple, c *BoltCollector) { c.EmitTo("nope", 1) }, `undeclared stream "nope" (declared: "default", "side")`},
		{"too few values", func(tp Tuple, c *BoltCollector) { c.Emit("w") }, `1 values for 2 declared fields ["word" "count"]`},
		{"too many values", func(tp Tuple, c *BoltCollector) { c.EmitAnchoredTo("side", tp, 1, 2) }, "2 values for 1 declared fields"},
		{"unsupported type", func(tp Tuple, c *BoltCollector) { c.Emit("w", time.Second) }, "field 1 (count): unsupported type time.Duration"},
		{"uint64 overflow", func(tp Tuple, c *BoltCollector) { c.Emit("w", uint64(math.MaxUint64)) }, "unsigned value above math.MaxInt64"},
		{"direct to no task", func(tp Tuple, c *BoltCollector) { c.EmitDirect(tuple.NoTask, "side", 1) }, "not a direct target"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x := newHarness(t, nil, &funcBolt{exec: func(tp Tuple, c *BoltCollector) error {
				c.Emit("ok", 1)
				tc.emit(tp, c)
				if c.Err() == nil {
					t.Error("Err() is nil after a bad emit")
				}
				c.Emit("later", 2) // later emits are still accepted, then dropped with the call
				return nil
			}})
			x.prepare(wordContext("word", "count"))
			x.mustFail(x.execute(batchOf([]tuple.Value{tuple.Str("x")})), tc.want)
			if len(x.h.Emits) != 0 || x.h.Writes != 0 {
				t.Errorf("a failed call sent %d emit and %d state calls", len(x.h.Emits), x.h.Writes)
			}
		})
	}
}

func TestEmitOutsideEmittingCalls(t *testing.T) {
	var kept *BoltCollector
	x := newHarness(t, nil, &funcBolt{
		exec:  func(tp Tuple, c *BoltCollector) error { kept = c; return nil },
		close: func() error { kept.Emit("w", 1); return nil },
	})
	x.prepare(wordContext("word", "count"))
	x.mustOK(x.execute(batchOf(nil)), 0, "execute")
	x.mustFail(x.r.close(), "emit on stream \"default\" during Close")
	if len(x.h.Emits) != 0 {
		t.Error("Close emitted")
	}
}

func TestErrorDropsPendingWork(t *testing.T) {
	x := newHarness(t, nil, &funcBolt{exec: func(tp Tuple, c *BoltCollector) error {
		c.Emit("w", 1)
		c.Ack(tp)
		ctxState(c).Put("k", []byte("v"))
		c.r.addMetric("seen", 1)
		if tp.ID() == 2 {
			return errors.New("boom")
		}
		return nil
	}})
	x.prepare(wordContext("word", "count"))
	x.mustFail(x.execute(batchOf([]tuple.Value{tuple.Str("a")}, []tuple.Value{tuple.Str("b")})),
		"Execute: tuple 2 from split/default task 7: boom")
	if len(x.h.Emits) != 0 || x.h.Writes != 0 || len(x.h.State) != 0 {
		t.Errorf("failed call sent %d emits, %d state writes", len(x.h.Emits), x.h.Writes)
	}
	if x.h.Metrics["seen"] != 2 {
		t.Errorf("metrics %v (sent even when the call fails)", x.h.Metrics)
	}
	if x.r.state.cached("k") {
		t.Error("cache kept an unwritten entry")
	}
}

// ctxState reaches a collector's state (what a component keeps from Prepare).
func ctxState(c *BoltCollector) *State { return &c.r.state }

func TestPanicIsReported(t *testing.T) {
	_, file, _, _ := goruntime.Caller(0)
	x := newHarness(t, nil, &funcBolt{exec: func(tp Tuple, c *BoltCollector) error {
		c.Emit("w", 1)
		if tp.ID() == 2 {
			var m map[string]int
			m["x"] = 1 // a runtime panic
		}
		return nil
	}})
	x.prepare(wordContext("word", "count"))
	x.mustFail(x.execute(batchOf([]tuple.Value{tuple.Str("a")}, []tuple.Value{tuple.Str("b")}, []tuple.Value{tuple.Str("c")})),
		"Execute: tuple 2 from split/default task 7: panic: assignment to entry in nil map at "+file+":")
	// The frame named is the component's (the closure above), not the
	// runtime's or the SDK's; the cursor is at the failing record.
	if !regexp.MustCompile(`:\d+ \(github.com/ardea-dev/ardea/wasm-sdk/go\.TestPanicIsReported\.func1\)$`).MatchString(x.h.Errors[0]) {
		t.Errorf("error %q does not end with the user's frame", x.h.Errors[0])
	}
	if x.r.cursor != 1 || len(x.h.Emits) != 0 {
		t.Errorf("cursor %d (want 1), %d emits", x.r.cursor, len(x.h.Emits))
	}
	// The instance can still be driven (the host fails it, but nothing breaks).
	x.r.bolt.(*funcBolt).exec = nil
	x.mustOK(x.execute(batchOf([]tuple.Value{tuple.Str("a")})), 0, "execute after panic")

	// A panic inside the SDK, caused by the component (a field index out of
	// range), names the component's call, not the SDK's frame.
	x.r.bolt.(*funcBolt).exec = func(tp Tuple, c *BoltCollector) error {
		_ = tp.String(5)
		return nil
	}
	x.h.Errors = nil
	x.mustFail(x.execute(batchOf([]tuple.Value{tuple.Str("a")})), "Execute: tuple 1 from split/default task 7: panic: ")
	if !strings.HasSuffix(x.h.Errors[0], "(github.com/ardea-dev/ardea/wasm-sdk/go.TestPanicIsReported.func2)") || x.r.cursor != 0 {
		t.Errorf("error %q, cursor %d", x.h.Errors[0], x.r.cursor)
	}

	// A panic inside the standard library names the component's call.
	x.r.bolt.(*funcBolt).exec = func(tp Tuple, c *BoltCollector) error {
		_ = strings.Repeat("x", -1)
		return nil
	}
	x.h.Errors = nil
	x.mustFail(x.execute(batchOf([]tuple.Value{tuple.Str("a")})), "panic: strings: negative Repeat count at "+file+":")
	if !strings.HasSuffix(x.h.Errors[0], "(github.com/ardea-dev/ardea/wasm-sdk/go.TestPanicIsReported.func3)") {
		t.Errorf("error %q", x.h.Errors[0])
	}
	for fn, want := range map[string]bool{"strings.Repeat": true, "main.(*probe).execute": false, "encoding/json.Marshal": true,
		"example.com/x/y.F": false, "github.com/a/b.(*T).M": false, "internal/abi.X": true, "my-upper/sub.F": true} {
		if stdlib(fn) != want {
			t.Errorf("stdlib(%q) = %v", fn, !want)
		}
	}

	// Panics outside Execute are reported the same way, without a tuple.
	y := newHarness(t, nil, &funcBolt{prepare: func(*Context) error { panic(errors.New("no config")) }})
	wc := wordContext("w")
	y.mustFail(y.r.prepare(y.put(wc.Encode(nil))), "Prepare: panic: no config at "+file+":")
	if !strings.HasSuffix(y.h.Errors[0], "TestPanicIsReported.func4)") {
		t.Errorf("error %q", y.h.Errors[0])
	}
}

// The cursor is the index of the record being executed: one store per
// record, the value the host reads when a call fails.
func TestCursor(t *testing.T) {
	var seen []uint32
	var x *harness
	x = newHarness(t, nil, &funcBolt{exec: func(tp Tuple, c *BoltCollector) error {
		seen = append(seen, x.r.cursor)
		if tp.String(0) == "bad" {
			return errors.New("bad tuple")
		}
		return nil
	}})
	x.prepare(wordContext("word", "count"))
	x.mustOK(x.execute(batchOf([]tuple.Value{tuple.Str("a")}, []tuple.Value{tuple.Str("b")}, []tuple.Value{tuple.Str("c")})), 0, "execute")
	if !slices.Equal(seen, []uint32{0, 1, 2}) {
		t.Errorf("cursor during Execute %v, want [0 1 2]", seen)
	}
	seen = nil
	x.mustFail(x.execute(batchOf([]tuple.Value{tuple.Str("a")}, []tuple.Value{tuple.Str("bad")}, []tuple.Value{tuple.Str("c")})),
		"Execute: tuple 2 from split/default task 7: bad tuple")
	if x.r.cursor != 1 || !slices.Equal(seen, []uint32{0, 1}) {
		t.Errorf("cursor %d after the failure at record 1 (seen %v)", x.r.cursor, seen)
	}
}

func TestWrongKindAndOrder(t *testing.T) {
	wc := wordContext("word")
	ctx := wc.Encode(nil)
	spout := newHarness(t, &BaseSpout{}, nil)
	spout.mustFail(spout.r.prepare(spout.put(ctx)), "ardea_prepare is a bolt export, but this module registers a spout")
	spout.mustFail(spout.execute(batchOf()), "ardea_execute is a bolt export")
	spout.mustFail(spout.r.tick(), "ardea_tick is a bolt export")
	spout.mustFail(spout.r.finish(), "ardea_finish is a bolt export")
	spout.mustFail(spout.r.next(1), "ardea_next called before a successful ardea_open")

	bolt := newHarness(t, nil, &BaseBolt{})
	bolt.mustFail(bolt.r.open(bolt.put(ctx)), "ardea_open is a spout export, but this module registers a bolt")
	bolt.mustFail(bolt.r.next(1), "ardea_next is a spout export")
	bolt.mustFail(bolt.r.ackFailIDs(bolt.put([]byte{0, 0, 0, 0}), false), "ardea_ack is a spout export")
	bolt.mustFail(bolt.r.ackFailIDs(bolt.put([]byte{0, 0, 0, 0}), true), "ardea_fail is a spout export")
	bolt.mustFail(bolt.r.activate(true), "ardea_activate is a spout export")
	bolt.mustFail(bolt.r.activate(false), "ardea_deactivate is a spout export")
	bolt.mustFail(bolt.execute(batchOf()), "ardea_execute called before a successful ardea_prepare")
	bolt.mustFail(bolt.r.prepare(bolt.put(ctx[:5])), "Prepare: context: tuple: truncated input")
	bolt.mustFail(bolt.r.prepare(1<<30), "exceeds the")

	none := newHarness(t, nil, nil)
	none.mustFail(none.r.prepare(none.put(ctx)), "no component registered (call ardea.RegisterBolt from an init function)")
	none.mustFail(none.r.open(none.put(ctx)), "call ardea.RegisterSpout")
	none.mustFail(none.r.close(), "no component registered")
}

func TestMalformedBatches(t *testing.T) {
	x := newHarness(t, nil, &BaseBolt{})
	x.prepare(wordContext("word"))
	var w tuple.BatchWriter
	w.Reset()
	w.Append(0, 3, 0, []byte{1, 0, 5, 2})
	x.mustFail(x.execute(w.Buf), "batch record 0 from split/default task 3: field 0: bool payload 2 is not 0 or 1")
	w.Reset()
	w.Append(2, 3, 0, tuple.AppendValues(nil))
	x.mustFail(x.execute(w.Buf), "input index 2, but the context declares 2 inputs")
	x.mustFail(x.execute([]byte{1, 0, 0, 0}), "batch record 0")
	x.mustFail(x.r.execute(-1), "input length -1")
}

func TestTickFinishCloseDispatch(t *testing.T) {
	var calls []string
	x := newHarness(t, nil, &funcBolt{
		tick:   func(c *BoltCollector) error { calls = append(calls, "tick"); c.EmitTo("side", "t"); return nil },
		finish: func(c *BoltCollector) error { calls = append(calls, "finish"); c.Emit("f", 1); return nil },
		close:  func() error { calls = append(calls, "close"); return errors.New("close failed") },
	})
	x.prepare(wordContext("word", "count"))
	x.mustOK(x.r.tick(), 0, "tick")
	x.mustOK(x.r.finish(), 0, "finish")
	x.mustFail(x.r.close(), "Close: close failed")
	if strings.Join(calls, ",") != "tick,finish,close" || len(x.h.Emits) != 2 {
		t.Errorf("calls %q, %d emit calls", calls, len(x.h.Emits))
	}
	x.r.bolt.(*funcBolt).tick = func(*BoltCollector) error { return errors.New("tick failed") }
	x.mustFail(x.r.tick(), "Tick: tick failed")
}

func TestLargeOutputIsFlushedIn64KiBChunks(t *testing.T) {
	big := bytes.Repeat([]byte{'x'}, 100_000)
	x := newHarness(t, nil, &funcBolt{exec: func(tp Tuple, c *BoltCollector) error {
		for i := range 5000 {
			c.Emit("word", i)
		}
		c.EmitTo("side", big) // one op larger than the flush size
		c.Emit("last", 1)
		return nil
	}})
	x.prepare(wordContext("word", "count"))
	x.mustOK(x.execute(batchOf(nil)), 0, "execute")
	if len(x.h.Emits) < 3 {
		t.Fatalf("%d emit calls", len(x.h.Emits))
	}
	for i, e := range x.h.Emits[:len(x.h.Emits)-1] {
		if len(e) < outFlush || len(e) > outFlush+len(big)+64 {
			t.Errorf("emit call %d has %d bytes", i, len(e))
		}
	}
	if ops := x.h.ops(); len(ops) != 5002 || !bytes.Contains(ops[5000].Values, big) {
		t.Errorf("%d ops", len(ops))
	}
}

func TestMetricsAndLogs(t *testing.T) {
	x := newHarness(t, nil, &funcBolt{
		prepare: func(c *Context) error {
			l := c.Logger()
			l.Info("ready", "component", c.Component(), "task", c.TaskID(), "note", "two words", "empty", "", "err", errors.New("x=y"))
			l.Debug("odd", "dangling")
			l.Warnf("w %d", 1)
			l.Errorf("e %s", "f")
			l.Error("plain")
			l.Debugf("d")
			l.Infof("i")
			l.Warn("w")
			return nil
		},
		exec: func(tp Tuple, c *BoltCollector) error {
			ctx := c.r.ctx
			ctx.Metric("tuples", 1)
			ctx.Metric("bytes", int64(len(tp.Raw())))
			ctx.Metric("zero", 0)
			ctx.Gauge("depth", float64(len(tp.Raw())))
			ctx.Observe("size", int64(len(tp.Raw())))
			return nil
		},
	})
	x.prepare(wordContext("word"))
	want := []fakehost.Log{
		{Level: LevelInfo, Msg: `ready component=count task=4 note="two words" empty="" err="x=y"`},
		{Level: LevelDebug, Msg: "odd !BADKEY=dangling"},
		{Level: LevelWarn, Msg: "w 1"}, {Level: LevelError, Msg: "e f"}, {Level: LevelError, Msg: "plain"}, {Level: LevelDebug, Msg: "d"}, {Level: LevelInfo, Msg: "i"}, {Level: LevelWarn, Msg: "w"},
	}
	if len(x.h.Logs) != len(want) {
		t.Fatalf("logs %q", x.h.Logs)
	}
	for i := range want {
		if x.h.Logs[i] != want[i] {
			t.Errorf("log %d = %+v, want %+v", i, x.h.Logs[i], want[i])
		}
	}
	x.mustOK(x.execute(batchOf(nil, nil, nil)), 0, "execute")
	if x.h.MetricCalls != 2 || x.h.Metrics["tuples"] != 3 || x.h.Metrics["bytes"] != 6 {
		t.Errorf("metric calls %d: %v", x.h.MetricCalls, x.h.Metrics)
	}
	x.mustOK(x.execute(batchOf(nil)), 0, "execute")
	if x.h.MetricCalls != 4 || x.h.Metrics["tuples"] != 4 {
		t.Errorf("second call: metric calls %d: %v", x.h.MetricCalls, x.h.Metrics)
	}
	// Gauges keep the last value; every observation reaches the host.
	if x.h.Gauges["depth"] != 2 || !slices.Equal(x.h.Observed["size"], []int64{2, 2, 2, 2}) {
		t.Errorf("gauges %v, observed %v", x.h.Gauges, x.h.Observed)
	}
}

func TestRegisterGlobal(t *testing.T) {
	defer func() { global.spout, global.bolt = nil, nil }()
	RegisterBolt(&BaseBolt{})
	if global.bolt == nil {
		t.Fatal("RegisterBolt did not register")
	}
	for _, f := range []func(){func() { RegisterSpout(&BaseSpout{}) }, func() { RegisterBolt(nil) }, func() { RegisterSpout(nil) }} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		}()
	}
	if s := Status(7).String() + More.String() + Idle.String() + Done.String(); s != "status(7)moreidledone" {
		t.Error(s)
	}
}

// TestExecuteAllocations checks the hot path: a split-like bolt that
// emits views of its input and acks allocates nothing per batch.
func TestExecuteAllocations(t *testing.T) {
	x := newHarness(t, nil, &funcBolt{exec: func(tp Tuple, c *BoltCollector) error {
		line := tp.BytesView(0)
		for len(line) > 0 {
			i := bytes.IndexByte(line, ' ')
			if i < 0 {
				i = len(line)
			}
			c.EmitAnchored(tp, Text(line[:i]))
			line = line[min(i+1, len(line)):]
		}
		c.Ack(tp)
		return nil
	}})
	x.prepare(wordContext("word"))
	x.h.NoRecord = true
	var recs [][]tuple.Value
	for range 100 {
		recs = append(recs, []tuple.Value{tuple.Str("the quick brown fox jumps over the lazy dog")})
	}
	n := x.put(batchOf(recs...))
	x.mustOK(x.r.execute(n), 0, "execute")
	allocs := testing.AllocsPerRun(20, func() {
		x.h.Emits = x.h.Emits[:0]
		if x.r.execute(n) != 0 {
			t.Fatal(x.h.Errors)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per batch, want 0", allocs)
	}
}

// BenchmarkExecute measures the dispatcher with split- and count-like
// bolts over 100-line batches (no host: the fake keeps no bytes). "count"
// uses the string-keyed API (StateKey, AddInt), "count-bytes" the
// allocation-free one (StateKeyView, AddIntBytes, Text).
func BenchmarkExecute(b *testing.B) {
	line := "the quick brown fox jumps over the lazy dog and keeps on running"
	var recs [][]tuple.Value
	for range 100 {
		recs = append(recs, []tuple.Value{tuple.Str(line)})
	}
	batch := batchOf(recs...)
	split := func(tp Tuple, c *BoltCollector) error {
		rest := tp.BytesView(0)
		for len(rest) > 0 {
			i := bytes.IndexByte(rest, ' ')
			if i < 0 {
				i = len(rest)
			}
			c.EmitAnchored(tp, Text(rest[:i]))
			rest = rest[min(i+1, len(rest)):]
		}
		c.Ack(tp)
		return nil
	}
	count := func(tp Tuple, c *BoltCollector) error {
		key := StateKey(tp, "word")
		c.EmitAnchored(tp, key, c.r.state.AddInt(key, 1))
		c.Ack(tp)
		return nil
	}
	countBytes := func(tp Tuple, c *BoltCollector) error {
		w := StateKeyView(tp, "word")
		c.EmitAnchored(tp, Text(w), c.r.state.AddIntBytes(w, 1))
		c.Ack(tp)
		return nil
	}
	var words [][]tuple.Value
	for _, w := range strings.Fields(line) {
		words = append(words, []tuple.Value{tuple.Str(w)})
	}
	for _, bc := range []struct {
		name  string
		exec  func(Tuple, *BoltCollector) error
		batch []byte
		out   []string
	}{
		{"split", split, batch, []string{"word"}},
		{"count", count, batchOf(words...), []string{"word", "count"}},
		{"count-bytes", countBytes, batchOf(words...), []string{"word", "count"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			x := newHarness(b, nil, &funcBolt{exec: bc.exec})
			x.prepare(wordContext(bc.out...))
			x.h.NoRecord = true
			n := x.put(bc.batch)
			b.ReportAllocs()
			for b.Loop() {
				x.h.Emits = x.h.Emits[:0]
				x.h.WriteOps = x.h.WriteOps[:0]
				if x.r.execute(n) != 0 {
					b.Fatal(x.h.Errors)
				}
			}
		})
	}
}
