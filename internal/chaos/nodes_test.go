//go:build linux

package chaos

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/natsauth"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/testutil/netlab"
)

// startNodes starts n `ardea server` processes as one cluster on
// loopback (route ports picked first; every node lists every route),
// each with its own data dir under dir sharing the compile caches, and
// stops them when t ends. Every node gets the admin token the first one
// minted.
func startNodes(t *testing.T, dir string, n int) []*Daemon {
	t.Helper()
	return startNodesIn(t, dir, n, nil)
}

// startNodesIn is startNodes with node i in the network namespace of
// lab's node i (lab nil: loopback): its API, NATS routes and hosts there,
// its API reached from the test through a proxy on loopback (d.API).
func startNodesIn(t *testing.T, dir string, n int, lab *netlab.Lab) []*Daemon {
	t.Helper()
	nodes, _ := startNodesLinked(t, dir, n, lab, nil)
	return nodes
}

// routePort is the port of a lab node's route address.
const routePort = 7222

// startNodesLinked is startNodesIn with, when link is not nil (lab must
// not be nil then), every NATS route through a LinkProxy that applies
// link: node i's cluster listener is on its namespace's loopback, where
// no other namespace reaches it, and proxies[i], in the same namespace,
// listens on the node's lab address (the route URL every node lists) and
// forwards to it. So every route connection into node i, whichever node
// opens it (the configured routes, their pooled connections, one learnt
// by gossip), crosses proxies[i]: one shaped link per connection. A
// route URL gossiped from a node's listener (127.0.0.1) leads the node
// that tries it to itself, which nats-server ignores.
func startNodesLinked(t *testing.T, dir string, n int, lab *netlab.Lab, link *netlab.Link) (nodes []*Daemon, proxies []*netlab.LinkProxy) {
	t.Helper()
	if link != nil && lab == nil {
		t.Fatal("startNodesLinked: a link between nodes needs a lab")
	}
	bin, cache, wazero := binaries(t)
	secret := filepath.Join(dir, "cluster.secret")
	if err := natsauth.NewSecret().WriteFile(secret); err != nil {
		t.Fatal(err)
	}
	var listens, routes []string
	for i := range n {
		addr := ""
		if lab != nil {
			addr = lab.Node(i).Addr(routePort) // each namespace has its own ports
		} else {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr = ln.Addr().String()
			ln.Close()
		}
		routes = append(routes, "nats://"+addr)
		if link != nil {
			// The node's own listener where only the proxy reaches it.
			local := fmt.Sprintf("127.0.0.1:%d", routePort)
			proxies = append(proxies, lab.ProxyIn(t, i, addr, local, *link))
			addr = local
		}
		listens = append(listens, addr)
	}
	nodes = make([]*Daemon, n)
	errs := make(chan error, n)
	for i := range n {
		data := filepath.Join(dir, fmt.Sprintf("n%d", i+1))
		if err := os.MkdirAll(data, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, sub := range []string{"wazero", "cache"} {
			if err := os.Symlink(filepath.Join(wazero, sub), filepath.Join(data, sub)); err != nil {
				t.Fatal(err)
			}
		}
		args := []string{"--name", fmt.Sprintf("n%d", i+1),
			"--cluster-listen", listens[i], "--routes", strings.Join(routes, ","), "--cluster-secret-file", secret}
		go func() {
			if lab == nil {
				d, err := StartNode(t.Context(), bin, cache, data, data+".log", args...)
				nodes[i] = d
				errs <- err
				return
			}
			// The API listens in the namespace on a port free in the
			// test's, where its proxy listens on loopback with the same
			// port: the API's DNS-rebinding guard accepts 127.0.0.1 on its
			// own port only.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				errs <- err
				return
			}
			port := ln.Addr().(*net.TCPAddr).Port
			command := func(name string, args ...string) *exec.Cmd { return lab.Command(t.Context(), i, name, args...) }
			d, err := StartNodeWith(t.Context(), command, bin, cache, data, data+".log", append(args, "--listen", lab.Node(i).Addr(port))...)
			if err == nil {
				err = proxyAPI(t, lab, i, d, ln)
			} else {
				ln.Close()
			}
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
	for _, d := range nodes {
		if d != nil {
			t.Cleanup(func() {
				if err := d.Stop(); err != nil {
					t.Error(err)
				}
			})
		}
	}
	if len(failed) > 0 {
		t.Fatal(failed)
	}
	keepNodeLogs(t, nodes)
	var token string
	for _, d := range nodes {
		if d.Token != "" {
			token = d.Token
		}
	}
	if token == "" {
		t.Fatal("no node minted the admin token")
	}
	for _, d := range nodes {
		d.Token = token
	}
	return nodes, proxies
}

// managing polls until one of nodes answers the status of topology name
// (its topology manager runs there) and returns it.
func (r *rowRun) managing(nodes []*Daemon, what string) *Daemon {
	var got *Daemon
	r.poll(hangLimit, what, func() (bool, string) {
		var seen []string
		for _, d := range nodes {
			st, err := d.Status(r.name)
			if err == nil && !Terminal(st.State) || err == nil && st.State == StateFinished {
				got = d
				return true, ""
			}
			seen = append(seen, fmt.Sprint(err))
		}
		return false, strings.Join(seen, "; ")
	})
	return got
}

// otherNodeKill: the node killed is not the one that manages the
// topology but runs some of its containers (they are spread over the
// nodes). Its JetStream replicas go with it; the two left keep a quorum.
// Its containers are placed on the nodes left (their credentials
// revoked), and the topology finishes effectively once with nothing lost
// or duplicated.
//
// A subtest of TestNodeKill: three nodes at a time are enough load beside
// the fault matrix on two cores.
func otherNodeKill(t *testing.T) {
	dir := t.TempDir()
	nodes := startNodesIn(t, dir, 3, labIfRoot(t, 3))
	res := &Result{Row: "other-node-kill/" + EffectivelyOnce, Mode: EffectivelyOnce}
	r := &rowRun{t: t, row: Row{Mode: EffectivelyOnce, Keys: 200, PerKey: 200, Rate: 8000}, res: res, name: "othernode", dir: dir, d: nodes[0]}
	defer func() { nodeFailure(t, nodes, recover()) }()
	r.submitKeyed()
	r.d = r.managing(nodes, "a node manages the topology")
	r.waitFlowing()
	st, err := r.d.Status(r.name)
	if err != nil {
		t.Fatal(err)
	}
	var other *Daemon
	var moved []int
	for _, d := range nodes {
		for _, c := range st.Containers {
			if d != r.d && c.Node == nodeName(d) && other == nil || other == d && c.Node == nodeName(d) {
				other = d
				moved = append(moved, c.ID)
			}
		}
	}
	if other == nil {
		t.Fatalf("no node but the managing %s runs a container: %+v", nodeName(r.d), st.Containers)
	}
	before := size(r.out)
	killed := time.Now()
	if err := other.Kill(); err != nil {
		t.Fatal(err)
	}
	r.release(len(r.held) / 2)
	r.poll(hangLimit, "output again after the kill", func() (bool, string) {
		return size(r.out) > before, fmt.Sprintf("%d bytes, %d at the kill", size(r.out), before)
	})
	rec := time.Since(killed).Seconds()
	res.RecoverySec = append(res.RecoverySec, rec)
	// Where the containers run now, before they finish (and are removed):
	// the half of the input still held keeps them running. Output can
	// resume before the killed node's containers are placed again (the
	// keys that no longer pass through them flow while the manager waits
	// out their heartbeats), so this is waited for, not read once.
	r.poll(hangLimit, "the killed node's containers placed on the others", func() (bool, string) {
		st, err := r.d.Status(r.name)
		if err != nil {
			return false, err.Error()
		}
		for _, c := range st.Containers {
			if c.Node == nodeName(other) || c.Node == "" {
				return false, fmt.Sprintf("container %d on node %q after %s was killed", c.ID, c.Node, nodeName(other))
			}
		}
		return true, ""
	})
	r.finish()
	t.Logf("node %s killed beside the managing %s, its containers %v placed on the others; output again after %.1f s; checker lost %d, duplicates %d",
		nodeName(other), nodeName(r.d), moved, rec, res.Lost, res.Dups)
}

// TestNodeKill: three `ardea server` nodes run the keyed sequence
// topology with its containers spread over them; while data flows the
// node that manages it is killed with SIGKILL (its NATS server,
// supervisor and hosts with it). Another node takes the topology over
// when its manager lock expires, fences what the old manager placed, and
// it finishes there: nothing lost, and effectively once nothing
// duplicated (the per-key sequence checker). The other_node subtest kills
// a node that runs containers but not the manager.
func TestNodeKill(t *testing.T) {
	testutil.StartsProcesses(t, "three ardea server nodes, one killed")
	t.Parallel()
	for _, mode := range []string{EffectivelyOnce, AtLeastOnce} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			nodes := startNodesIn(t, dir, 3, labIfRoot(t, 3))
			res := &Result{Row: "node-kill/" + mode, Mode: mode}
			r := &rowRun{t: t, row: Row{Mode: mode, Keys: 200, PerKey: 200, Rate: 8000}, res: res, name: "nodekill", dir: dir, d: nodes[0]}
			defer func() { nodeFailure(t, nodes, recover()) }()
			r.submitKeyed()
			r.d = r.managing(nodes, "a node manages the topology")
			r.waitFlowing()
			first := r.d
			before := size(r.out)
			killed := time.Now()
			if err := first.Kill(); err != nil {
				t.Fatal(err)
			}
			var rest []*Daemon
			for _, d := range nodes {
				if d != first {
					rest = append(rest, d)
				}
			}
			// Data after the kill, by construction: half of what was held.
			r.release(len(r.held) / 2)
			r.d = r.managing(rest, "another node takes the topology over")
			r.poll(hangLimit, "output again after the kill", func() (bool, string) {
				return size(r.out) > before, fmt.Sprintf("%d bytes, %d at the kill", size(r.out), before)
			})
			rec := time.Since(killed).Seconds()
			res.RecoverySec = append(res.RecoverySec, rec)
			r.finish()
			t.Logf("%s: node %s killed, taken over by %s; output again after %.1f s; checker: lost %d, duplicates %d",
				mode, filepath.Base(first.DataDir), filepath.Base(r.d.DataDir), rec, res.Lost, res.Dups)
			if os.Getenv("ARDEA_CHAOS_LOGS") == "1" { // where a recovery's time goes
				t.Logf("killed at %s; node log %s:\n%s", killed.UTC().Format(time.RFC3339Nano), r.d.LogPath, Tail(r.d.LogPath, 30000))
			}
		})
	}
	t.Run("other_node", otherNodeKill)
}

