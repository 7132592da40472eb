package conformance_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// languages are the SDKs whose guests must behave identically.
var languages = []string{"go", "rust", "c", "assemblyscript"}

func guest(lang, name string) string {
	return filepath.Join("..", lang, "testdata", name+".wasm")
}

// op is one thing a guest sent through the collector, decoded.
type op struct {
	kind    string // emit, ack, fail
	stream  uint16
	direct  uint32
	msgID   uint64
	anchors []uint64
	values  string // tuple values as text: "s:word i:3"
}

func (o op) String() string {
	switch o.kind {
	case "emit":
		d := ""
		if o.direct != tuple.NoTask {
			d = fmt.Sprintf(" direct=%d", o.direct)
		}
		return fmt.Sprintf("emit stream=%d%s msg=%d anchors=%v %s", o.stream, d, o.msgID, o.anchors, o.values)
	}
	return fmt.Sprintf("%s %d", o.kind, o.msgID)
}

// recorder is the collector: it keeps every op, in order.
type recorder struct {
	mu  sync.Mutex
	ops []op
}

func (r *recorder) Emit(stream uint16, direct uint32, msgID uint64, anchors, values []byte) error {
	vals, _, err := tuple.DecodeValues(nil, values)
	if err != nil {
		return err
	}
	var txt []string
	for _, v := range vals {
		switch v.Kind {
		case tuple.String:
			txt = append(txt, "s:"+string(v.B))
		case tuple.Int64:
			txt = append(txt, fmt.Sprintf("i:%d", v.I))
		default:
			txt = append(txt, fmt.Sprintf("%v:%v", v.Kind, v))
		}
	}
	o := op{kind: "emit", stream: stream, direct: direct, msgID: msgID, values: strings.Join(txt, " ")}
	for i := 0; i+8 <= len(anchors); i += 8 {
		o.anchors = append(o.anchors, binary.LittleEndian.Uint64(anchors[i:]))
	}
	r.mu.Lock()
	r.ops = append(r.ops, o)
	r.mu.Unlock()
	return nil
}

func (r *recorder) Ack(id uint64) error  { r.add(op{kind: "ack", msgID: id}); return nil }
func (r *recorder) Fail(id uint64) error { r.add(op{kind: "fail", msgID: id}); return nil }
func (r *recorder) add(o op) {
	r.mu.Lock()
	r.ops = append(r.ops, o)
	r.mu.Unlock()
}

// take returns the emits and the acks/fails recorded since the last take
// (an SDK may order emits and acks differently within one call, but each
// kind keeps its order).
func (r *recorder) take() (emits, acks []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.ops {
		if o.kind == "emit" {
			emits = append(emits, o.String())
		} else {
			acks = append(acks, o.String())
		}
	}
	r.ops = nil
	return emits, acks
}

// logs records the guest's log lines.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) Enabled(context.Context, slog.Level) bool { return true }
func (l *logs) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.lines = append(l.lines, r.Level.String()+" "+r.Message)
	l.mu.Unlock()
	return nil
}
func (l *logs) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logs) WithGroup(string) slog.Handler      { return l }
func (l *logs) has(line string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.lines, line)
}
func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// counters records user metrics: counters, gauges and observations.
type counters struct {
	mu       sync.Mutex
	m        map[string]int64
	gauges   map[string]float64
	observed map[string][]int64
}

func (c *counters) gauge(name string, v float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gauges == nil {
		c.gauges = map[string]float64{}
	}
	c.gauges[name] = v
}

func (c *counters) observe(name string, v int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.observed == nil {
		c.observed = map[string][]int64{}
	}
	c.observed[name] = append(c.observed[name], v)
}

func (c *counters) add(name string, d int64) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]int64{}
	}
	c.m[name] += d
	c.mu.Unlock()
}
func (c *counters) get(name string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[name]
}

// rig is one guest instance wired to recording parts.
type rig struct {
	rt      *host.Runtime
	log     *logs
	out     *recorder
	metrics *counters
	state   *host.MemoryState
	// onFailure is the bolts' InstanceConfig.OnTupleFailure (nil: the
	// host's default).
	onFailure func(host.TupleFailure) error
}

