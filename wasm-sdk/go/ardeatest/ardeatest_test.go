package ardeatest_test

import (
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	ardea "github.com/ardea-dev/ardea/wasm-sdk/go"
	"github.com/ardea-dev/ardea/wasm-sdk/go/ardeatest"
)

// counter counts words in host-side state, emits (word, count) on
// "default" and a total on "stats" at Tick, logs and records metrics.
type counter struct {
	ardea.BaseBolt
	ctx   *ardea.Context
	seen  int
	final bool
}

func (c *counter) Prepare(ctx *ardea.Context) error {
	c.ctx = ctx
	ctx.Logger().Info("prepared", "task", ctx.TaskIndex(), "min", ctx.ConfigOr("min", "1"))
	return nil
}

func (c *counter) Execute(t ardea.Tuple, out *ardea.BoltCollector) error {
	w := t.StringByName("word")
	switch w {
	case "bad":
		out.Fail(t)
		return nil
	case "error":
		return errors.New("cannot count this")
	case "panic":
		var m map[string]int
		m[w]++
	}
	n := c.ctx.State().AddInt(w, 1)
	c.seen++
	c.ctx.Metric("words", 1)
	c.ctx.Observe("len", int64(len(w)))
	c.ctx.Gauge("last", float64(n))
	out.Emit(w, n)
	return nil
}

func (c *counter) Tick(out *ardea.BoltCollector) error {
	out.EmitTo("stats", int64(c.seen))
	return nil
}

func (c *counter) Finish(out *ardea.BoltCollector) error {
	c.final = true
	out.EmitTo("stats", int64(-1))
	return nil
}

var counterDecls = []ardea.Declaration{ardea.Reads("word"), ardea.Emits("default", "word", "count"), ardea.Emits("stats", "seen"), ardea.ConfigKeys("min")}

func i64(n int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(n)) }

func TestBolt(t *testing.T) {
	c := &counter{}
	h := ardeatest.NewBolt(t, c, ardeatest.Task{
		Component: "count", TaskIndex: 1, Parallelism: 2, Config: map[string]string{"min": "3"},
		State: map[string][]byte{"the": i64(40)}, // state from before a restart
	}, counterDecls...)
	if got := h.State(); len(got) != 1 {
		t.Fatalf("seeded state %v", got)
	}
	if err := h.ExecuteBatch(ardeatest.In{Values: []any{"the"}}, ardeatest.In{Fields: map[string]any{"word": "fox"}}, ardeatest.In{Values: []any{"bad"}}); err != nil {
		t.Fatal(err)
	}
	want := []string{"default[the 41] anchors [1]", "default[fox 1] anchors [2]"}
	var got []string
	for _, e := range h.Emits("default") {
		got = append(got, e.String())
	}
	if !slices.Equal(got, want) {
		t.Errorf("emits %q, want %q", got, want)
	}
	if !slices.Equal(h.Acked(), []uint64{1, 2}) || !slices.Equal(h.Failed(), []uint64{3}) {
		t.Errorf("acked %v failed %v", h.Acked(), h.Failed())
	}
	if st := h.State(); binary.LittleEndian.Uint64(st["the"]) != 41 || binary.LittleEndian.Uint64(st["fox"]) != 1 {
		t.Errorf("state after %v", st)
	}
	if !slices.Equal(h.StateKeys(), []string{"fox", "the"}) {
		t.Errorf("state keys %q", h.StateKeys())
	}
	if logs := h.Logs(); len(logs) != 1 || logs[0] != (ardeatest.Log{Level: ardea.LevelInfo, Msg: "prepared task=1 min=3"}) {
		t.Errorf("logs %+v", logs)
	}
	if h.Counters()["words"] != 2 || !slices.Equal(h.Histograms()["len"], []int64{3, 3}) || h.Gauges()["last"] != 1 {
		t.Errorf("metrics %v %v %v", h.Counters(), h.Histograms(), h.Gauges())
	}

	// Tick and Finish emit on "stats".
	if err := h.Tick(); err != nil {
		t.Fatal(err)
	}
	if err := h.Finish(); err != nil || !c.final {
		t.Fatal(err)
	}
	if st := h.Emits("stats"); len(st) != 2 || st[0].Values[0] != int64(2) || st[1].Values[0] != int64(-1) || len(st[0].Anchors) != 0 {
		t.Errorf("stats %v", st)
	}

	// A failing tuple: the call's error, the cursor at it, nothing of the
	// call kept.
	h.Clear()
	err := h.ExecuteBatch(ardeatest.In{Values: []any{"a"}}, ardeatest.In{Values: []any{"panic"}}, ardeatest.In{Values: []any{"b"}})
	var ce *ardeatest.CallError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "Execute: tuple 5 from upstream/default task 1: panic: assignment to entry in nil map at ") ||
		!strings.Contains(err.Error(), "ardeatest_test.go:") || h.Cursor() != 1 {
		t.Errorf("panicking tuple: %v, cursor %d", err, h.Cursor())
	}
	if len(h.AllEmits()) != 0 || len(h.Acked()) != 0 || h.State()["a"] != nil {
		t.Errorf("a failed call kept %v %v %v", h.AllEmits(), h.Acked(), h.State())
	}
	if err := h.Execute("error"); err == nil || !strings.HasSuffix(err.Error(), "cannot count this") || len(h.Errors()) != 2 {
		t.Errorf("error: %v (%q)", err, h.Errors())
	}
	// An untracked tuple is neither anchored nor acked.
	h.Clear()
	if err := h.ExecuteBatch(ardeatest.In{Values: []any{"x"}, Untracked: true}); err != nil || len(h.Acked()) != 0 || len(h.Emits("default")[0].Anchors) != 0 {
		t.Errorf("untracked: %v %v %v", err, h.Acked(), h.AllEmits())
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if m := h.Manifest(); !strings.Contains(m, `"outputs":[{"stream":"default","fields":["word","count"]},{"stream":"stats","fields":["seen"]}],"inputs":["word"],"config":["min"]`) {
		t.Errorf("manifest %s", m)
	}
}