// labIfRoot is a lab of n nodes, each in its own network namespace, or
// nil (the nodes on loopback, said in the log) where namespaces need a
// root this test does not have or ip(8) is missing.
func labIfRoot(t *testing.T, n int) *netlab.Lab {
	t.Helper()
	if _, err := exec.LookPath("ip"); os.Geteuid() != 0 || err != nil {
		t.Logf("nodes on loopback, not in network namespaces: they need root and ip(8) (euid %d, ip: %v)", os.Geteuid(), err)
		return nil
	}
	lab, err := netlab.New(t, n)
	if err != nil {
		t.Fatal(err)
	}
	return lab
}

// nodeName is a node's --name: its data directory's name (startNodes).
func nodeName(d *Daemon) string { return filepath.Base(d.DataDir) }

// proxyAPI makes d's API (in lab node i's namespace) reachable from the
// test's namespace: d.API becomes a loopback proxy into it, accepting on
// ln (the CLI and the status calls use it).
func proxyAPI(t *testing.T, lab *netlab.Lab, i int, d *Daemon, ln net.Listener) error {
	api := d.API
	p, err := netlab.NewProxy(ln, func(ctx context.Context) (net.Conn, error) { return lab.Dial(ctx, i, "tcp", api) }, netlab.Link{})
	if err != nil {
		return err
	}
	t.Cleanup(func() { _ = p.Close() })
	d.API = p.Addr()
	return nil
}
