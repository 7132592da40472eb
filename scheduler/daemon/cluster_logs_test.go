package daemon_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/testutil/wordcounttest"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// TestClusterLogsOfAnotherNode: a topology's container that runs on
// another node than its topology manager's has its log read there
// (placement's OpLogs): the logs API through any node shows the
// lines that container's host logged, for the topology, one instance of
// it, and the container alone (the UI's container logs).
func TestClusterLogsOfAnotherNode(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "three cluster nodes and ardea host processes")
	t.Parallel()
	nodes := startNodes(t, 3) // two nodes make no JetStream quorum
	admin := clusterAdmin(t, nodes)
	client := func(d *daemon.Daemon) *api.Client {
		c := d.Client()
		c.Token = admin
		return c
	}
	ctx := t.Context()
	in := filepath.Join(t.TempDir(), "in.txt")
	wordcounttest.WriteLines(t, in, wordcount.TestLines(10))
	req := api.SubmitRequest{Name: "wcl", Spec: wcSpec(t, "wcl", 2, fileSpout(in), ""), Modules: wcModules(t), Deactivated: true}
	if _, err := client(nodes[0]).Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	// The manager reports the topology; the container on the other node
	// is the remote one.
	var manager string
	testutil.Eventually(t, "a node reports managing wcl", func() (bool, string) {
		ns, err := client(nodes[0]).Nodes(ctx)
		if err != nil {
			return false, err.Error()
		}
		for _, n := range ns {
			if slices.Contains(n.Topologies, "default/wcl") {
				manager = n.Name
			}
		}
		return manager != "", fmt.Sprint(ns)
	})
	var remote api.ContainerStatus
	testutil.Eventually(t, "wcl's containers run, one on the node that does not manage it", func() (bool, string) {
		st, err := client(nodes[1]).Status(ctx, "wcl")
		if err != nil {
			return false, err.Error()
		}
		for _, c := range st.Containers {
			if c.Node != "" && c.Node != manager && c.Host == api.HostRunning && len(c.Instances) > 0 {
				remote = c
				return true, ""
			}
		}
		return false, fmt.Sprintf("manager %s, containers %+v", manager, st.Containers)
	})
	mine := fmt.Sprintf(`"container":%d`, remote.ID)
	inst := remote.Instances[0]
	comp, _, _ := strings.Cut(inst.Name, "/")
	for _, d := range nodes {
		c := client(d)
		testutil.Eventually(t, fmt.Sprintf("node %s shows container %d's log (on %s): its instance %s started", d.NodeName(), remote.ID, remote.Node, inst.Name), func() (bool, string) {
			lines, err := c.ContainerLogs(ctx, "wcl", remote.ID, 500)
			if err != nil {
				return false, err.Error()
			}
			started := false
			for _, l := range lines {
				if !strings.Contains(l, mine) {
					return false, "a line of another container: " + l
				}
				started = started || strings.Contains(l, `"msg":"instance started"`) && strings.Contains(l, fmt.Sprintf(`"task":%d`, inst.Task))
			}
			return started, fmt.Sprintf("%d lines: %q", len(lines), lines)
		})
		// The topology's logs of that instance: filtered on its node.
		lines, err := c.Logs(ctx, "wcl", inst.Name, 100)
		if err != nil || len(lines) == 0 {
			t.Fatalf("node %s: logs of %s: %q %v", d.NodeName(), inst.Name, lines, err)
		}
		for _, l := range lines {
			if !strings.Contains(l, mine) || !strings.Contains(l, `"component":"`+comp+`"`) || !strings.Contains(l, fmt.Sprintf(`"task":%d`, inst.Task)) {
				t.Errorf("node %s: logs of %s: a line of another instance: %s", d.NodeName(), inst.Name, l)
			}
		}
		// The topology's logs: both containers', the remote one's too.
		all, err := c.Logs(ctx, "wcl", "", 1000)
		if err != nil || !slices.ContainsFunc(all, func(l string) bool { return strings.Contains(l, mine) }) {
			t.Errorf("node %s: the topology's logs have no line of container %d: %d lines, %v", d.NodeName(), remote.ID, len(all), err)
		}
	}
}
