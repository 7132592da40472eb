package ctl_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/testutil/natstest"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/sinks/metric"
)

// container records the calls it accepts; refuse makes one op fail.
type container struct {
	mu     sync.Mutex
	calls  []string
	refuse ctl.Op
}

func (c *container) rec(op ctl.Op, args ...any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, strings.TrimSpace(fmt.Sprint(append([]any{op}, args...)...)))
	if op == c.refuse {
		return errors.New("not now")
	}
	return nil
}

func (c *container) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

func (c *container) Activate(context.Context) error   { return c.rec(ctl.OpActivate) }
func (c *container) Deactivate(context.Context) error { return c.rec(ctl.OpDeactivate) }
func (c *container) Checkpoint(_ context.Context, e, g uint64) error {
	return c.rec(ctl.OpCheckpoint, " ", e, " ", g)
}
func (c *container) Global(_ context.Context, e, g uint64) error {
	return c.rec(ctl.OpGlobal, " ", e, " ", g)
}
func (c *container) PrepareSwitch(_ context.Context, e uint64, comps []string) error {
	return c.rec(ctl.OpSwitchPrepare, " ", e, " ", comps)
}
func (c *container) RunSwitch(_ context.Context, e uint64) error {
	return c.rec(ctl.OpSwitchRun, " ", e)
}
func (c *container) Handoff(_ context.Context, e uint64) error { return c.rec(ctl.OpHandoff, " ", e) }
func (c *container) Swap(_ context.Context, s ctl.SwapOrder) error {
	return c.rec(ctl.OpSwap, " ", s.Epoch, " ", s.Component, " ", s.Module, " ", s.Tasks, " ", s.Probation)
}
func (c *container) CommitSwap(_ context.Context, m map[string]string) error {
	return c.rec(ctl.OpSwapCommit, " ", m)
}
func (c *container) EndInput(context.Context) error { return c.rec(ctl.OpEndInput) }
func (c *container) SetRate(_ context.Context, tps, bps float64) error {
	return c.rec(ctl.OpRate, " ", tps, " ", bps)
}

// manager records the reports it gets.
type manager struct {
	mu      sync.Mutex
	reports []string
}

func (m *manager) add(s string) {
	m.mu.Lock()
	m.reports = append(m.reports, s)
	m.mu.Unlock()
}

func (m *manager) got() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.reports...)
}

func (m *manager) Heartbeat(hb ctl.Heartbeat) {
	m.add(fmt.Sprintf("hb %d %s rev %d", hb.Container, hb.State, hb.PlanRevision))
}
func (m *manager) Alive(a ctl.Alive) { m.add(fmt.Sprintf("alive %d", a.Container)) }
func (m *manager) CheckpointSaved(r ctl.CheckpointReport) {
	m.add(fmt.Sprintf("ckpt %d task %d gen %d %s", r.ID, r.Task, r.Generation, r.Error))
}
func (m *manager) Metrics(b *metric.Batch) {
	m.add(fmt.Sprintf("metrics %s %d", b.Topology, len(b.Samples)))
}
func (m *manager) Exited(c int, err error) {
	m.add(fmt.Sprintf("exited %d %v", c, err))
}

// gateway is one implementation under test: the manager's Commands over
// three containers, and container 1's Reporter.
type gateway struct {
	cmds       ctl.Commands
	containers []*container
	reporter   ctl.Reporter
	mgr        *manager
}

func localGateway(t *testing.T) gateway {
	g := gateway{mgr: &manager{}}
	l := ctl.NewLocal(g.mgr)
	for i := 1; i <= 3; i++ {
		c := &container{}
		g.containers = append(g.containers, c)
		l.Attach(i, c)
	}
	g.cmds, g.reporter = l, l.Reporter()
	return g
}

