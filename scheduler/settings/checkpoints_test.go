package settings

import (
	"strings"
	"testing"
)

// TestCheckpointStorageSettings: defaults, and bad values refused with the
// setting's name.
func TestCheckpointStorageSettings(t *testing.T) {
	cs, err := CheckpointStorageSettings("wc", nil)
	if err != nil || cs.SaveTimeout != DefaultSaveTimeout || cs.Retain != DefaultRetain {
		t.Fatalf("defaults %+v %v", cs, err)
	}
	cs, err = CheckpointStorageSettings("wc", map[string]string{"topology.checkpoint.save.timeout": "2s", "topology.checkpoint.retain": "5"})
	if err != nil || cs.SaveTimeout.Seconds() != 2 || cs.Retain != 5 {
		t.Fatalf("set %+v %v", cs, err)
	}
	for k, v := range map[string]string{"topology.checkpoint.save.timeout": "1ms", "topology.checkpoint.retain": "0"} {
		if _, err := CheckpointStorageSettings("wc", map[string]string{k: v}); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
	for _, v := range []string{"x", "11m"} {
		if _, err := CheckpointStorageSettings("wc", map[string]string{"topology.checkpoint.save.timeout": v}); err == nil {
			t.Errorf("save timeout %s accepted", v)
		}
	}
}
