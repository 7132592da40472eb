package engine

import (
	"testing"

	"github.com/ardea-dev/ardea/bus"
)

// TestMailbox: take copies what was posted (levels stay, a barrier and
// batches to retry are taken once), says whether anything was posted
// since the last take, and returns a channel the next post closes.
func TestMailbox(t *testing.T) {
	var m mailbox
	var c control
	if m.posted.Load() {
		t.Fatal("a new mailbox has mail")
	}
	wake, posted := m.take(&c)
	if posted {
		t.Fatal("take on an empty mailbox says something was posted")
	}
	m.post(func(c *control) { c.active, c.barrier, c.global = true, 3, 5 })
	m.post(func(c *control) { c.barrier = max(c.barrier, 2) })
	m.post(func(c *control) { c.retry = append(c.retry, bus.Delivery{Tuples: 1}) })
	select {
	case <-wake:
	default:
		t.Fatal("a post did not close the wake-up channel")
	}
	if !m.posted.Load() {
		t.Fatal("posted not set")
	}
	wake, posted = m.take(&c)
	if !posted || !c.active || c.barrier != 3 || c.global != 5 || len(c.retry) != 1 {
		t.Fatalf("took %+v (posted %v)", c, posted)
	}
	c.barrier, c.retry = 0, nil // the runner used them
	if _, posted = m.take(&c); posted || !c.active || c.barrier != 0 || c.global != 5 || len(c.retry) != 0 {
		t.Fatalf("second take: %+v (posted %v): want the levels only", c, posted)
	}
	select {
	case <-wake:
		t.Fatal("the wake-up channel closed without a post")
	default:
	}
	m.post(nil) // a wake-up only
	<-wake
	if _, posted = m.take(&c); !posted || !c.active {
		t.Fatalf("after a wake-up: %+v (posted %v)", c, posted)
	}
	// A barrier not yet used by the runner survives a take.
	c.barrier = 4
	m.post(func(c *control) { c.barrier = 1 })
	if m.take(&c); c.barrier != 4 {
		t.Fatalf("barrier %d, want the newer 4 kept", c.barrier)
	}
}
