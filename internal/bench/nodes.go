package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/internal/natsauth"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// NodesOptions configures `ardea bench wordcount --nodes N`: the word
// count through N `ardea server` processes forming one cluster on this
// machine.
type NodesOptions struct {
	Nodes            int
	Duration, Warmup time.Duration
	Containers       int
	Lang             string
	// Bin is the ardea binary the nodes run.
	Bin string
}

// NodesResult is what --nodes reports.
type NodesResult struct {
	Nodes        int     `json:"nodes"`
	TuplesPerSec float64 `json:"tuples_per_sec"`
	Containers   int     `json:"containers"`
	Lang         string  `json:"lang"`
	DurationSec  float64 `json:"duration_sec"`
	// RecoverySec is the time from SIGKILL of the node that manages the
	// topology (its NATS server, supervisor and containers with it) to
	// the count bolt executing again on another node (0 with one node:
	// nothing to move to). Most of it is the manager lock's TTL.
	RecoverySec float64 `json:"recovery_sec,omitempty"`
	// Placement: where the containers ran (every one on the managing
	// node until containers are placed across nodes).
	Placement map[string]int `json:"placement"`
}

// node is one `ardea server` process of the bench.
type benchNode struct {
	name, api string
	cmd       *exec.Cmd
	exited    chan struct{}
}

// WordCountNodes runs the benchmark on N nodes.
func WordCountNodes(ctx context.Context, o NodesOptions) (*NodesResult, error) {
	if o.Nodes < 1 {
		return nil, errors.New("bench --nodes: at least 1")
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Warmup <= 0 {
		o.Warmup = 2 * time.Second
	}
	if o.Containers <= 0 {
		o.Containers = 2
	}
	if o.Lang == "" {
		o.Lang = "go"
	}
	dir, err := os.MkdirTemp("", "ardea-bench-nodes-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	nodes, err := startBenchNodes(ctx, o.Bin, dir, o.Nodes)
	defer func() {
		for _, n := range nodes {
			n.stop()
		}
	}()
	if err != nil {
		return nil, err
	}
	token, err := adminToken(ctx, dir, o.Nodes)
	if err != nil {
		return nil, err
	}
	client := func(n *benchNode) *api.Client {
		c := api.NewClient(n.api)
		c.Token = token
		return c
	}
	split, count, err := wordcount.Modules(o.Lang)
	if err != nil {
		return nil, err
	}
	b := ardea.NewBuilder("bench-nodes")
	b.Set("topology.packing.containers", fmt.Sprint(o.Containers))
	b.Spout("lines", ardea.BuiltinPrefix+"generator").Config("rate", "0").Config("count", "0")
	b.Bolt("split", "split.wasm").Shuffle("lines").Output("default", "word")
	b.Bolt("count", "count.wasm").Parallelism(2).Fields("split", "word").Output("default", "word", "count")
	t, err := b.BuildWith(ardea.ValidateOptions{SkipModuleCheck: true})
	if err != nil {
		return nil, err
	}
	spec, err := t.Format()
	if err != nil {
		return nil, err
	}
	if _, err := client(nodes[0]).Submit(ctx, api.SubmitRequest{Name: "bench", Spec: string(spec),
		Modules: map[string][]byte{"split": split, "count": count}}); err != nil {
		return nil, err
	}
	counted := func(c *api.Client) (int64, *api.Status, error) {
		st, err := c.Status(ctx, "bench")
		if err != nil {
			return 0, nil, err
		}
		var n int64
		for _, ct := range st.Containers {
			for _, in := range ct.Instances {
				if strings.HasPrefix(in.Name, "count/") {
					n += in.Executed
				}
			}
		}
		return n, &st, nil
	}
	c0 := client(nodes[0])
	if err := poll(ctx, 2*time.Minute, func() (bool, error) { n, _, err := counted(c0); return n > 0, err }); err != nil {
		return nil, fmt.Errorf("bench --nodes: no words counted: %w", err)
	}
	sleep(ctx, o.Warmup)
	n0, _, err := counted(c0)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	sleep(ctx, o.Duration)
	n1, st, err := counted(c0)
	if err != nil {
		return nil, err
	}
	res := &NodesResult{Nodes: o.Nodes, TuplesPerSec: float64(n1-n0) / time.Since(t0).Seconds(), Containers: len(st.Containers),
		Lang: o.Lang, DurationSec: o.Duration.Seconds(), Placement: map[string]int{}}
	manager := ""
	for _, ct := range st.Containers {
		node := ct.Node
		if node == "" {
			node = nodes[0].name
		}
		res.Placement[node]++
		manager = node
	}
	if o.Nodes == 1 {
		return res, nil
	}
	// Recovery: SIGKILL the node that manages the topology; another node
	// takes it over once its lock expires.
	var victim *benchNode
	var rest []*benchNode
	for _, n := range nodes {
		if n.name == manager {
			victim = n
		} else {
			rest = append(rest, n)
		}
	}
	if victim == nil {
		return nil, fmt.Errorf("bench --nodes: the managing node %q is not one of the bench's", manager)
	}
	_ = victim.cmd.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	<-victim.exited
	c1 := client(rest[0])
	err = poll(ctx, 2*time.Minute, func() (bool, error) {
		n, st, err := counted(c1)
		if err != nil {
			return false, nil // no manager yet, or the cluster elects
		}
		for _, ct := range st.Containers {
			if ct.Node == victim.name {
				return false, nil
			}
		}
		return n > 0, nil
	})
	if err != nil {
		return nil, fmt.Errorf("bench --nodes: the topology did not come back after node %s was killed: %w", victim.name, err)
	}
	res.RecoverySec = time.Since(killed).Seconds()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_, _ = c1.Action(cctx, "bench", "kill", url.Values{}, nil)
	return res, nil
}

// startBenchNodes starts n `ardea server` processes under dir: one alone
// for n == 1, else a cluster routed on loopback ports picked first.
func startBenchNodes(ctx context.Context, bin, dir string, n int) ([]*benchNode, error) {
	var routes, listens []string
	args := func(i int) []string { return nil }
	if n > 1 {
		secret := filepath.Join(dir, "cluster.secret")
		if err := natsauth.NewSecret().WriteFile(secret); err != nil {
			return nil, err
		}
		for range n {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return nil, err
			}
			listens = append(listens, ln.Addr().String())
			routes = append(routes, "nats://"+ln.Addr().String())
			ln.Close()
		}
		args = func(i int) []string {
			return []string{"--name", fmt.Sprintf("n%d", i+1), "--cluster-listen", listens[i],
				"--routes", strings.Join(routes, ","), "--cluster-secret-file", secret}
		}
	}
	nodes := make([]*benchNode, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			nd, err := startBenchNode(ctx, bin, filepath.Join(dir, fmt.Sprintf("n%d", i+1)), args(i))
			nodes[i] = nd
			errs <- err
		}()
	}
	var failed []error
	for range n {
		if err := <-errs; err != nil {
			failed = append(failed, err)
		}
	}
	var started []*benchNode
	for _, nd := range nodes {
		if nd != nil {
			started = append(started, nd)
		}
	}
	if len(failed) > 0 {
		return started, fmt.Errorf("bench --nodes: %w", errors.Join(failed...))
	}
	return nodes, nil
}

