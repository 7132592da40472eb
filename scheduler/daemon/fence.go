package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/ardea-dev/ardea/scheduler/settings"

	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/launcher"
)

// Lost containers (docs/reliability.md, "Fencing"). A container process
// that is alive to the supervisor but has sent no heartbeat for
// topology.heartbeat.missed intervals (paused by SIGSTOP, wedged, cut off
// from NATS) is declared lost: status shows it LOST, it is killed with
// SIGKILL (delivered even to a stopped process, so it never wakes) and the
// supervisor replaces it. In an effectively-once topology the TM fences
// first: the lineage it ran in can no longer complete a checkpoint (its
// reports carry the old generation and are refused), and the topology
// rolls back to the last global checkpoint.

// Alive records a host's liveness beat, with the time it arrived
// (ctl.Manager).
func (t *tm) Alive(a ctl.Alive) {
	a.Time = time.Now()
	t.mu.Lock()
	t.alive[a.Container] = a
	t.mu.Unlock()
}

// watchHeartbeats declares lost containers until ctx ends.
func (t *tm) watchHeartbeats(ctx context.Context) {
	rs, err := settings.RecoverySettings(t.top)
	if err != nil {
		t.log.Warn("heartbeat watch off", "err", err)
		return
	}
	limit := time.Duration(rs.MissedHeartbeats) * ctl.HeartbeatInterval
	tick := time.NewTicker(ctl.HeartbeatInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, c := range t.silentContainers(limit) {
			t.declareLost(c, limit)
		}
	}
}

// silentContainer is a running container whose last heartbeat is too old.
type silentContainer struct {
	id   int
	pid  int
	last time.Time
}

// silentContainers lists the running processes that sent a liveness beat
// once and none for limit. A process that has not sent its first one yet
// is still starting and is not judged.
func (t *tm) silentContainers(limit time.Duration) []silentContainer {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != StateRunning && t.state != StatePaused || t.stopping {
		return nil
	}
	var out []silentContainer
	for c := 1; c <= t.doc.Plan.Containers; c++ {
		hb, ok := t.alive[c]
		if !ok {
			continue
		}
		ps, ok := t.d.sup.Status(t.procID(c))
		if !ok || ps.State != launcher.StateRunning || ps.PID == 0 || hb.PID != ps.PID {
			continue
		}
		// Judged on the TM's clock: when the beat arrived.
		if since := time.Since(hb.Time); since > limit {
			if t.lost[c] != ps.PID {
				out = append(out, silentContainer{id: c, pid: ps.PID, last: hb.Time})
			}
		}
	}
	return out
}

// declareLost fences the lineage (effectively once), marks the container
// lost and kills its process group; the supervisor restarts it.
func (t *tm) declareLost(c silentContainer, limit time.Duration) {
	why := fmt.Sprintf("container %d (pid %d) sent no heartbeat for %v (topology.heartbeat.missed × %v): declared lost",
		c.id, c.pid, time.Since(c.last).Round(time.Millisecond), ctl.HeartbeatInterval)
	t.mu.Lock()
	t.lost[c.id] = c.pid
	t.mu.Unlock()
	t.log.Error("container lost; replacing it", "container", c.id, "pid", c.pid, "limit", limit, "reason", why)
	t.fence(why)
	if err := t.d.sup.kill(t.procID(c.id), c.pid); err != nil {
		t.log.Warn("kill a lost container", "container", c.id, "pid", c.pid, "err", err)
	}
}

// upContainers lists the containers whose process runs and sent a
// liveness beat in the last two intervals: the ones a request waits for
// (ctl.NATSClientOptions.Expected). It takes t.mu: no caller of t.ctl may
// hold it.
func (t *tm) upContainers() []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	var up []int
	for c, a := range t.alive {
		if time.Since(a.Time) > 2*ctl.HeartbeatInterval || t.lost[c] == a.PID {
			continue
		}
		if ps, ok := t.d.sup.Status(t.procID(c)); ok && ps.State == launcher.StateRunning && ps.PID == a.PID {
			up = append(up, c)
		}
	}
	return up
}

// Exited records a container's exit (ctl.Manager): the exits count (a
// live switch abandons itself when one exits while it prepares) and an
// effectively-once topology is fenced for a rollback.
func (t *tm) Exited(container int, err error) {
	why := t.procID(container) + " exited"
	if err != nil {
		why += " (" + err.Error() + ")"
	}
	t.mu.Lock()
	t.exits++
	t.lastExit = why
	t.mu.Unlock()
	t.fence(why)
}
