package sinks

import (
	"testing"
	"time"
)

func TestRedial(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r := redial{min: 100 * time.Millisecond, max: 400 * time.Millisecond}
	if r.wait(t0) != 0 {
		t.Fatal("a fresh redial waits")
	}
	for i, want := range []time.Duration{100, 200, 400, 400} {
		r.failed(t0)
		if r.backoff != want*time.Millisecond || r.wait(t0) != want*time.Millisecond {
			t.Fatalf("failure %d: back-off %v, wait %v; want %v", i+1, r.backoff, r.wait(t0), want*time.Millisecond)
		}
	}
	if r.wait(t0.Add(time.Second)) != 0 {
		t.Error("still waiting after the back-off")
	}
	if !r.undelivered() || r.undelivered() {
		t.Error("undelivered: true only the first time of an episode")
	}
	if !r.dropping(3) || r.dropping(2) {
		t.Error("dropping: true only for the first drop of an episode")
	}
	if was, n := r.delivered(); !was || n != 5 || r.backoff != 0 {
		t.Errorf("delivered: %v, %d dropped, back-off %v", was, n, r.backoff)
	}
	if was, n := r.delivered(); was || n != 0 {
		t.Errorf("second delivered: %v, %d", was, n)
	}
	r.failed(t0)
	r.answered()
	if r.backoff != 0 {
		t.Error("answered keeps the back-off")
	}
}
