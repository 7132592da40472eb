package cluster

import (
	"testing"
	"time"
)

// TestFenceWait: a TM waits for a node it cannot reach until that node
// has surely killed its containers (selfFenceGrace after its route was
// last up here); not for one connected, nor one never seen.
func TestFenceWait(t *testing.T) {
	var r peerRoutes
	t0 := time.Unix(1000, 0)
	if n := r.set([]string{"n2", "n3", "n3", ""}, t0); n != 2 {
		t.Fatalf("%d peers routed, want 2", n)
	}
	for _, c := range []struct {
		node string
		at   time.Time
		want time.Duration
	}{
		{"n2", t0, 0},                  // connected: it hears the epoch
		{"n9", t0, 0},                  // never seen
		{"n3", t0.Add(time.Second), 0}, // still connected
	} {
		if got := r.wait(c.node, c.at); got != c.want {
			t.Errorf("wait for %s: %v, want %v", c.node, got, c.want)
		}
	}
	r.set([]string{"n2"}, t0.Add(time.Second)) // n3's route closed
	// Last seen up at t0.
	if got := r.wait("n3", t0.Add(time.Second)); got != selfFenceGrace-time.Second {
		t.Errorf("wait for n3 a second after it was last up: %v, want %v", got, selfFenceGrace-time.Second)
	}
	if got := r.wait("n3", t0.Add(selfFenceGrace+time.Second)); got != 0 {
		t.Errorf("wait for n3 a grace after: %v, want 0", got)
	}
}
