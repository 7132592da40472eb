//go:build linux

package chaos

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/testutil/netlab"
)

// slowLink is the link between nodes in TestNodeSlowLink (issue 32): 20
// ms one way and 1 % of the segments lost, which TCP turns into a
// segment 200 ms or more late with everything behind it waiting (see
// netlab.Link).
var slowLink = netlab.Link{Delay: 20 * time.Millisecond, Loss: 0.01}

// slowLinkRow is the input of both runs: Keys x PerKey records, the file
// spout unpaced (rate 0) so that the credit flow control between the
// containers, not the spout's pacing, sets the pace.
var slowLinkRow = Row{Mode: EffectivelyOnce, Keys: 200, PerKey: 2000, Rate: 0}

// slowLinkFigures is what one run of TestNodeSlowLink measured.
type slowLinkFigures struct {
	// Window is records/s from the release of the held-back half of the
	// input to the last record written; Run from the submit to the last
	// record.
	Window, Run float64
	Lost, Dups  int
	Spread      map[string]int // containers per node
	Stats       netlab.Stats   // the route proxies', summed
	// Checkpoints is the last global checkpoint seen, FailedCkpts the
	// checkpoints that failed, Rollbacks and Restarts (the containers')
	// the most seen in the window: what recovered while the data
	// crossed the links (a slow link must cost time only).
	Checkpoints                      uint64
	FailedCkpts, Rollbacks, Restarts int
	// Why is what the status said of them, each once: the rollbacks'
	// causes, the checkpoints' errors, the containers' last errors.
	Why []string
}

// note records what st says of checkpoints, rollbacks and restarts.
func (f *slowLinkFigures) note(st Status) {
	if c := st.Checkpoints; c != nil {
		f.Checkpoints = max(f.Checkpoints, c.Global)
		f.FailedCkpts = max(f.FailedCkpts, c.Failed)
		f.Rollbacks = max(f.Rollbacks, c.Rollbacks)
		for _, why := range []string{c.LastRollback, c.LastError} {
			if why != "" && !slices.Contains(f.Why, why) {
				f.Why = append(f.Why, why)
			}
		}
	}
	restarts := 0
	for _, c := range st.Containers {
		restarts += c.Restarts
		why := fmt.Sprintf("container %d: %s", c.ID, c.LastError)
		if c.LastError != "" && !slices.Contains(f.Why, why) {
			f.Why = append(f.Why, why)
		}
	}
	f.Restarts = max(f.Restarts, restarts)
}

// TestNodeSlowLink: three `ardea server` nodes, each in its own network
// namespace, every NATS route between them through a userspace proxy
// (startNodesLinked), run the keyed sequence topology effectively once
// with its containers spread over the nodes, the file spout unpaced. It
// runs twice, each time on a cluster of its own: over plain links (the
// proxies forward at once), then over slow, lossy ones (20 ms one way
// and 1 % loss on every route connection, in both directions). So the
// tuples between containers on different nodes, the JetStream
// replication of the checkpoints and the buckets, the heartbeats and the
// TM's control messages all cross a shaped link.
//
// What it proves: over a slow, lossy link the credit flow control holds
// (the unpaced input reaches the sink and the topology finishes, no wait
// hangs) and nothing is lost or duplicated (the per-key sequence
// checker, effectively once: every key's counts step 1..N). The
// throughput of both runs (records/s) is logged side by side and never
// asserted: on a shared two-core machine it measures the machine as
// much as the link. So are the recoveries a run went through (rollbacks,
// container restarts, failed checkpoints, and why): a slow link should
// cause none, and has caused some (docs/deploy.md, "Slow, lossy links"),
// which cost time, not correctness.
func TestNodeSlowLink(t *testing.T) {
	testutil.StartsProcesses(t, "three ardea server nodes in network namespaces, their routes through shaped proxies")
	t.Parallel()
	var plain, shaped *slowLinkFigures
	t.Run("plain", func(t *testing.T) { plain = slowLinkRun(t, netlab.Link{}) })
	t.Run("shaped", func(t *testing.T) { shaped = slowLinkRun(t, slowLink) })
	if plain == nil || shaped == nil {
		if !t.Failed() {
			t.Skip("no throughput to compare: a run was skipped (see its message) or not selected")
		}
		return
	}
	t.Logf("throughput, %d records effectively once over three nodes: plain links %.0f records/s (whole run %.0f), %v delay %.0f%% loss %.0f records/s (whole run %.0f), %.2fx; lost %d/%d, duplicates %d/%d",
		slowLinkRow.Keys*slowLinkRow.PerKey, plain.Window, plain.Run, slowLink.Delay, 100*slowLink.Loss, shaped.Window, shaped.Run,
		shaped.Window/plain.Window, plain.Lost, shaped.Lost, plain.Dups, shaped.Dups)
}

