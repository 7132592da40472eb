package settings

import (
	"fmt"
	"strconv"
	"time"

	"github.com/ardea-dev/ardea"
)

// Recovery is how a topology manager watches its containers and how long
// it gives a recovery before it declares the topology FAILED
// (docs/reliability.md).
type Recovery struct {
	// Timeout (topology.recovery.timeout, default 60s) bounds a recovery:
	// a rollback that has not run the topology again this long after the
	// fault ends the topology FAILED, with the reason, its containers
	// stopped.
	Timeout time.Duration
	// MissedHeartbeats (topology.heartbeat.missed, default 10, one every
	// 500ms): a container that sent none for this many intervals is
	// declared lost, killed and replaced.
	MissedHeartbeats int
}

// Defaults of Recovery.
const (
	DefaultRecoveryTimeout  = 60 * time.Second
	DefaultMissedHeartbeats = 10
)

// RecoverySettings reads and checks topology.recovery.timeout and
// topology.heartbeat.missed.
func RecoverySettings(t *ardea.Topology) (Recovery, error) {
	r := Recovery{Timeout: DefaultRecoveryTimeout, MissedHeartbeats: DefaultMissedHeartbeats}
	if v, ok := t.Config["topology.recovery.timeout"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return r, fmt.Errorf("topology %s: topology.recovery.timeout %q: want a duration of at least 1s such as 60s", t.Name, v)
		}
		r.Timeout = d
	}
	if v, ok := t.Config["topology.heartbeat.missed"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 2 || n > 1000 {
			return r, fmt.Errorf("topology %s: topology.heartbeat.missed %q: want an integer from 2 to 1000 (heartbeat intervals)", t.Name, v)
		}
		r.MissedHeartbeats = n
	}
	return r, nil
}
