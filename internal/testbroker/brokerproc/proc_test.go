//go:build unix

package brokerproc

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestScript(t *testing.T) {
	for _, name := range []string{"kafka", "pulsar"} {
		s, err := Script(name)
		if err != nil || filepath.Base(filepath.Dir(s)) != name || filepath.Base(filepath.Dir(filepath.Dir(s))) != "testbroker" {
			t.Errorf("Script(%s) = %q, %v", name, s, err)
		}
	}
	if _, err := Script("nope"); err == nil || !strings.HasPrefix(err.Error(), "testbroker: ") {
		t.Errorf("Script(nope) = %v", err)
	}
}

func TestFreePortsAndTail(t *testing.T) {
	ports, err := FreePorts(3)
	if err != nil || len(ports) != 3 || ports[0] == ports[1] || ports[1] == ports[2] || ports[0] == ports[2] {
		t.Fatalf("FreePorts(3) = %v, %v", ports, err)
	}
	if got := Tail([]byte("a\nb\nc\n"), 2); got != "...\nb\nc" {
		t.Errorf("Tail = %q", got)
	}
	if got := LogTail(filepath.Join(t.TempDir(), "none.log")); got != "(no log)" {
		t.Errorf("LogTail(missing) = %q", got)
	}
	if !PortTaken.MatchString("java.net.BindException: Address already in use") {
		t.Error("PortTaken misses a bind failure")
	}
}