// cacheDir shares compiled code between the tests' runtimes and with
// other packages' tests (testutil.CompileCache).
var cacheDir = testutil.CompileCache()

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{log: &logs{}, out: &recorder{}, metrics: &counters{}, state: host.NewMemoryState(256)}
	rt, err := host.NewRuntime(context.Background(), host.Config{Logger: slog.New(r.log), CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	r.rt = rt
	return r
}

func (r *rig) compile(t *testing.T, path string) *host.Module {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("guest %s is missing (build it with the SDK's build.sh): %v", path, err)
	}
	m, err := r.rt.Compile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

const taskID = 7

func boltContext(r *rig) plugin.TaskContext {
	return plugin.TaskContext{
		Context: tuple.Context{
			Topology: "conformance", Component: "probe", TaskID: taskID, TaskIndex: 1, Parallelism: 3,
			Config: map[string]string{"prefix": "p-", "zeta": "z"},
			Outputs: []tuple.StreamDecl{
				{Name: "default", Fields: []string{"word", "n"}},
				{Name: "events", Fields: []string{"kind", "detail"}},
			},
			Inputs: []tuple.InputDecl{{Component: "words", Stream: "default", Fields: []string{"word"}}},
		},
		State:        r.state,
		MaxKeyGroups: 256,
		Metric:       r.metrics.add,
		Gauge:        r.metrics.gauge,
		Observe:      r.metrics.observe,
	}
}

func (r *rig) bolt(t *testing.T, path string) plugin.Bolt {
	t.Helper()
	return r.boltWith(t, path, nil)
}

// boltWith prepares the probe bolt with extra config pairs.
func (r *rig) boltWith(t *testing.T, path string, extra map[string]string) plugin.Bolt {
	t.Helper()
	m := r.compile(t, path)
	b, err := m.NewBolt(context.Background(), host.InstanceConfig{
		Topology: "conformance", Component: "probe", TaskID: taskID, Logger: slog.New(r.log),
		OnTupleFailure: r.onFailure,
	})
	if err != nil {
		t.Fatal(err)
	}
	bc := boltContext(r)
	for k, v := range extra {
		bc.Config[k] = v
	}
	if err := b.Prepare(context.Background(), bc, r.out); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	return b
}

// word is one input tuple: a word and its tuple id (0 = untracked).
type word struct {
	w  string
	id uint64
}

func batch(words ...word) []byte {
	var bw tuple.BatchWriter
	bw.Reset()
	for _, w := range words {
		bw.Append(0, 3, w.id, tuple.AppendValues(nil, tuple.Str(w.w)))
	}
	return bw.Buf
}

func same(t *testing.T, step, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: %s:\ngot  %q\nwant %q", step, what, got, want)
	}
}

func stateInt(t *testing.T, s *host.MemoryState, key string) (int64, bool) {
	t.Helper()
	v, ok := s.Get([]byte(key))
	if !ok {
		return 0, false
	}
	if len(v) != 8 {
		t.Fatalf("state %q holds %d bytes, want an 8-byte int64", key, len(v))
	}
	return int64(binary.LittleEndian.Uint64(v)), true
}

