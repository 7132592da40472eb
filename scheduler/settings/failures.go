package settings

import (
	"fmt"
	"strconv"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/host/limits"
)

// Defaults of the failing-tuple settings (docs/delivery.md, "A failing
// tuple").
const (
	defaultMaxConsecutiveFailures = 100
	DefaultMaxTupleRollbacks      = 3
	defaultMaxFailingTime         = limits.DefaultMaxFailingTime
)

// BoltFailures is what a topology says about a bolt's failing tuples
// (the module exports ardea_cursor). Each key is set topology-wide or in
// the component's config (the component's wins).
type BoltFailures struct {
	// MaxConsecutive (topology.bolt.max_consecutive_failures, default
	// 100): the instance fails when that many tuples in a row failed.
	MaxConsecutive int
	// MaxFailingTime (topology.bolt.max_failing_time, default 30s): the
	// instance fails when the calls that failed on tuples in a row took
	// this long in all (each may take up to wasm.call.timeout).
	MaxFailingTime time.Duration
	// MaxRollbacks (topology.bolt.max_tuple_rollbacks, default 3):
	// effectively once, a tuple that failed again after this many
	// rollbacks goes to the bolt's dead letters instead.
	MaxRollbacks int
	// DeadLetter (topology.bolt.dead_letter): the file a bolt's given-up
	// tuples are appended to (JSON lines), relative to the topology
	// file; "" keeps none (the tuple is dropped, logged and counted).
	DeadLetter string
}

// BoltFailureSettings reads and checks the failing-tuple settings of
// component c.
func BoltFailureSettings(t *ardea.Topology, c *ardea.Component) (BoltFailures, error) {
	f := BoltFailures{MaxConsecutive: defaultMaxConsecutiveFailures, MaxRollbacks: DefaultMaxTupleRollbacks,
		MaxFailingTime: defaultMaxFailingTime}
	for _, k := range []struct {
		key string
		dst *int
		min int
	}{
		{"topology.bolt.max_consecutive_failures", &f.MaxConsecutive, 1},
		{"topology.bolt.max_tuple_rollbacks", &f.MaxRollbacks, 0},
	} {
		if v, where, ok := Lookup(t, c, k.key); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < k.min {
				return f, fmt.Errorf("%s: %s %q: want an integer of at least %d", where, k.key, v, k.min)
			}
			*k.dst = n
		}
	}
	if v, where, ok := Lookup(t, c, "topology.bolt.max_failing_time"); ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Millisecond {
			return f, fmt.Errorf("%s: topology.bolt.max_failing_time %q: want a duration of at least 1ms such as 30s", where, v)
		}
		f.MaxFailingTime = d
	}
	if v, _, ok := Lookup(t, c, "topology.bolt.dead_letter"); ok && v != "" {
		f.DeadLetter = t.Path(v)
	}
	return f, nil
}