func startBenchNode(ctx context.Context, bin, data string, extra []string) (*benchNode, error) {
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, err
	}
	argv := append([]string{"--log-format", "json", "--log-level", "warn", "server", "--data-dir", data, "--listen", "127.0.0.1:0"}, extra...)
	cmd := exec.Command(bin, argv...)
	// The node saves a CLI context: in its own config dir, not the user's.
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(data, "config"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logf, err := os.Create(data + ".log")
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	n := &benchNode{cmd: cmd, exited: make(chan struct{}), name: "local"}
	if len(extra) > 1 {
		n.name = extra[1]
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			for i := 0; i+1 < len(f); i++ {
				if f[i] == "API" && strings.HasPrefix(f[i+1], "http") {
					select {
					case addr <- f[i+1]:
					default:
					}
				}
			}
		}
		_ = cmd.Wait()
		logf.Close()
		close(n.exited)
	}()
	t := time.NewTimer(2 * time.Minute)
	defer t.Stop()
	select {
	case n.api = <-addr:
		return n, nil
	case <-n.exited:
		b, _ := os.ReadFile(data + ".log")
		return nil, fmt.Errorf("ardea server %s exited before serving: %s", n.name, tail(string(b), 2000))
	case <-t.C:
		n.stop()
		return nil, fmt.Errorf("ardea server %s did not serve within 2 minutes", n.name)
	case <-ctx.Done():
		n.stop()
		return nil, ctx.Err()
	}
}

func (n *benchNode) stop() {
	select {
	case <-n.exited:
		return
	default:
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case <-n.exited:
	case <-t.C:
		_ = n.cmd.Process.Kill()
		<-n.exited
	}
}

// adminToken reads the admin token the first node minted into its data
// dir (any of the n).
func adminToken(ctx context.Context, dir string, n int) (string, error) {
	var tok string
	err := poll(ctx, time.Minute, func() (bool, error) {
		for i := range n {
			b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("n%d", i+1), "admin.token"))
			if err == nil {
				tok = strings.TrimSpace(string(b))
				return true, nil
			}
		}
		return false, nil
	})
	return tok, err
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
