package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/natsauth"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/testutil/wordcounttest"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// startNodes starts n daemons as the nodes of one cluster (routes on
// ports picked first, every node listing every route, as a StatefulSet's
// members do), and closes them when t ends.
func startNodes(t *testing.T, n int) []*daemon.Daemon {
	t.Helper()
	return startNodesWith(t, n, daemon.Options{})
}

// startNodesWith is startNodes with o's Kubernetes (kube_test.go). The
// route ports are picked (listened on, then closed) before the nodes
// start, so a parallel test can take one in between: a cluster that
// does not start is closed and started again on other ports, twice at
// most.
func startNodesWith(t *testing.T, n int, with daemon.Options) []*daemon.Daemon {
	t.Helper()
	var err error
	for try := 1; try <= 3; try++ {
		var nodes []*daemon.Daemon
		if nodes, err = tryStartNodes(t, n, with); err == nil {
			for _, d := range nodes {
				t.Cleanup(func() { closeNode(t, d) })
			}
			return nodes
		}
		t.Logf("start %d nodes, try %d: %v", n, try, err)
	}
	t.Fatal(err)
	return nil
}

// tryStartNodes starts n nodes on route ports picked now; if one fails,
// those started are closed.
func tryStartNodes(t *testing.T, n int, with daemon.Options) ([]*daemon.Daemon, error) {
	secret := natsauth.NewSecret()
	var routes []string
	var listens []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listens = append(listens, ln.Addr().String())
		routes = append(routes, "nats://"+ln.Addr().String())
		ln.Close()
	}
	nodes := make([]*daemon.Daemon, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			o := daemon.Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0", CacheDir: compileCache, HostPath: ardeaBin,
				HostArgs: []string{"--log-format", "json", "--log-level", "info", "host"}, MaxRestarts: 2,
				Cluster: &daemon.Cluster{Name: fmt.Sprintf("n%d", i+1), Secret: []byte(secret.String()),
					ClusterListen: listens[i], Routes: routes},
				Kubernetes: with.Kubernetes}
			if os.Getenv("ARDEA_TEST_NODE_LOG") != "" {
				o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			}
			hostCache(o.DataDir)
			d, err := daemon.Start(t.Context(), o)
			nodes[i] = d
			errs <- err
		}()
	}
	var failed []error
	for range n {
		if err := <-errs; err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) == 0 {
		return nodes, nil
	}
	for _, d := range nodes {
		if d != nil {
			closeNode(t, d)
		}
	}
	return nil, errors.Join(failed...)
}

// clusterAdmin is the cluster's admin token: exactly one node mints it
// (the others read it from the shared token store).
func clusterAdmin(t *testing.T, nodes []*daemon.Daemon) string {
	t.Helper()
	var admin string
	for _, d := range nodes {
		if d.AdminToken() != "" {
			if admin != "" {
				t.Fatal("two nodes minted an admin token")
			}
			admin = d.AdminToken()
		}
	}
	if admin == "" {
		t.Fatal("no node minted the admin token")
	}
	return admin
}

func closeNode(t *testing.T, d *daemon.Daemon) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.Close(ctx); err != nil {
		t.Errorf("close node %s: %v", d.NodeName(), err)
	}
}

