//go:build linux

package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testutil/netlab"
)

// nodeRecord is the part of a node's record (GET /api/v1/nodes) the
// suite reads.
type nodeRecord struct {
	Name       string    `json:"name"`
	Health     string    `json:"health"`
	Topologies []string  `json:"topologies"`
	Containers int       `json:"containers"`
	Seen       time.Time `json:"seen"`
}

// nodes is GET /api/v1/nodes through d.
func (d *Daemon) nodes() ([]nodeRecord, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+d.API+"/api/v1/nodes", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+d.Token)
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("nodes: HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	var ns []nodeRecord
	return ns, json.Unmarshal(b, &ns)
}

// keepNodeLogs copies every node's whole log, and its containers', to
// $ARDEA_CHAOS_LOGDIR/<test name>, if
// set, when t ends (passed or failed): a look at how a recovery went.
func keepNodeLogs(t *testing.T, nodes []*Daemon) {
	keep := os.Getenv("ARDEA_CHAOS_LOGDIR")
	if keep == "" {
		return
	}
	// One folder per test (subtests apart): <dir>/<test name>/.
	keep = filepath.Join(keep, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
	t.Cleanup(func() {
		_ = os.MkdirAll(keep, 0o755)
		for _, d := range nodes {
			if b, err := os.ReadFile(d.LogPath); err == nil {
				_ = os.WriteFile(filepath.Join(keep, filepath.Base(d.LogPath)), b, 0o644)
			}
			// The containers' logs (the daemon's logs/ directory).
			hosts, _ := filepath.Glob(filepath.Join(d.DataDir, "logs", "*"))
			for _, h := range hosts {
				if b, err := os.ReadFile(h); err == nil {
					_ = os.WriteFile(filepath.Join(keep, nodeName(d)+"-"+filepath.Base(h)), b, 0o644)
				}
			}
		}
	})
}

// nodeFailure is the deferred end of a multi-node row: a rowFailure
// (r.fatalf) is reported with every node's log.
func nodeFailure(t *testing.T, nodes []*Daemon, p any) {
	t.Helper()
	if p == nil {
		return
	}
	f, ok := p.(rowFailure)
	if !ok {
		panic(p)
	}
	for _, d := range nodes {
		if d != nil {
			t.Logf("node log %s:\n%s", d.LogPath, Tail(d.LogPath, 4000))
		}
	}
	t.Fatal(f.why)
}

// TestNodePartition: three `ardea server` nodes, each in its own network
// namespace, run the keyed sequence topology effectively once, its
// containers spread over them. While data flows the node that manages it
// is cut off (its link down). The two others keep JetStream's quorum:
// the topology's lock expires there, one of them takes the topology
// over, fences what the cut-off manager placed and places the containers
// on the two; output resumes. Then the link comes back: the healed node
// rejoins, its manager steps down, whatever it still ran is removed, and
// no container runs twice. Nothing lost, nothing duplicated (the per-key
// sequence checker): never two live copies of a container writing.
func TestNodePartition(t *testing.T) {
	lab, err := netlab.New(t, 3)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	nodes := startNodesIn(t, dir, 3, lab)
	res := &Result{Row: "partition/" + EffectivelyOnce, Mode: EffectivelyOnce}
	r := &rowRun{t: t, row: Row{Mode: EffectivelyOnce, Keys: 200, PerKey: 200, Rate: 8000}, res: res, name: "partition", dir: dir, d: nodes[0]}
	defer func() { nodeFailure(t, nodes, recover()) }()
	r.submitKeyed()
	r.d = r.managing(nodes, "a node manages the topology")
	r.waitFlowing()
	cutIdx := slices.Index(nodes, r.d)
	cutNode := nodes[cutIdx]
	var rest []*Daemon
	for _, d := range nodes {
		if d != cutNode {
			rest = append(rest, d)
		}
	}
	before := size(r.out)
	cut := time.Now()
	if err := lab.Partition(cutIdx); err != nil {
		t.Fatal(err)
	}
	// By construction, not by a clock: the majority's node records say
	// one of them manages the topology.
	r.poll(hangLimit, "a node of the majority manages the topology", func() (bool, string) {
		var seen []string
		for _, d := range rest {
			ns, err := d.nodes()
			if err != nil {
				seen = append(seen, err.Error())
				continue
			}
			for _, n := range ns {
				if n.Name == nodeName(d) && slices.Contains(n.Topologies, "default/"+r.name) {
					return true, ""
				}
				seen = append(seen, fmt.Sprintf("%s:%v", n.Name, n.Topologies))
			}
		}
		return false, strings.Join(seen, " ")
	})
	took := time.Since(cut)
	r.d = r.managing(rest, "the majority's manager answers")
	r.release(len(r.held) / 2)
	r.poll(hangLimit, "output again after the partition", func() (bool, string) {
		return size(r.out) > before, fmt.Sprintf("%d bytes, %d at the cut", size(r.out), before)
	})
	rec := time.Since(cut).Seconds()
	res.RecoverySec = append(res.RecoverySec, rec)
	st, err := r.d.Status(r.name)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range st.Containers {
		if c.Node == nodeName(cutNode) || c.Node == "" {
			t.Errorf("container %d on node %q while %s is cut off", c.ID, c.Node, nodeName(cutNode))
		}
	}
	if err := lab.Heal(cutIdx); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	// The healed node reports again, and no container runs twice: the
	// nodes run as many containers as the topology has (the healed one
	// may be given some again, never a second copy).
	r.poll(hangLimit, "the healed node reports again, every container running once", func() (bool, string) {
		ns, err := r.d.nodes()
		if err != nil {
			return false, err.Error()
		}
		st, err := r.d.Status(r.name)
		if err != nil {
			return false, err.Error()
		}
		running, back := 0, false
		var seen []string
		for _, n := range ns {
			running += n.Containers
			back = back || n.Name == nodeName(cutNode) && n.Seen.After(healed) && n.Health == "up"
			seen = append(seen, fmt.Sprintf("%s:%s:%d", n.Name, n.Health, n.Containers))
		}
		return back && running == len(st.Containers), fmt.Sprintf("%v, %d containers in the topology", seen, len(st.Containers))
	})
	r.finish()
	if res.Lost != 0 || res.Dups != 0 {
		t.Fatalf("partition of %s: lost %d, duplicates %d", nodeName(cutNode), res.Lost, res.Dups)
	}
	t.Logf("node %s (managing) cut off; taken over in %.1f s, output again after %.1f s; healed, it rejoined, no container twice; checker: lost %d, duplicates %d",
		nodeName(cutNode), took.Seconds(), rec, res.Lost, res.Dups)
}