// slowLinkRun runs the keyed topology on three nodes whose routes cross
// link and returns what it measured (nil when the run failed: t says
// why).
func slowLinkRun(t *testing.T, link netlab.Link) *slowLinkFigures {
	lab, err := netlab.New(t, 3)
	if err != nil {
		t.Fatal(err) // New skips where namespaces are refused (not root, no ip(8))
	}
	dir := t.TempDir()
	nodes, proxies := startNodesLinked(t, dir, 3, lab, &link)
	res := &Result{Row: "slow-link/" + t.Name(), Mode: EffectivelyOnce}
	r := &rowRun{t: t, row: slowLinkRow, res: res, name: "slowlink", dir: dir, d: nodes[0]}
	defer func() { nodeFailure(t, nodes, recover()) }()
	submitted := time.Now()
	r.submitKeyed()
	r.d = r.managing(nodes, "a node manages the topology")
	r.waitFlowing()
	// Spread over the nodes: the data crosses the links.
	st := r.status()
	fig := &slowLinkFigures{Spread: map[string]int{}}
	for _, c := range st.Containers {
		fig.Spread[c.Node]++
	}
	if len(fig.Spread) < 2 || fig.Spread[""] > 0 {
		r.fatalf("containers on %v: want them spread over more than one node", fig.Spread)
	}
	// The window: the rest of the input and its end at once, then until
	// the topology is terminal; the last record's time is when the sink
	// last grew.
	began, before := time.Now(), lines(r.out)
	r.release(-1)
	if err := os.WriteFile(r.endFile(), nil, 0o644); err != nil {
		r.fatalf("end the input: %v", err)
	}
	last, grown := began, size(r.out)
	r.poll(hangLimit, "a terminal state after the whole input", func() (bool, string) {
		if s := size(r.out); s != grown {
			grown, last = s, time.Now()
		}
		st, err := r.d.Status(r.name)
		if err != nil {
			return false, err.Error()
		}
		fig.note(st)
		return Terminal(st.State), fmt.Sprintf("state %s, %d bytes out", st.State, grown)
	})
	total := lines(r.out)
	r.finish() // the checker's verdict: nothing lost, nothing duplicated
	fig.Lost, fig.Dups = res.Lost, res.Dups
	fig.Window = float64(total-before) / last.Sub(began).Seconds()
	fig.Run = float64(total) / last.Sub(submitted).Seconds()
	var perProxy []string
	for i, p := range proxies {
		s := p.Stats()
		if s.Accepted == 0 || s.Bytes == 0 {
			t.Errorf("no route crossed the proxy into node %d: %+v", i, s)
		}
		fig.Stats.Accepted += s.Accepted
		fig.Stats.Segments += s.Segments
		fig.Stats.Bytes += s.Bytes
		fig.Stats.Lost += s.Lost
		fig.Stats.Retransmits += s.Retransmits
		perProxy = append(perProxy, fmt.Sprintf("%s: %d conns, %d segments, %d lost (seed %d)", nodeName(nodes[i]), s.Accepted, s.Segments, s.Lost, s.Seed))
	}
	if link.Loss > 0 && fig.Stats.Segments > 10000 && fig.Stats.Lost == 0 {
		t.Errorf("%d segments crossed links with %.0f%% loss, none lost: the links were not shaped", fig.Stats.Segments, 100*link.Loss)
	}
	t.Logf("link %+v; containers per node %v; %d records in %.1f s after the release: %.0f records/s (whole run %.0f); global checkpoint %d, %d failed, %d rollbacks, %d container restarts; routes: %d MB, %s; checker: lost %d, duplicates %d",
		link, fig.Spread, total-before, last.Sub(began).Seconds(), fig.Window, fig.Run, fig.Checkpoints, fig.FailedCkpts, fig.Rollbacks, fig.Restarts,
		fig.Stats.Bytes>>20, strings.Join(perProxy, "; "), fig.Lost, fig.Dups)
	if len(fig.Why) > 0 {
		t.Logf("recoveries: %s", strings.Join(fig.Why, " | "))
	}
	if t.Failed() {
		return nil
	}
	return fig
}

// lines counts the lines of the file at path (0 if it cannot be read).
func lines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte{'\n'})
}