func TestProbeBolt(t *testing.T) {
	for _, lang := range languages {
		t.Run(lang, func(t *testing.T) {
			r := newRig(t)
			b := r.bolt(t, guest(lang, "probe_bolt"))
			if want := fmt.Sprintf("INFO prepared probe task %d of 3", taskID); !r.log.has(want) {
				t.Errorf("prepare: log lacks %q; got:\n%s", want, r.log)
			}

			// Batch 1: counting, untracked tuples, fail, log, config,
			// multi-anchoring and a direct emit.
			err := b.Execute(context.Background(), batch(
				word{"a", 11}, word{"b", 12}, word{"a", 13}, word{"log", 14}, word{"fail", 15},
				word{"config", 16}, word{"multi", 17}, word{"direct:5", 18}, word{"a", 0},
			), r.out)
			if err != nil {
				t.Fatalf("execute 1: %v", err)
			}
			emits, acks := r.out.take()
			same(t, "execute 1", "emits", emits, []string{
				"emit stream=0 msg=0 anchors=[11] s:p-a i:1",
				"emit stream=0 msg=0 anchors=[12] s:p-b i:1",
				"emit stream=0 msg=0 anchors=[13] s:p-a i:2",
				"emit stream=1 msg=0 anchors=[16] s:config s:prefix=p-,zeta=z",
				"emit stream=0 msg=0 anchors=[17 16] s:multi i:2",
				"emit stream=0 direct=5 msg=0 anchors=[18] s:direct:5 i:0",
				"emit stream=0 msg=0 anchors=[] s:p-a i:3",
			})
			same(t, "execute 1", "acks and fails", acks, []string{
				"ack 11", "ack 12", "ack 13", "ack 14", "fail 15", "ack 16", "ack 17", "ack 18",
			})
			if !r.log.has("WARN probe log") {
				t.Errorf("execute 1: log lacks %q; got:\n%s", "WARN probe log", r.log)
			}
			if got := r.metrics.get("probe.words"); got != 4 {
				t.Errorf("execute 1: metric probe.words = %d, want 4", got)
			}
			// The write-back cache must have reached the host by now.
			if n, _ := stateInt(t, r.state, "a"); n != 3 {
				t.Errorf("execute 1: host state a = %d, want 3", n)
			}
			if n, _ := stateInt(t, r.state, "b"); n != 1 {
				t.Errorf("execute 1: host state b = %d, want 1", n)
			}

			// Batch 2: scan and delete.
			if err := b.Execute(context.Background(), batch(word{"scan", 21}, word{"delete:b", 22}, word{"scan", 23}), r.out); err != nil {
				t.Fatalf("execute 2: %v", err)
			}
			emits, acks = r.out.take()
			same(t, "execute 2", "emits", emits, []string{
				"emit stream=1 msg=0 anchors=[21] s:state s:a=3",
				"emit stream=1 msg=0 anchors=[21] s:state s:b=1",
				"emit stream=1 msg=0 anchors=[22] s:deleted s:b",
				"emit stream=1 msg=0 anchors=[23] s:state s:a=3",
			})
			same(t, "execute 2", "acks", acks, []string{"ack 21", "ack 22", "ack 23"})
			if _, ok := stateInt(t, r.state, "b"); ok {
				t.Errorf("execute 2: host state still holds b after delete:b")
			}

			// Ticks and finish.
			for range 2 {
				if err := b.Tick(context.Background(), r.out); err != nil {
					t.Fatalf("tick: %v", err)
				}
			}
			if err := b.Finish(context.Background(), r.out); err != nil {
				t.Fatalf("finish: %v", err)
			}
			emits, acks = r.out.take()
			same(t, "tick, tick, finish", "emits", emits, []string{
				"emit stream=1 msg=0 anchors=[] s:tick s:1",
				"emit stream=1 msg=0 anchors=[] s:tick s:2",
				"emit stream=1 msg=0 anchors=[] s:finish s:12",
			})
			same(t, "tick, tick, finish", "acks", acks, nil)
			if err := b.Close(context.Background()); err != nil {
				t.Errorf("close: %v", err)
			}

			// The state belongs to the task: a new instance goes on counting.
			b2 := r.bolt(t, guest(lang, "probe_bolt"))
			if err := b2.Execute(context.Background(), batch(word{"a", 31}), r.out); err != nil {
				t.Fatalf("execute after restart: %v", err)
			}
			emits, _ = r.out.take()
			same(t, "execute after restart", "emits", emits, []string{"emit stream=0 msg=0 anchors=[31] s:p-a i:4"})
			_ = b2.Close(context.Background())
		})
	}
}