func natsGateway(t *testing.T) gateway {
	srv := natstest.Start(t, natstest.Options{})
	g := gateway{mgr: &manager{}}
	for i := 1; i <= 3; i++ {
		c := &container{}
		g.containers = append(g.containers, c)
		stop, err := ctl.ServeCommands(t.Context(), natstest.Connect(t, srv), "acme", "top", i, c, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}
	g.cmds = ctl.NewNATSClient(natstest.Connect(t, srv), ctl.NATSClientOptions{Tenant: "acme", Topology: "top",
		Expected: func() []int { return []int{1, 2, 3} }, ReplyWait: time.Minute})
	stop, err := ctl.ServeManager(natstest.Connect(t, srv), "acme", "top", g.mgr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	g.reporter = ctl.NewNATSReporter(natstest.Connect(t, srv), "acme", "top")
	return g
}

// TestGateway runs the same calls through both gateways: every container
// accepts every call with its arguments, a refusal comes back naming the
// container and the request, and every report reaches the manager.
func TestGateway(t *testing.T) {
	for name, open := range map[string]func(*testing.T) gateway{"local": localGateway, "nats": natsGateway} {
		t.Run(name, func(t *testing.T) {
			g := open(t)
			ctx := t.Context()
			calls := []struct {
				call func() error
				want string
			}{
				{func() error { return g.cmds.Activate(ctx) }, "activate"},
				{func() error { return g.cmds.Deactivate(ctx) }, "deactivate"},
				{func() error { return g.cmds.Checkpoint(ctx, 7, 3) }, "checkpoint 7 3"},
				{func() error { return g.cmds.Global(ctx, 7, 3) }, "global 7 3"},
				{func() error { return g.cmds.PrepareSwitch(ctx, 9, []string{"count", "split"}) }, "switch-prepare 9 [count split]"},
				{func() error { return g.cmds.RunSwitch(ctx, 9) }, "switch-run 9"},
				{func() error { return g.cmds.Handoff(ctx, 11) }, "handoff 11"},
				{func() error {
					return g.cmds.Swap(ctx, ctl.SwapOrder{Epoch: 4, Component: "count", Module: "abc", Tasks: []uint32{2, 5}, Probation: time.Second})
				}, "swap 4 count abc [2 5] 1s"},
				{func() error { return g.cmds.CommitSwap(ctx, map[string]string{"count": "abc"}) }, "swap-commit map[count:abc]"},
				{func() error { return g.cmds.EndInput(ctx) }, "end-input"},
				{func() error { return g.cmds.SetRate(ctx, 2500.5, 65536) }, "rate 2500.5 65536"},
				{func() error { return g.cmds.SetRate(ctx, 0, 0) }, "rate 0 0"}, // unlimited again
			}
			var want []string
			for _, c := range calls {
				if err := c.call(); err != nil {
					t.Fatalf("%s: %v", c.want, err)
				}
				want = append(want, c.want)
			}
			for i, c := range g.containers {
				if got := c.got(); !reflect.DeepEqual(got, want) {
					t.Errorf("container %d got %q, want %q", i+1, got, want)
				}
			}

			g.containers[1].refuse = ctl.OpCheckpoint
			err := g.cmds.Checkpoint(ctx, 8, 3)
			if err == nil || !strings.Contains(err.Error(), "container 2 refused checkpoint: not now") {
				t.Fatalf("a refused checkpoint: %v", err)
			}
			if strings.Contains(err.Error(), "container 1") || strings.Contains(err.Error(), "container 3") {
				t.Fatalf("only container 2 refused: %v", err)
			}

			ctxR := t.Context()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(g.reporter.Heartbeat(ctxR, ctl.Heartbeat{Container: 1, State: api.HostRunning, PlanRevision: 4}))
			must(g.reporter.Alive(ctxR, ctl.Alive{Container: 1}))
			must(g.reporter.CheckpointSaved(ctxR, ctl.CheckpointReport{ID: 8, Task: 2, Generation: 3, Error: "disk full"}))
			must(g.reporter.Metrics(ctxR, &metric.Batch{Topology: "top", Samples: make([]metric.Sample, 2)}))
			wantReports := []string{"hb 1 RUNNING rev 4", "alive 1", "ckpt 8 task 2 gen 3 disk full", "metrics top 2"}
			testutil.Eventually(t, "every report reaches the manager", func() (bool, string) {
				got := g.mgr.got()
				if len(got) < len(wantReports) {
					return false, fmt.Sprint(got)
				}
				// NATS delivers each subject in order, not the four in order.
				for _, w := range wantReports {
					found := false
					for _, r := range got {
						found = found || r == w
					}
					if !found {
						t.Fatalf("reports %q: missing %q", got, w)
					}
				}
				return true, ""
			})
		})
	}
}

// TestLocalExited: an in-process container's end reaches the manager and
// detaches it from later calls.
func TestLocalExited(t *testing.T) {
	g := localGateway(t)
	l := g.cmds.(*ctl.Local)
	l.Exited(2, errors.New("wasm trap"))
	if err := l.Activate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := g.containers[1].got(); len(got) != 0 {
		t.Fatalf("a detached container got %q", got)
	}
	if got := g.mgr.got(); !reflect.DeepEqual(got, []string{"exited 2 wasm trap"}) {
		t.Fatalf("reports %q", got)
	}
}

// TestNATSRefusesOtherVersions: a request, heartbeat or other report of
// another protocol version (or none) is refused with an error naming both
// versions, and never reaches the container or the manager.
func TestNATSRefusesOtherVersions(t *testing.T) {
	srv, c := serveOne(t)
	mgr := &manager{}
	stopM, err := ctl.ServeManager(natstest.Connect(t, srv), "acme", "top", mgr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stopM()
	nc := natstest.Connect(t, srv)
	for _, v := range []string{`"v":2,`, ``} {
		msg, err := nc.RequestWithContext(t.Context(), ctl.CommandSubject("acme", "top"), []byte(`{`+v+`"op":"activate"}`))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := ctl.DecodeReply(msg.Data)
		if err != nil {
			t.Fatal(err)
		}
		want := "a request of version 2, this side speaks version 1"
		if v == "" {
			want = "a request of version 0, this side speaks version 1"
		}
		if !strings.Contains(rep.Error, want) || rep.Container != 1 {
			t.Fatalf("reply to %s: %+v, want an error with %q", v, rep, want)
		}
	}
	if got := c.got(); len(got) != 0 {
		t.Fatalf("the container accepted %q", got)
	}
	for subj, data := range map[string]string{
		ctl.HeartbeatSubject("acme", "top"):  `{"v":2,"container":1,"state":"RUNNING"}`,
		ctl.AliveSubject("acme", "top"):      `{"container":1}`,
		ctl.CheckpointSubject("acme", "top"): `{"v":3,"id":1,"task":1}`,
		ctl.MetricsSubject("acme", "top"):    `{"v":2,"batch":{"topology":"top"}}`,
	} {
		if err := nc.Publish(subj, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	// A current heartbeat after them: once it arrives, the others were
	// refused (each subject keeps its order; the heartbeat is last on its
	// own, and the manager saw nothing else).
	r := ctl.NewNATSReporter(nc, "acme", "top")
	if err := r.Heartbeat(t.Context(), ctl.Heartbeat{Container: 1, State: api.HostRunning}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the current heartbeat", func() bool { return len(mgr.got()) > 0 })
	// Give the other three subjects' refusals the same chance: a request
	// round trip through the server orders after their delivery.
	if _, err := nc.RequestWithContext(t.Context(), ctl.CommandSubject("acme", "top"), mustJSON(t, ctl.Request{V: ctl.Version, Op: ctl.OpEndInput})); err != nil {
		t.Fatal(err)
	}
	if got := mgr.got(); !reflect.DeepEqual(got, []string{"hb 1 RUNNING rev 0"}) {
		t.Fatalf("the manager got %q, want only the current heartbeat", got)
	}
}

// TestNATSClientSilentContainer: a container expected up that does not
// answer is waited for up to ReplyWait, then left to the fencing: the call
// does not fail, and the others' answers count.
func TestNATSClientSilentContainer(t *testing.T) {
	srv, c := serveOne(t)
	cl := ctl.NewNATSClient(natstest.Connect(t, srv), ctl.NATSClientOptions{Tenant: "acme", Topology: "top",
		Expected: func() []int { return []int{1, 2} }, ReplyWait: 50 * time.Millisecond})
	if err := cl.Activate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := c.got(); !reflect.DeepEqual(got, []string{"activate"}) {
		t.Fatalf("container 1 got %q", got)
	}
	c.refuse = ctl.OpDeactivate
	if err := cl.Deactivate(t.Context()); err == nil || !strings.Contains(err.Error(), "container 1 refused deactivate") {
		t.Fatalf("a refusal beside a silent container: %v", err)
	}
}

// TestRequestCallUnknown: a request that names no known op, a swap
// without its component and module, or a negative rate is refused, not
// guessed at.
func TestRequestCallUnknown(t *testing.T) {
	c := &container{}
	for _, r := range []ctl.Request{{Op: "reboot"}, {Op: ctl.OpSwap}, {Op: ctl.OpSwap, Components: []string{"a"}},
		{Op: ctl.OpRate, TuplesPerSecond: -1}, {Op: ctl.OpRate, BytesPerSecond: -5}} {
		if err := r.Call(t.Context(), c); err == nil {
			t.Errorf("%+v: accepted", r)
		}
	}
	if got := c.got(); len(got) != 0 {
		t.Fatalf("the container got %q", got)
	}
}

// serveOne starts a NATS server and container 1 of acme/top on it.
func serveOne(t *testing.T) (*bus.Server, *container) {
	srv := natstest.Start(t, natstest.Options{})
	c := &container{}
	stop, err := ctl.ServeCommands(t.Context(), natstest.Connect(t, srv), "acme", "top", 1, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return srv, c
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"v":1,"op":"swap","epoch":3,"components":["a"],"modules":{"a":"x"}}`))
	f.Add([]byte(`{"v":2,"op":"activate"}`))
	f.Add([]byte(`{"v":1,"op":"checkpoint","epoch":18446744073709551615}`))
	f.Add([]byte(`{"v":1,"op":"rate","tuples_per_second":2500,"bytes_per_second":-1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ctl.DecodeRequest(b)
		if err != nil {
			return
		}
		if r.V != ctl.Version {
			t.Fatalf("accepted version %d", r.V)
		}
		_ = r.Call(t.Context(), &container{})
	})
}

func FuzzDecodeHeartbeat(f *testing.F) {
	f.Add([]byte(`{"v":1,"container":1,"state":"RUNNING","instances":[{"task":1}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if hb, err := ctl.DecodeHeartbeat(b); err == nil && hb.V != ctl.Version {
			t.Fatalf("accepted version %d", hb.V)
		}
	})
}
