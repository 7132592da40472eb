package placement

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/logtail"
	"github.com/ardea-dev/ardea/scheduler/internal/runtime"
)

// procs is a node's launcher in these tests: it records what runs and
// reports every change as the launcher's OnChange does. The placement
// protocol around it is the real one, over a real NATS server.
type procs struct {
	mu      sync.Mutex
	run     map[string]launcher.ProcessStatus
	starts  []Spec
	pid     int
	changed func(launcher.ProcessStatus)
	// hold, if set, runs in Start before the container runs (a host
	// starting).
	hold func()
	// logDir holds the containers' log files (LogPath), if set.
	logDir string
}

func newProcs() *procs { return &procs{run: map[string]launcher.ProcessStatus{}, pid: 100} }

func (p *procs) set(ps launcher.ProcessStatus) {
	p.mu.Lock()
	p.run[ps.ID] = ps
	f := p.changed
	p.mu.Unlock()
	if f != nil {
		f(ps)
	}
}

func (p *procs) Start(_ context.Context, s Spec) error {
	id := runtime.ID(s.Tenant, s.Topology, s.Container)
	p.mu.Lock()
	if ps, ok := p.run[id]; ok && ps.State == launcher.StateRunning {
		p.mu.Unlock()
		return fmt.Errorf("%s: %w", id, launcher.ErrDuplicate)
	}
	p.pid++
	pid := p.pid
	p.starts = append(p.starts, s)
	hold := p.hold
	p.mu.Unlock()
	if hold != nil {
		hold()
	}
	p.set(launcher.ProcessStatus{ID: id, PID: pid, State: launcher.StateRunning})
	return nil
}

func (p *procs) end(id string, st launcher.State) error {
	p.mu.Lock()
	ps, ok := p.run[id]
	p.mu.Unlock()
	if !ok {
		return fmt.Errorf("%s: %w", id, launcher.ErrUnknown)
	}
	ps.State, ps.PID = st, 0
	p.set(ps)
	return nil
}

func (p *procs) Stop(_ context.Context, id string) error { return p.end(id, launcher.StateStopped) }
func (p *procs) Restart(ctx context.Context, id string) error {
	if err := p.end(id, launcher.StateStopped); err != nil {
		return err
	}
	p.mu.Lock()
	p.pid++
	pid := p.pid
	p.mu.Unlock()
	p.set(launcher.ProcessStatus{ID: id, PID: pid, State: launcher.StateRunning, Restarts: 1})
	return nil
}
func (p *procs) Remove(_ context.Context, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.run[id]; !ok {
		return fmt.Errorf("%s: %w", id, launcher.ErrUnknown)
	}
	delete(p.run, id)
	return nil
}
func (p *procs) Kill(id string, pid int) error { return p.end(id, launcher.StateBackoff) }
func (p *procs) Status(id string) (launcher.ProcessStatus, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ps, ok := p.run[id]
	return ps, ok
}
func (p *procs) List() []launcher.ProcessStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []launcher.ProcessStatus
	for _, ps := range p.run {
		out = append(out, ps)
	}
	return out
}
func (p *procs) LogPath(id string) string {
	if p.logDir != "" {
		return filepath.Join(p.logDir, launcher.FileName(id)+".log")
	}
	return "/logs/" + id
}