// TestProbeBoltUserMetrics checks the gauge and histogram imports (the
// counter is covered by TestProbeBolt).
func TestProbeBoltUserMetrics(t *testing.T) {
	for _, lang := range languages {
		t.Run(lang, func(t *testing.T) {
			r := newRig(t)
			b := r.bolt(t, guest(lang, "probe_bolt"))
			if err := b.Execute(context.Background(), batch(word{"metrics", 41}, word{"a", 42}), r.out); err != nil {
				t.Fatalf("execute: %v", err)
			}
			emits, acks := r.out.take()
			same(t, "metrics", "emits", emits, []string{"emit stream=0 msg=0 anchors=[42] s:p-a i:1"})
			same(t, "metrics", "acks", acks, []string{"ack 41", "ack 42"})
			r.metrics.mu.Lock()
			defer r.metrics.mu.Unlock()
			if g, ok := r.metrics.gauges["probe.gauge"]; !ok || g != 2.5 {
				t.Errorf("gauge probe.gauge = %v (set: %v), want 2.5", g, ok)
			}
			if got := r.metrics.observed["probe.size"]; !slices.Equal(got, []int64{7, 1000}) {
				t.Errorf("histogram probe.size observed %v, want [7 1000]", got)
			}
			if got := r.metrics.m["probe.words"]; got != 1 {
				t.Errorf("counter probe.words = %d, want 1", got)
			}
			_ = b.Close(context.Background())
		})
	}
}

// TestProbeBoltFailures checks the failing-tuple rule (ABI.md, "A failing
// tuple (cursor)") in every SDK: a returned error and the language's own
// panic for one tuple fail that tuple alone, reported with the component,
// the task, the tuple id and the guest's message; the tuples before and
// after it are processed once, and the instance goes on. When the host
// decides the failure ends the instance (OnTupleFailure returns an
// error), Execute returns it and the instance stays failed.
func TestProbeBoltFailures(t *testing.T) {
	for _, lang := range languages {
		for _, tc := range []struct{ word, want string }{
			{"error", "probe error: bad word"},
			{"panic", "probe panic"},
		} {
			t.Run(lang+"/"+tc.word, func(t *testing.T) {
				r := newRig(t)
				var failures []host.TupleFailure
				r.onFailure = func(f host.TupleFailure) error {
					f.Values = nil
					failures = append(failures, f)
					return nil
				}
				b := r.bolt(t, guest(lang, "probe_bolt"))
				if err := b.Execute(context.Background(), batch(word{"a", 1}, word{tc.word, 2}, word{"z", 3}), r.out); err != nil {
					t.Fatalf("execute %q: %v (a failing tuple must not fail the instance)", tc.word, err)
				}
				emits, acks := r.out.take()
				same(t, tc.word, "emits", emits, []string{
					"emit stream=0 msg=0 anchors=[1] s:p-a i:1",
					"emit stream=0 msg=0 anchors=[3] s:p-z i:1",
				})
				// The failed tuple is failed before the rest of the batch
				// runs again, so only the set is specified.
				slices.Sort(acks)
				same(t, tc.word, "acks", acks, []string{"ack 1", "ack 3", "fail 2"})
				if len(failures) != 1 {
					t.Fatalf("%d failures reported, want 1: %+v", len(failures), failures)
				}
				f := failures[0]
				if f.Component != "probe" || f.Task != taskID || f.TupleID != 2 || f.Consecutive != 1 {
					t.Errorf("failure %+v: want component probe, task %d, tuple 2, the first in a row", f, taskID)
				}
				if f.Err == nil || !strings.Contains(f.Err.Error(), tc.want) {
					t.Errorf("failure error %v does not contain %q", f.Err, tc.want)
				}
				// The fresh instance goes on.
				if err := b.Execute(context.Background(), batch(word{"y", 4}), r.out); err != nil {
					t.Fatalf("execute after a failing tuple: %v", err)
				}
				if _, acks := r.out.take(); !slices.Equal(acks, []string{"ack 4"}) {
					t.Errorf("acks after a failing tuple: %v, want [ack 4]", acks)
				}
				_ = b.Close(context.Background())

				// The host may end the instance instead.
				r.onFailure = func(f host.TupleFailure) error { return f.Err }
				b = r.bolt(t, guest(lang, "probe_bolt"))
				err := b.Execute(context.Background(), batch(word{"a", 1}, word{tc.word, 2}), r.out)
				if err == nil {
					t.Fatalf("execute %q with a failure that ends the instance: no error", tc.word)
				}
				for _, want := range []string{fmt.Sprintf("component probe task %d", taskID), tc.want} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("execute %q: error %q does not contain %q", tc.word, err, want)
					}
				}
				if err := b.Tick(context.Background(), r.out); err == nil {
					t.Errorf("tick after a failure that ended the instance: the instance should stay failed")
				}
			})
		}
	}
}