// The declarations are checked as ardea run checks them, and emits as the
// host checks them.
func TestDeclarationsChecked(t *testing.T) {
	h := ardeatest.NewBolt(t, &counter{}, ardeatest.Task{Outputs: []ardea.Stream{{Name: "default", Fields: []string{"token", "count"}}}}, counterDecls...)
	if err := h.Prepare(); err == nil || !strings.Contains(err.Error(), `Task.Outputs {default:["token" "count"]} differ from the streams component declares (ardea.Emits) {default:["word" "count"], stats:["seen"]}`) {
		t.Errorf("outputs mismatch: %v", err)
	}
	h = ardeatest.NewBolt(t, &counter{}, ardeatest.Task{Inputs: []ardea.Input{{Component: "split", Stream: "default", Fields: []string{"token"}}}}, counterDecls...)
	if err := h.Prepare(); err == nil || !strings.Contains(err.Error(), `input split/default has fields ["token"], but component reads field "word"`) {
		t.Errorf("inputs mismatch: %v", err)
	}
	// Without declarations the bolt reads a field its input lacks: the
	// tuple fails, naming the field and the tuple's fields.
	h = ardeatest.NewBolt(t, &counter{}, ardeatest.Task{
		Inputs:  []ardea.Input{{Component: "split", Stream: "default", Fields: []string{"token"}}},
		Outputs: []ardea.Stream{{Name: "default", Fields: []string{"word"}}},
	})
	if err := h.Execute("x"); err == nil || !strings.Contains(err.Error(), `panic: ardea: the tuple from split/default has no field "word" (it has fields "token")`) {
		t.Errorf("undeclared field: %v", err)
	}
	// An emit with the wrong number of values, or on an undeclared stream,
	// fails the call.
	h = ardeatest.NewBolt(t, &counter{}, ardeatest.Task{}, ardea.Reads("word"), ardea.Emits("default", "word"))
	if err := h.Execute("x"); err == nil || !strings.Contains(err.Error(), `emit on stream "default": 2 values for 1 declared fields ["word"]`) {
		t.Errorf("wrong count: %v", err)
	}
	h = ardeatest.NewBolt(t, &counter{}, ardeatest.Task{}, ardea.Reads("word"), ardea.Emits("default", "word", "count"))
	if err := h.Tick(); err == nil || !strings.Contains(err.Error(), `emit on undeclared stream "stats" (declared: "default")`) {
		t.Errorf("undeclared stream: %v", err)
	}
}

// numbers emits "n1".."nN" with message ids, N from config "count".
type numbers struct {
	ardea.BaseSpout
	n, limit int
	acked    []uint64
	failed   []uint64
	active   bool
}

func (s *numbers) Open(ctx *ardea.Context) error {
	n, err := ctx.ConfigInt("count", 10)
	s.limit, s.active = int(n), true
	return err
}

func (s *numbers) Next(c *ardea.SpoutCollector) (ardea.Status, error) {
	if s.n >= s.limit {
		return ardea.Done, nil
	}
	s.n++
	c.EmitWithID(uint64(s.n), "n"+strconv.Itoa(s.n))
	return ardea.More, nil
}

func (s *numbers) Ack(id uint64)  { s.acked = append(s.acked, id) }
func (s *numbers) Fail(id uint64) { s.failed = append(s.failed, id) }
func (s *numbers) Activate()      { s.active = true }
func (s *numbers) Deactivate()    { s.active = false }

func TestSpout(t *testing.T) {
	s := &numbers{}
	h := ardeatest.NewSpout(t, s, ardeatest.Task{Config: map[string]string{"count": "5"}}, ardea.Emits("default", "line"), ardea.ConfigKeys("count"))
	// The SDK calls Next while it emits, up to the host's budget.
	if st, err := h.Next(3); err != nil || st != ardea.More || len(h.Emits("default")) != 3 {
		t.Fatalf("Next(3) = %v, %v; %v", st, err, h.AllEmits())
	}
	h.Drain(10, 5)
	var lines []string
	for _, e := range h.Emits("default") {
		lines = append(lines, e.Values[0].(string)+"/"+strconv.FormatUint(e.MsgID, 10))
	}
	if !slices.Equal(lines, []string{"n1/1", "n2/2", "n3/3", "n4/4", "n5/5"}) || !h.Done() {
		t.Errorf("emitted %q, done %v", lines, h.Done())
	}
	if err := h.Ack(1, 2); err != nil {
		t.Fatal(err)
	}
	if err := h.Fail(3); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.acked, []uint64{1, 2}) || !slices.Equal(s.failed, []uint64{3}) {
		t.Errorf("acked %v failed %v", s.acked, s.failed)
	}
	if err := h.Deactivate(); err != nil || s.active {
		t.Errorf("deactivate: %v %v", err, s.active)
	}
	if err := h.Activate(); err != nil || !s.active {
		t.Errorf("activate: %v %v", err, s.active)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	// A bad config value fails Open.
	bad := ardeatest.NewSpout(t, &numbers{}, ardeatest.Task{Config: map[string]string{"count": "ten"}}, ardea.Emits("default", "line"))
	if err := bad.Open(); err == nil || !strings.Contains(err.Error(), "Open: config count of component component") {
		t.Errorf("bad config: %v", err)
	}
}