// TestClusterNodesShareTopologies: three nodes; a topology submitted
// through one runs and finishes with exact counts, and every node lists
// it and accepts the one admin token.
func TestClusterNodesShareTopologies(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "three cluster nodes and ardea host processes")
	t.Parallel()
	nodes := startNodes(t, 3)
	admin := clusterAdmin(t, nodes)
	client := func(d *daemon.Daemon) *api.Client {
		c := d.Client()
		c.Token = admin
		return c
	}
	dir := t.TempDir()
	lines := wordcount.TestLines(3000)
	in := filepath.Join(dir, "in.txt")
	wordcounttest.WriteLines(t, in, lines)
	out := filepath.Join(dir, "counts.tsv")
	ctx := t.Context()
	req := api.SubmitRequest{Name: "wcc", Spec: wcSpec(t, "wcc", 2, fileSpout(in), out), Modules: wcModules(t), Deactivated: true}
	if _, err := client(nodes[1]).Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	// Every node answers for the topology: node 2 manages it, nodes 1
	// and 3 forward to it. Its two containers are spread over two nodes
	// (placement), and every node names the same ones.
	var where []string
	for _, d := range nodes {
		st, err := client(d).Status(ctx, "wcc")
		if err != nil || st.State != api.StatePaused {
			t.Fatalf("node %s: status of wcc: %v %v, want PAUSED", d.NodeName(), st.State, err)
		}
		var got []string
		for _, c := range st.Containers {
			got = append(got, c.Node)
		}
		if where == nil {
			where = got
		}
		if len(got) != 2 || got[0] == "" || got[1] == "" || got[0] == got[1] || !slices.Equal(got, where) {
			t.Errorf("node %s: wcc's containers on nodes %q, want two distinct nodes, the same through every node (%q)", d.NodeName(), got, where)
		}
	}
	// Node 2 reports what it manages at its next report, and each node
	// the containers it runs.
	testutil.Eventually(t, "ardea nodes shows the three nodes up, node 2 managing wcc, the containers where they run", func() (bool, string) {
		ns, err := client(nodes[0]).Nodes(ctx)
		if err != nil {
			return false, err.Error()
		}
		var seen, want []string
		for _, n := range ns {
			seen = append(seen, fmt.Sprintf("%s:%s:%v:%d", n.Name, n.Health, n.Topologies, n.Containers))
			tops := "[]"
			if n.Name == "n2" {
				tops = "[default/wcc]"
			}
			want = append(want, fmt.Sprintf("%s:up:%s:%d", n.Name, tops, count(where, n.Name)))
		}
		got := strings.Join(seen, ",")
		return got == strings.Join(want, ","), got + ", want " + strings.Join(want, ",")
	})
	// The tracker's physical plan (the UI's containers) too, forwarded.
	var pp struct {
		Containers []api.ContainerStatus `json:"containers"`
	}
	if err := client(nodes[0]).Do(ctx, http.MethodGet, "/api/v1/topologies/wcc/physicalplan", nil, &pp); err != nil {
		t.Fatal(err)
	}
	if len(pp.Containers) != 2 || pp.Containers[0].Node != where[0] || pp.Containers[1].Node != where[1] {
		t.Errorf("physical plan through node 1: %+v, want 2 containers on %q", pp.Containers, where)
	}
	// A hostile tenant's deploy token on another node: the nodes list is
	// the operator's, and a topology of the default tenant with the same
	// name is not its own, forwarded or not (a forged forwarding header
	// only keeps the call where it landed).
	var minter *daemon.Daemon
	for _, d := range nodes {
		if d.AdminToken() != "" {
			minter = d
		}
	}
	other := client(nodes[0])
	other.Token = newToken(t, minter, "mallory", auth.ScopeDeploy)
	if _, err := other.Nodes(ctx); err == nil || !strings.Contains(err.Error(), "403") && !strings.Contains(strings.ToLower(err.Error()), "scope") {
		t.Errorf("a deploy token listed the nodes: %v", err)
	}
	if _, err := other.Status(ctx, "wcc"); err == nil {
		t.Error("tenant mallory read the default tenant's wcc through another node")
	}
	hreq, _ := http.NewRequestWithContext(ctx, http.MethodGet, nodes[0].URL()+"/api/v1/topologies/wcc", nil)
	hreq.Header.Set("Authorization", "Bearer "+other.Token)
	hreq.Header.Set("X-Ardea-Forwarded-By", "n2")
	if resp, err := http.DefaultClient.Do(hreq); err != nil || resp.StatusCode == http.StatusOK {
		t.Errorf("a forged forwarding header: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if _, err := client(nodes[2]).Action(ctx, "wcc", "activate", nil, nil); err != nil {
		t.Fatalf("activate through node 3: %v", err)
	}
	waitState(t, client(nodes[0]), "wcc", api.StateFinished)
	got, err := wordcount.ReadCounts(out, false)
	if err != nil {
		t.Fatal(err)
	}
	wordcounttest.CompareCounts(t, got, wordcount.Reference(lines))
	for _, d := range nodes {
		list, err := client(d).List(ctx)
		if err != nil {
			t.Fatalf("node %s: list: %v", d.NodeName(), err)
		}
		var names []string
		for _, s := range list {
			names = append(names, s.Name+":"+string(s.State))
		}
		if strings.Join(names, ",") != "wcc:FINISHED" {
			t.Errorf("node %s lists %v, want wcc FINISHED", d.NodeName(), names)
		}
	}
}

// owner is the node whose topology manager runs topology name (the one
// that answers its status), waiting for one to.
func owner(t *testing.T, nodes []*daemon.Daemon, token, name string) *daemon.Daemon {
	t.Helper()
	var got *daemon.Daemon
	testutil.Eventually(t, "a node manages topology "+name, func() bool {
		for _, d := range nodes {
			c := d.Client()
			c.Token = token
			if _, err := c.Status(t.Context(), name); err == nil {
				got = d
				return true
			}
		}
		return false
	})
	return got
}

// TestClusterTakesOverAClosedNode: the node managing a topology closes
// while the topology runs; another node takes the topology over from the
// replicated state and it finishes there, at least once, nothing lost.
func TestClusterTakesOverAClosedNode(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "three cluster nodes and ardea host processes")
	t.Parallel()
	nodes := startNodes(t, 3)
	admin := clusterAdmin(t, nodes)
	dir := t.TempDir()
	const n = 5000
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	writeNumbered(t, in, "line", n)
	c0 := nodes[0].Client()
	c0.Token = admin
	submitLinesToFile(t, c0, "move", in, out, 1500)
	first := owner(t, nodes, admin, "move")
	testutil.Eventually(t, "the sink to write 1000 lines", func() (bool, string) {
		got := fileLines(out)
		return got >= 1000, fmt.Sprintf("%d lines", got)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var rest []*daemon.Daemon
	for _, d := range nodes {
		if d != first {
			rest = append(rest, d)
		}
	}
	second := owner(t, rest, admin, "move")
	c := second.Client()
	c.Token = admin
	waitState(t, c, "move", api.StateFinished)
	lost, dups, extra := checkLines(t, in, out)
	if lost != 0 || extra != 0 {
		t.Fatalf("after node %s closed: %d input lines lost, %d lines not in the input (%d duplicates)", first.NodeName(), lost, extra, dups)
	}
	t.Logf("node %s closed mid-stream, node %s took over: every one of %d lines written, %d duplicates", first.NodeName(), second.NodeName(), n, dups)
}

// count is how many of ss are s.
func count(ss []string, s string) int {
	n := 0
	for _, x := range ss {
		if x == s {
			n++
		}
	}
	return n
}
