package settings

import (
	"fmt"
	"strconv"
	"time"

	"github.com/ardea-dev/ardea"
)

// Reliability modes (topology.reliability), with Heron's meaning.
const (
	AtMostOnce      = "at_most_once"
	AtLeastOnce     = "at_least_once"
	EffectivelyOnce = "effectively_once"
)

// Delivery is a topology's delivery settings.
type Delivery struct {
	// Mode is one of AtMostOnce (default), AtLeastOnce, EffectivelyOnce.
	Mode string
	// MessageTimeout (topology.message.timeout, default 30s): a spout
	// tuple whose tree is not complete by then is failed.
	MessageTimeout time.Duration
	// MaxSpoutPending (topology.max.spout.pending, default 100): a spout
	// task is not asked for more tuples while this many are pending.
	MaxSpoutPending int
	// CheckpointInterval (topology.checkpoint.interval, default 2s):
	// effectively once takes a checkpoint this often.
	CheckpointInterval time.Duration
	// CheckpointTimeout (topology.checkpoint.timeout; 0, the default, is
	// five intervals and at least 10s): a checkpoint not stored by every
	// task this long after it began is given up (counted as failed) and
	// the next one begins. See CheckpointGiveUp.
	CheckpointTimeout time.Duration
}

// maxCheckpointTimeout bounds topology.checkpoint.timeout: a tenant's
// checkpoint in progress holds the topology's next one back (and its
// aligned barriers buffer input) at most this long.
const maxCheckpointTimeout = time.Hour

// CheckpointGiveUp is how long a checkpoint may take before it is given
// up: CheckpointTimeout, or by default max(5 intervals, 10s). A barrier
// waits behind the tuples queued before it, so a slow or loaded topology
// needs longer than its interval.
func (d Delivery) CheckpointGiveUp() time.Duration {
	if d.CheckpointTimeout > 0 {
		return d.CheckpointTimeout
	}
	return max(5*d.CheckpointInterval, 10*time.Second)
}

// DeliverySettings reads and checks topology.reliability,
// topology.message.timeout, topology.max.spout.pending,
// topology.checkpoint.interval and topology.checkpoint.timeout.
func DeliverySettings(t *ardea.Topology) (Delivery, error) {
	d := Delivery{Mode: AtMostOnce, MessageTimeout: 30 * time.Second, MaxSpoutPending: 100, CheckpointInterval: 2 * time.Second}
	if v, ok := t.Config["topology.reliability"]; ok {
		switch v {
		case AtMostOnce, AtLeastOnce, EffectivelyOnce:
			d.Mode = v
		default:
			return d, fmt.Errorf("topology %s: topology.reliability %q: want %s, %s or %s", t.Name, v, AtMostOnce, AtLeastOnce, EffectivelyOnce)
		}
	}
	if v, ok := t.Config["topology.message.timeout"]; ok {
		dur, err := time.ParseDuration(v)
		if err != nil || dur <= 0 {
			return d, fmt.Errorf("topology %s: topology.message.timeout %q: want a positive duration such as 30s", t.Name, v)
		}
		d.MessageTimeout = dur
	}
	if v, ok := t.Config["topology.max.spout.pending"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return d, fmt.Errorf("topology %s: topology.max.spout.pending %q: want a positive integer", t.Name, v)
		}
		d.MaxSpoutPending = n
	}
	if v, ok := t.Config["topology.checkpoint.interval"]; ok {
		dur, err := time.ParseDuration(v)
		if err != nil || dur < time.Millisecond {
			return d, fmt.Errorf("topology %s: topology.checkpoint.interval %q: want a duration of at least 1ms such as 2s", t.Name, v)
		}
		d.CheckpointInterval = dur
	}
	if v, ok := t.Config["topology.checkpoint.timeout"]; ok {
		dur, err := time.ParseDuration(v)
		if err != nil || dur < time.Millisecond || dur > maxCheckpointTimeout {
			return d, fmt.Errorf("topology %s: topology.checkpoint.timeout %q: want a duration from 1ms to %v such as 1m", t.Name, v, maxCheckpointTimeout)
		}
		d.CheckpointTimeout = dur
	}
	return d, nil
}
