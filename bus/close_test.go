package bus

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// TestCloseWaitsForAckClock: Close returns only once the ack clock's
// goroutine has ended. By construction: the test holds the ack state's
// lock until the clock is blocked on it in a tick, then calls Close. A
// Close that does not wait for the clock returns while the clock is still
// blocked (the test fails there); one that waits is seen blocked in its
// wait, and after the lock is released it returns with no goroutine of
// the stream manager left.
func TestCloseWaitsForAckClock(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p := ackPlan(t)
	c := newCluster(t, p, func(o *Options) {
		o.Acking, o.MessageTimeout = true, 4*time.Millisecond // a tick every millisecond
	})
	sm := c.sms[1]
	sm.ack.mu.Lock()
	locked := true
	defer func() {
		if locked {
			sm.ack.mu.Unlock()
		}
	}()
	testutil.Eventually(t, "the ack clock blocked on its lock in a tick", func() bool {
		return stackHas("bus.(*ackState).clock", "sync.(*Mutex).Lock")
	})
	closed := make(chan struct{})
	go func() { sm.Close(); close(closed) }()
	testutil.Eventually(t, "Close waiting for the ack clock", func() (bool, string) {
		select {
		case <-closed:
			t.Fatal("Close returned while the ack clock's goroutine still runs")
		default:
		}
		return stackHas("bus.(*StreamManager).Close", "sync.(*WaitGroup).Wait"), "Close not yet in its wait"
	})
	sm.ack.mu.Unlock()
	locked = false
	<-closed
	c.sms[2].Close()
}

// stackHas reports a goroutine whose stack holds every one of frames.
func stackHas(frames ...string) bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		all := true
		for _, f := range frames {
			all = all && strings.Contains(g, f)
		}
		if all {
			return true
		}
	}
	return false
}
