package settings

import (
	"fmt"
	"strconv"
	"time"
)

// Checkpoint storage defaults (CheckpointStorageSettings).
const (
	DefaultSaveTimeout = 5 * time.Second
	DefaultRetain      = 3
)

// CheckpointStorage holds the settings of checkpoint storage
// (docs/delivery.md, "Storage").
type CheckpointStorage struct {
	// SaveTimeout (topology.checkpoint.save.timeout, default 5s) bounds
	// the write of one task's snapshot: a write that has not ended by then
	// fails the checkpoint.
	SaveTimeout time.Duration
	// Retain (topology.checkpoint.retain, default 3) is how many global
	// checkpoints the coordinator keeps: a rollback restores the newest
	// intact one (RestorableCheckpoint).
	Retain int
}

// CheckpointStorageSettings reads and checks topology.checkpoint.save.timeout
// (100ms to 10m) and topology.checkpoint.retain (1 to 100) from a
// topology's settings.
func CheckpointStorageSettings(topology string, settings map[string]string) (CheckpointStorage, error) {
	cs := CheckpointStorage{SaveTimeout: DefaultSaveTimeout, Retain: DefaultRetain}
	if v, ok := settings["topology.checkpoint.save.timeout"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < 100*time.Millisecond || d > 10*time.Minute {
			return cs, fmt.Errorf("topology %s: topology.checkpoint.save.timeout %q: want a duration from 100ms to 10m such as 5s", topology, v)
		}
		cs.SaveTimeout = d
	}
	if v, ok := settings["topology.checkpoint.retain"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return cs, fmt.Errorf("topology %s: topology.checkpoint.retain %q: want an integer from 1 to 100 (global checkpoints kept)", topology, v)
		}
		cs.Retain = n
	}
	return cs, nil
}