func TestProbeSpout(t *testing.T) {
	for _, lang := range languages {
		t.Run(lang, func(t *testing.T) {
			r := newRig(t)
			m := r.compile(t, guest(lang, "probe_spout"))
			s, err := m.NewSpout(context.Background(), host.InstanceConfig{
				Topology: "conformance", Component: "probe", TaskID: 3, Logger: slog.New(r.log),
			})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(context.Background())
			ctx := plugin.TaskContext{
				Context: tuple.Context{
					Topology: "conformance", Component: "probe", TaskID: 3, Parallelism: 1,
					Config:  map[string]string{"count": "5"},
					Outputs: []tuple.StreamDecl{{Name: "default", Fields: []string{"word", "n"}}},
				},
				State: r.state, MaxKeyGroups: 256, Metric: r.metrics.add,
			}
			if err := s.Open(context.Background(), ctx, r.out); err != nil {
				t.Fatalf("open: %v", err)
			}
			if !r.log.has("INFO opened probe task 3") {
				t.Errorf("open: log lacks %q; got:\n%s", "INFO opened probe task 3", r.log)
			}
			next := func() plugin.Status {
				t.Helper()
				st, err := s.Next(context.Background(), 2, r.out)
				if err != nil {
					t.Fatalf("next: %v", err)
				}
				r.out.mu.Lock()
				n := len(r.out.ops)
				r.out.mu.Unlock()
				if n > 2 {
					t.Fatalf("next(2) emitted %d tuples", n)
				}
				return st
			}
			var emits []string
			collect := func() {
				e, a := r.out.take()
				emits = append(emits, e...)
				if len(a) > 0 {
					t.Fatalf("a spout sent acks or fails: %q", a)
				}
			}
			if st := next(); st != plugin.Emitted {
				t.Fatalf("first next: status %v, want more", st)
			}
			collect()
			if err := s.Fail(context.Background(), []uint64{2}, r.out); err != nil {
				t.Fatalf("fail: %v", err)
			}
			collect()
			if err := s.Ack(context.Background(), []uint64{1}, r.out); err != nil {
				t.Fatalf("ack: %v", err)
			}
			collect()
			done := false
			for range 20 {
				st := next()
				collect()
				if st == plugin.Done {
					done = true
					break
				}
			}
			if !done {
				t.Fatalf("spout never reported done; emitted %q", emits)
			}
			same(t, "next until done", "emits", emits, []string{
				"emit stream=0 msg=1 anchors=[] s:w1 i:1",
				"emit stream=0 msg=2 anchors=[] s:w2 i:2",
				"emit stream=0 msg=2 anchors=[] s:w2 i:2",
				"emit stream=0 msg=3 anchors=[] s:w3 i:3",
				"emit stream=0 msg=4 anchors=[] s:w4 i:4",
				"emit stream=0 msg=5 anchors=[] s:w5 i:5",
			})
			if err := s.Ack(context.Background(), []uint64{2, 3, 4, 5}, r.out); err != nil {
				t.Fatalf("ack: %v", err)
			}
			if got := r.metrics.get("probe.acked"); got != 5 {
				t.Errorf("metric probe.acked = %d, want 5", got)
			}
			if err := s.Deactivate(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := s.Activate(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"INFO deactivated", "INFO activated"} {
				if !r.log.has(want) {
					t.Errorf("log lacks %q; got:\n%s", want, r.log)
				}
			}
		})
	}
}

// TestBadGuests: modules that are not proper Ardea reactors, and guests
// that abort, are refused or fail with a clear error.
func TestBadGuests(t *testing.T) {
	for _, tc := range []struct {
		lang, name string
		stage      string // compile, start, execute
		want       []string
	}{
		{"rust", "command", "compile", []string{"command.wasm", "WASI command", "reactor"}},
		{"c", "command", "compile", []string{"command.wasm", "WASI command", "reactor"}},
		{"c", "badabi", "start", []string{"component probe task 7", "ABI version"}},
		{"c", "abort", "execute", []string{"component probe task 7", "unreachable"}},
		{"assemblyscript", "abort", "execute", []string{"component probe task 7", "as abort"}},
	} {
		t.Run(tc.lang+"/"+tc.name, func(t *testing.T) {
			r := newRig(t)
			path := guest(tc.lang, tc.name)
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("guest %s is missing: %v", path, err)
			}
			check := func(err error) {
				t.Helper()
				if err == nil {
					t.Fatalf("%s: no error", tc.stage)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: error %q does not contain %q", tc.stage, err, w)
					}
				}
			}
			m, err := r.rt.Compile(context.Background(), path)
			if tc.stage == "compile" {
				check(err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// A guest with ardea_cursor fails just the tuple; ending Execute
			// with the failure shows what the host reports.
			b, err := m.NewBolt(context.Background(), host.InstanceConfig{
				Topology: "conformance", Component: "probe", TaskID: taskID, Logger: slog.New(r.log),
				OnTupleFailure: func(f host.TupleFailure) error { return f.Err },
			})
			if err == nil {
				err = b.Prepare(context.Background(), boltContext(r), r.out)
			}
			if tc.stage == "start" {
				check(err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			err = b.Execute(context.Background(), batch(word{"abort", 1}), r.out)
			check(err)
			if !errors.Is(err, host.ErrTrap) && !errors.Is(err, host.ErrGuest) {
				t.Errorf("execute: error %v is neither a trap nor a guest error", err)
			}
		})
	}
}

// TestProbeBoltAckModes: in automatic mode (the default) plain emits during
// execute are anchored on the tuple being executed and the SDK acks it
// unless the bolt acked or failed it; the tuple being executed is acked at
// most once per call; in manual mode plain emits are unanchored and only
// the bolt's own acks are sent.
func TestProbeBoltAckModes(t *testing.T) {
	for _, lang := range languages {
		t.Run(lang, func(t *testing.T) {
			r := newRig(t)
			b := r.bolt(t, guest(lang, "probe_bolt"))
			if err := b.Execute(context.Background(), batch(word{"auto", 41}, word{"twice", 42}, word{"fail", 43}, word{"auto", 0}), r.out); err != nil {
				t.Fatalf("execute (automatic): %v", err)
			}
			emits, acks := r.out.take()
			same(t, "automatic", "emits", emits, []string{
				"emit stream=0 msg=0 anchors=[41] s:auto i:0",
				"emit stream=0 msg=0 anchors=[] s:auto i:0",
			})
			same(t, "automatic", "acks and fails", acks, []string{"ack 41", "ack 42", "fail 43"})
			_ = b.Close(context.Background())

			m := newRig(t)
			mb := m.boltWith(t, guest(lang, "probe_bolt"), map[string]string{"ack": "manual"})
			if err := mb.Execute(context.Background(), batch(word{"auto", 51}, word{"twice", 52}, word{"a", 53}), m.out); err != nil {
				t.Fatalf("execute (manual): %v", err)
			}
			emits, acks = m.out.take()
			same(t, "manual", "emits", emits, []string{
				"emit stream=0 msg=0 anchors=[] s:auto i:0",
				"emit stream=0 msg=0 anchors=[53] s:p-a i:1",
			})
			same(t, "manual", "acks and fails", acks, []string{"ack 52", "ack 53"})
			_ = mb.Close(context.Background())
		})
	}
}