// running is the ids running here.
func (p *procs) running() []string {
	var ids []string
	for _, ps := range p.List() {
		if ps.State == launcher.StateRunning {
			ids = append(ids, ps.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

type top struct{ tenant, name string }

func (t top) Tenant() string { return t.tenant }
func (t top) Name() string   { return t.name }

// cluster is nodes n1..nN, each serving its procs on one NATS server.
type cluster struct {
	t     *testing.T
	url   string
	nodes map[string]*Node
	procs map[string]*procs
	conns []*nats.Conn
	// lost are the nodes Nodes leaves out.
	mu   sync.Mutex
	lost map[string]bool
}

func startCluster(t *testing.T, n int) *cluster {
	t.Helper()
	srv, err := bus.StartServer(t.Context(), bus.ServerOptions{Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	c := &cluster{t: t, url: srv.ClientURL(), nodes: map[string]*Node{}, procs: map[string]*procs{}, lost: map[string]bool{}}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("n%d", i)
		p := newProcs()
		node, err := ServeNode(t.Context(), c.conn(), name, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		p.changed = node.Changed
		c.nodes[name], c.procs[name] = node, p
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			nd.Close()
		}
		for _, nc := range c.conns {
			nc.Close()
		}
	})
	return c
}

func (c *cluster) conn() *nats.Conn {
	nc, err := nats.Connect(c.url)
	if err != nil {
		c.t.Fatal(err)
	}
	c.conns = append(c.conns, nc)
	return nc
}

func (c *cluster) live(context.Context) ([]Candidate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Candidate
	for name, p := range c.procs {
		if !c.lost[name] {
			out = append(out, Candidate{Name: name, MemoryBytes: 1 << 30, Containers: len(p.running())})
		}
	}
	return out, nil
}

// placerRecord is what a Placer told its TM and revoked.
type placerRecord struct {
	mu      sync.Mutex
	changes []launcher.ProcessStatus
	revoked []string
}

func (r *placerRecord) seen(st launcher.State, why string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.changes, func(ps launcher.ProcessStatus) bool {
		return ps.State == st && strings.Contains(ps.LastExit, why)
	})
}

// placer is a TM of epoch on node self.
func (c *cluster) placer(self string, epoch uint64) (*Placer[top], *placerRecord) {
	c.t.Helper()
	return c.placerWith(self, epoch, nil)
}

// placerWith is placer with its options changed by tune.
func (c *cluster) placerWith(self string, epoch uint64, tune func(*Options[top])) (*Placer[top], *placerRecord) {
	c.t.Helper()
	rec := &placerRecord{}
	users := 0
	o := Options[top]{Self: self, Local: c.procs[self], Conn: c.conn(), Log: testutil.Logger(c.t),
		Spec: func(_ context.Context, t top, n int) (Spec, error) {
			rec.mu.Lock()
			users++
			u := fmt.Sprintf("U%d", users)
			rec.mu.Unlock()
			return Spec{Tenant: t.tenant, Topology: t.name, Container: n, User: u, Creds: "secret-" + u, MemoryBytes: 1 << 20}, nil
		},
		Epoch:    func(top) uint64 { return epoch },
		Nodes:    c.live,
		OnChange: func(ps launcher.ProcessStatus) { rec.mu.Lock(); rec.changes = append(rec.changes, ps); rec.mu.Unlock() },
		Revoke: func(_, _ string, users ...string) {
			rec.mu.Lock()
			rec.revoked = append(rec.revoked, users...)
			rec.mu.Unlock()
		},
		CheckEvery: 20 * time.Millisecond, PlaceSilent: time.Hour, MoveSilent: time.Hour,
	}
	if tune != nil {
		tune(&o)
	}
	p, err := NewPlacer(c.t.Context(), o)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p, rec
}

// where maps each node to what runs there.
func (c *cluster) where() string {
	var parts []string
	for i := 1; i <= len(c.procs); i++ {
		name := fmt.Sprintf("n%d", i)
		parts = append(parts, name+"="+strings.Join(c.procs[name].running(), "+"))
	}
	return strings.Join(parts, " ")
}

// TestPlacerSpreads: a topology's containers go to distinct nodes, its
// requests reach the node each runs on, and a remote container's state
// follows its node's events.
func TestPlacerSpreads(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	t.Run("spread", func(t *testing.T) { // its cleanups close everything before the leak check
		c := startCluster(t, 3)
		p, rec := c.placer("n1", 7)
		wc := top{"default", "wc"}
		ctx := t.Context()
		for n := 1; n <= 3; n++ {
			if err := p.StartContainer(ctx, wc, n); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := c.where(), "n1=wc/container-1 n2=wc/container-2 n3=wc/container-3"; got != want {
			t.Fatalf("placed %s, want %s", got, want)
		}
		// A fourth container goes where the topology runs fewest (a tie:
		// the fewest containers, then the name).
		if err := p.StartContainer(ctx, wc, 4); err != nil {
			t.Fatal(err)
		}
		if p.Node("wc/container-4") != "n1" {
			t.Errorf("container 4 on %q, want n1", p.Node("wc/container-4"))
		}
		// The node's Spec carries the credential the TM made; the node
		// keeps it (a creds file of its own, in the daemon).
		if s := c.procs["n2"].starts[0]; s.Creds != "secret-"+s.User || s.Container != 2 {
			t.Errorf("node n2 got %+v", s)
		}
		// A remote container's change reaches the TM.
		c.procs["n3"].set(launcher.ProcessStatus{ID: "wc/container-3", State: launcher.StateBackoff, LastExit: "exit status 3"})
		testutil.Eventually(t, "the TM hears container 3 exit on n3", func() bool { return rec.seen(launcher.StateBackoff, "exit status 3") })
		if ps, ok := p.Status("wc/container-3"); !ok || ps.State != launcher.StateBackoff {
			t.Errorf("status of container 3: %+v %v", ps, ok)
		}
		if err := p.Restart(ctx, "wc/container-2"); err != nil {
			t.Fatal(err)
		}
		if ps, _ := p.Status("wc/container-2"); ps.Restarts != 1 || ps.State != launcher.StateRunning {
			t.Errorf("container 2 after a restart: %+v", ps)
		}
		if err := p.Remove(ctx, "wc/container-2"); err != nil {
			t.Fatal(err)
		}
		if _, ok := c.procs["n2"].Status("wc/container-2"); ok {
			t.Error("container 2 still on n2 after Remove")
		}
		if err := p.Remove(ctx, "wc/container-2"); !errors.Is(err, launcher.ErrUnknown) {
			t.Errorf("a second Remove: %v, want ErrUnknown", err)
		}
		if got := len(p.List()); got != 3 {
			t.Errorf("List: %d containers, want 3", got)
		}
		if p.LogPath("wc/container-1") == "" || p.LogPath("wc/container-3") != "" {
			t.Errorf("log paths: local %q, remote %q", p.LogPath("wc/container-1"), p.LogPath("wc/container-3"))
		}
	})
}

// TestPlacerLogsOfAnotherNode: a container's log is read on the node it
// runs on, in pages of at most MaxLogBytes, filtered there; a container
// without a log there is unknown, and a node reads only the named
// topology's containers.
func TestPlacerLogsOfAnotherNode(t *testing.T) {
	c := startCluster(t, 3)
	for _, pr := range c.procs {
		pr.logDir = t.TempDir()
	}
	p, _ := c.placer("n1", 5)
	wc := top{"acme", "wc"}
	ctx := t.Context()
	for n := 1; n <= 3; n++ {
		if err := p.StartContainer(ctx, wc, n); err != nil {
			t.Fatal(err)
		}
	}
	id := func(n int) string { return runtime.ID("acme", "wc", n) }
	if p.Node(id(2)) != "n2" || p.Node(id(1)) != "n1" {
		t.Fatalf("placed %s", c.where())
	}
	// Container 2 logs 3 MiB on n2: more than one reply holds.
	var lines []string
	size := 0
	for i := 0; size < 3*MaxLogBytes; i++ {
		l := fmt.Sprintf(`{"msg":"line %d","component":"c%d","task":%d,"pad":"%s"}`, i, i%3, i%3+1, strings.Repeat("p", 900))
		lines = append(lines, l)
		size += len(l)
	}
	if err := os.WriteFile(c.procs["n2"].LogPath(id(2)), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.procs["n1"].LogPath(id(1)), []byte("here 1\nhere 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Logs(ctx, id(2), 3, logtail.Filter{}); err != nil || !slices.Equal(got, lines[len(lines)-3:]) {
		t.Errorf("the last 3 lines of container 2 on n2: %.200q %v", got, err)
	}
	got, err := p.Logs(ctx, id(2), len(lines)+10, logtail.Filter{})
	if err != nil || !slices.Equal(got, lines) {
		t.Errorf("all of container 2's log, paged: %d lines %v, want %d", len(got), err, len(lines))
	}
	var c1 []string
	for _, l := range lines {
		if strings.Contains(l, `"component":"c1"`) {
			c1 = append(c1, l)
		}
	}
	if got, err := p.Logs(ctx, id(2), 5, logtail.Filter{Component: "c1", Task: 2}); err != nil || !slices.Equal(got, c1[len(c1)-5:]) {
		t.Errorf("the last 5 lines of c1/task 2 (filtered on n2): %.200q %v", got, err)
	}
	if got, err := p.Logs(ctx, id(1), 10, logtail.Filter{}); err != nil || !slices.Equal(got, []string{"here 1", "here 2"}) {
		t.Errorf("container 1's log here: %q %v", got, err)
	}
	// One reply holds at most MaxLogBytes of lines, and says where the
	// next page ends.
	b, _ := json.Marshal(request{V: Version, Op: OpLogs, ID: id(2), Tenant: "acme", Topology: "wc", Epoch: 5, Logs: &LogsRequest{Lines: 1 << 30, End: -1}})
	m, err := c.conn().Request(ctlSubject("n2"), b, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var r reply
	if err := decode(m.Data, &r, "reply"); err != nil || r.Logs == nil {
		t.Fatalf("reply %+v %v", r, err)
	}
	n := 0
	for _, l := range r.Logs.Lines {
		n += len(l)
	}
	if n > MaxLogBytes || n < MaxLogBytes/2 || r.Logs.Start <= 0 || r.Logs.Cut {
		t.Errorf("one reply: %d bytes of %d lines, start %d, cut %v; want at most %d, more before", n, len(r.Logs.Lines), r.Logs.Start, r.Logs.Cut, MaxLogBytes)
	}
	// Container 3 has no log on n3; container 9 is not placed and has
	// none here.
	if _, err := p.Logs(ctx, id(3), 5, logtail.Filter{}); !errors.Is(err, launcher.ErrUnknown) || !strings.Contains(err.Error(), "n3") {
		t.Errorf("logs of container 3 without a log file: %v, want unknown on n3", err)
	}
	if _, err := p.Logs(ctx, id(9), 5, logtail.Filter{}); !errors.Is(err, launcher.ErrUnknown) {
		t.Errorf("logs of an unplaced container: %v, want unknown", err)
	}
	// A request naming another topology's container is refused.
	b, _ = json.Marshal(request{V: Version, Op: OpLogs, ID: id(2), Tenant: "other", Topology: "wc", Logs: &LogsRequest{Lines: 5, End: -1}})
	if m, err = c.conn().Request(ctlSubject("n2"), b, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	r = reply{}
	if err := decode(m.Data, &r, "reply"); err != nil || r.Err == "" || r.Logs != nil {
		t.Errorf("logs of acme's container asked as other's: %+v %v", r, err)
	}
	// An operation a node does not know (as OpLogs is to a node built
	// before it, of the same Version) gets an error saying so, and
	// nothing else happens there.
	before := c.where()
	b, _ = json.Marshal(request{V: Version, Op: "nosuch", ID: id(2), Tenant: "acme", Topology: "wc", Epoch: 5})
	if m, err = c.conn().Request(ctlSubject("n2"), b, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	r = reply{}
	if err := decode(m.Data, &r, "reply"); err != nil || !strings.Contains(r.Err, `unknown operation "nosuch"`) || c.where() != before {
		t.Errorf("an unknown operation: %+v %v (%s, was %s)", r, err, c.where(), before)
	}
}

// TestPlacerMovesOffALostNode: a node that stops reporting loses its
// containers to the others; the TM hears the container exit, its
// credential is revoked, and a node that kept running it removes it once
// its events are heard again.
func TestPlacerMovesOffALostNode(t *testing.T) {
	c := startCluster(t, 3)
	p, rec := c.placer("n1", 3)
	wc := top{"acme", "wc"}
	for n := 1; n <= 2; n++ {
		if err := p.StartContainer(t.Context(), wc, n); err != nil {
			t.Fatal(err)
		}
	}
	if p.Node("acme.wc/container-2") != "n2" {
		t.Fatalf("container 2 on %q, want n2", p.Node("acme.wc/container-2"))
	}
	c.mu.Lock()
	c.lost["n2"] = true
	c.mu.Unlock()
	testutil.Eventually(t, "container 2 moves to n3", func() (bool, string) {
		return p.Node("acme.wc/container-2") == "n3" && slices.Contains(c.procs["n3"].running(), "acme.wc/container-2"), c.where()
	})
	if !rec.seen(launcher.StateBackoff, "node n2 lost") {
		t.Errorf("the TM did not hear container 2 exit with its node: %+v", rec.changes)
	}
	rec.mu.Lock()
	revoked := slices.Clone(rec.revoked)
	rec.mu.Unlock()
	if !slices.Equal(revoked, []string{"U2"}) {
		t.Errorf("revoked %v, want the moved container's U2 only", revoked)
	}
	// n2 comes back still running the old copy: its next event gets it
	// removed there.
	c.procs["n2"].set(launcher.ProcessStatus{ID: "acme.wc/container-2", PID: 999, State: launcher.StateRunning})
	testutil.Eventually(t, "the old copy on n2 is removed", func() (bool, string) {
		_, ok := c.procs["n2"].Status("acme.wc/container-2")
		return !ok, c.where()
	})
	if ps, _ := p.Status("acme.wc/container-2"); ps.State != launcher.StateRunning || ps.Restarts != 1 {
		t.Errorf("status of the moved container: %+v, want RUNNING after 1 restart", ps)
	}
}

// TestPlacerKeepsAReachableNodesContainers: a node whose record says it
// is lost (its reports could not be stored while JetStream elected) but
// that this node is connected to keeps its containers; once it is not
// connected either, they move.
func TestPlacerKeepsAReachableNodesContainers(t *testing.T) {
	c := startCluster(t, 3)
	var mu sync.Mutex
	reachable, asked := true, 0
	p, _ := c.placerWith("n1", 3, func(o *Options[top]) {
		o.Reachable = func(node string) bool {
			mu.Lock()
			defer mu.Unlock()
			if node == "n2" {
				asked++
			}
			return reachable
		}
	})
	wc := top{"acme", "wc"}
	for n := 1; n <= 2; n++ {
		if err := p.StartContainer(t.Context(), wc, n); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	c.lost["n2"] = true
	c.mu.Unlock()
	testutil.Eventually(t, "three checks of the lost but reachable n2", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return asked >= 3, fmt.Sprint(asked)
	})
	if p.Node("acme.wc/container-2") != "n2" || !slices.Contains(c.procs["n2"].running(), "acme.wc/container-2") {
		t.Fatalf("container 2 moved off a reachable node: %s", c.where())
	}
	mu.Lock()
	reachable = false
	mu.Unlock()
	testutil.Eventually(t, "container 2 moves to n3", func() (bool, string) {
		return p.Node("acme.wc/container-2") == "n3", c.where()
	})
}

// TestPlacerKillOfASilentNode: a node that does not answer (its
// supervisor gone) has the container declared lost moved elsewhere at
// the kill.
func TestPlacerKillOfASilentNode(t *testing.T) {
	c := startCluster(t, 2)
	p, rec := c.placer("n1", 1)
	wc := top{"default", "wc"}
	for n := 1; n <= 2; n++ {
		if err := p.StartContainer(t.Context(), wc, n); err != nil {
			t.Fatal(err)
		}
	}
	c.nodes["n2"].Close() // no one answers for n2 now
	c.mu.Lock()
	c.lost["n2"] = true
	c.mu.Unlock()
	ps, _ := p.Status("wc/container-2")
	if err := p.Kill("wc/container-2", ps.PID); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "container 2 moves to n1", func() (bool, string) {
		return p.Node("wc/container-2") == "n1", c.where()
	})
	if !rec.seen(launcher.StateBackoff, "node n2") {
		t.Errorf("the TM did not hear container 2 exit: %+v", rec.changes)
	}
}

// TestNodeFencesAnOlderEpoch: a newer TM of a topology (after a
// takeover) announces its epoch: every node removes what the older one
// started, and refuses its requests from then on.
func TestNodeFencesAnOlderEpoch(t *testing.T) {
	c := startCluster(t, 3)
	old, _ := c.placer("n1", 4)
	wc := top{"default", "wc"}
	for n := 1; n <= 3; n++ {
		if err := old.StartContainer(t.Context(), wc, n); err != nil {
			t.Fatal(err)
		}
	}
	other := top{"default", "other"}
	if err := old.StartContainer(t.Context(), other, 1); err != nil {
		t.Fatal(err)
	}
	// The newer TM, on n3, starts container 1 only (yet).
	newer, _ := c.placer("n3", 9)
	if err := newer.StartContainer(t.Context(), wc, 1); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the older TM's containers of wc are removed everywhere", func() (bool, string) {
		n := 0
		for _, pr := range c.procs {
			for _, id := range pr.running() {
				if strings.HasPrefix(id, "wc/") {
					n++
				}
			}
		}
		return n == 1, c.where()
	})
	if !slices.Contains(c.procs["n1"].running(), "other/container-1") {
		t.Errorf("another topology's container was removed: %s", c.where())
	}
	if got := newer.Node("wc/container-1"); got == "" {
		t.Error("the newer TM does not know where its container runs")
	}
	// The older TM can no longer act on the nodes it placed on.
	if err := old.Stop(t.Context(), "wc/container-2"); err != nil {
		t.Errorf("an older TM's stop on a fencing node: %v (it is treated as gone)", err)
	}
	n2 := c.conn()
	b, _ := json.Marshal(request{V: Version, Op: OpStart, Epoch: 4, Spec: &Spec{Tenant: "default", Topology: "wc", Container: 2}})
	m, err := n2.Request(ctlSubject("n2"), b, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var r reply
	if err := decode(m.Data, &r, "reply"); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(r.err("n2"), ErrFenced) {
		t.Errorf("a start of epoch 4 after epoch 9: %+v, want fenced", r)
	}
}

// TestNodeFenceWaitsForAnOlderStart: a newer TM's fence that arrives
// while an older TM's start is in flight on the node (its host starting)
// waits for it and then removes it: the older copy does not outlive the
// fence.
func TestNodeFenceWaitsForAnOlderStart(t *testing.T) {
	c := startCluster(t, 1)
	entered, release := make(chan struct{}), make(chan struct{})
	c.procs["n1"].hold = func() { close(entered); <-release }
	admitting := make(chan struct{})
	c.nodes["n1"].admitting = func(key string, epoch uint64) {
		if epoch == 9 {
			close(admitting)
		}
	}
	nc := c.conn()
	send := func(req request, done chan<- string) {
		b, _ := json.Marshal(req)
		m, err := nc.Request(ctlSubject("n1"), b, time.Minute)
		if err == nil {
			var r reply
			if err = decode(m.Data, &r, "reply"); err == nil {
				err = r.err("n1")
			}
		}
		done <- fmt.Sprintf("%s: %v", req.Op, err)
	}
	done := make(chan string, 2)
	go send(request{V: Version, Op: OpStart, Epoch: 4, Spec: &Spec{Tenant: "default", Topology: "wc", Container: 1}}, done)
	<-entered
	go send(request{V: Version, Op: OpFence, Tenant: "default", Topology: "wc", Epoch: 9}, done)
	<-admitting
	close(release)
	for range 2 {
		if got := <-done; !strings.HasSuffix(got, ": <nil>") {
			t.Error(got)
		}
	}
	if run := c.procs["n1"].running(); len(run) != 0 {
		t.Errorf("after a newer fence, an older TM's container runs: %v", run)
	}
}

// TestPlacerWaitsForACutOffNode: a newer TM whose epoch a node does not
// confirm (cut off, or lost) asks how long that node may still run its
// containers (FenceWait) and starts nothing before.
func TestPlacerWaitsForACutOffNode(t *testing.T) {
	c := startCluster(t, 3)
	old, _ := c.placer("n1", 4)
	wc := top{"default", "wc"}
	for n := 1; n <= 3; n++ {
		if err := old.StartContainer(t.Context(), wc, n); err != nil {
			t.Fatal(err)
		}
	}
	c.nodes["n2"].Close() // it answers nothing more
	var mu sync.Mutex
	var order []string
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	for _, name := range []string{"n1", "n3"} {
		c.procs[name].hold = func() { note("start on " + name) }
	}
	newer, _ := c.placerWith("n3", 9, func(o *Options[top]) {
		o.FenceWait = func(node string) time.Duration { note("wait for " + node); return time.Millisecond }
	})
	if err := newer.StartContainer(t.Context(), wc, 1); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) < 2 || order[0] != "wait for n2" || !strings.HasPrefix(order[1], "start on") {
		t.Errorf("events %q; want the wait for n2 first, then a start", order)
	}
}

// TestWireRefusesAnotherVersion: a message of another version gets an
// error naming both; garbage gets one too.
func TestWireRefusesAnotherVersion(t *testing.T) {
	var req request
	err := decode([]byte(`{"v":2,"op":"start"}`), &req, "request")
	if err == nil || !strings.Contains(err.Error(), "version 2, this node speaks 1") {
		t.Errorf("got %v", err)
	}
	if err := decode([]byte(`{`), &req, "request"); err == nil {
		t.Error("garbage decoded")
	}
	if s := fmt.Sprint(Spec{Tenant: "a", Topology: "b", Container: 1, Creds: "SECRET"}); strings.Contains(s, "SECRET") {
		t.Errorf("a Spec prints its credential: %s", s)
	}
}

// FuzzDecode: no input makes the decoder panic, and what decodes has this
// version.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"v":1,"op":"start","spec":{"tenant":"a","topology":"b","container":1}}`))
	f.Add([]byte(`{"v":1,"node":"n1","epoch":3,"status":{"ID":"x"}}`))
	f.Add([]byte(`{"v":0}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var req request
		if decode(b, &req, "request") == nil && req.V != Version {
			t.Fatalf("decoded version %d", req.V)
		}
		var ev event
		_ = decode(b, &ev, "event")
		var r reply
		_ = decode(b, &r, "reply")
	})
}
