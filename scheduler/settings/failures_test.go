package settings

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea"
)

// TestBoltFailureSettings: defaults, the component's value over the
// topology's, the dead-letter path relative to the topology file, and bad
// values refused with the setting's name.
func TestBoltFailureSettings(t *testing.T) {
	dir := t.TempDir()
	top := &ardea.Topology{Name: "wc", Dir: dir, Config: map[string]string{}}
	c := &ardea.Component{Name: "count", Config: map[string]string{}}
	fs, err := BoltFailureSettings(top, c)
	if err != nil || fs.MaxConsecutive != defaultMaxConsecutiveFailures || fs.MaxRollbacks != DefaultMaxTupleRollbacks || fs.DeadLetter != "" ||
		fs.MaxFailingTime != defaultMaxFailingTime {
		t.Fatalf("defaults %+v %v", fs, err)
	}
	top.Config["topology.bolt.max_consecutive_failures"] = "7"
	top.Config["topology.bolt.dead_letter"] = "dead.jsonl"
	c.Config["topology.bolt.max_consecutive_failures"] = "9"
	c.Config["topology.bolt.max_tuple_rollbacks"] = "0"
	top.Config["topology.bolt.max_failing_time"] = "1m"
	c.Config["topology.bolt.max_failing_time"] = "250ms"
	fs, err = BoltFailureSettings(top, c)
	if err != nil || fs.MaxConsecutive != 9 || fs.MaxFailingTime != 250*time.Millisecond || fs.MaxRollbacks != 0 || fs.DeadLetter != filepath.Join(dir, "dead.jsonl") {
		t.Fatalf("set %+v %v", fs, err)
	}
	for k, v := range map[string]string{"topology.bolt.max_consecutive_failures": "0", "topology.bolt.max_tuple_rollbacks": "-1",
		"topology.bolt.max_failing_time": "soon"} {
		bad := &ardea.Component{Name: "count", Config: map[string]string{k: v}}
		if _, err := BoltFailureSettings(top, bad); err == nil || !strings.Contains(err.Error(), k) || !strings.Contains(err.Error(), "component count") {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
}
