package bus

import (
	"context"
	"sync"
)

// link is the sending side of one flow-controlled link: this container ->
// one task in another container. Every Outbox of this container that sends
// to the task shares it.
//
// Credit protocol (see README.md): the link is closed until the receiver's
// first open message sets credit = window. A sender takes n bytes of credit
// before publishing an n-byte message and may do so when credit >= n, or
// when credit >= window (the link is idle) so that a batch larger than the
// window still goes through, leaving credit negative until it is granted
// back. The receiver grants bytes back as its task releases them. So the
// bytes in flight or held by the receiver for this link never exceed
// max(window, largest message). End-of-stream markers need an open link but
// no credit.
//
// mu is a leaf lock, never held while waiting or publishing.
type link struct {
	dst       uint32
	container int
	done      <-chan struct{} // the stream manager's

	mu     sync.Mutex
	open   bool
	epoch  uint32 // the receiving stream manager's, from its open
	window int64
	credit int64
	wake   chan struct{} // closed and replaced when credit grows or the link opens
}

func newLink(dst uint32, container int, done <-chan struct{}) *link {
	return &link{dst: dst, container: container, done: done, wake: make(chan struct{})}
}

// acquire takes n bytes of credit, waiting for it if block is set (the wait
// is counted as o's blocked time); without block it reports false when the
// credit is short.
func (l *link) acquire(ctx context.Context, n int64, block bool, o *Outbox) (bool, error) {
	waited := false
	return o.waitFor(ctx, block, l.done, func() (bool, <-chan struct{}) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.open && (l.credit >= n || l.credit >= l.window) {
			l.credit -= n
			return true, nil
		}
		if !waited && block {
			waited = true
			o.creditWaits.Add(1)
		}
		return false, l.wake
	})
}

// waitOpen waits until the receiver has opened the link.
func (l *link) waitOpen(ctx context.Context, o *Outbox) error {
	for {
		l.mu.Lock()
		if l.open {
			l.mu.Unlock()
			return nil
		}
		ch := l.wake
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-l.done:
			return ErrClosed
		}
	}
}

// refund returns credit taken for a message that was not published.
func (l *link) refund(n int64) { l.grant(n, 0) }

// grant adds credit. It reports false (and clamps) if the credit would pass
// the window: a receiver granted more than was sent. A grant from another
// epoch than the link's (a receiver process that has since restarted) is
// ignored; epoch 0 is the sender's own refund.
func (l *link) grant(n int64, epoch uint32) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if epoch != 0 && epoch != l.epoch {
		return true
	}
	l.credit += n
	ok := l.credit <= l.window
	if !ok {
		l.credit = l.window
	}
	close(l.wake)
	l.wake = make(chan struct{})
	return ok
}

// openWith opens the link with the receiver's window. Only the first open
// of an epoch counts (a receiver may send two: at its start and in answer
// to a hello); an open from a new epoch (the receiving container restarted)
// resets the credit to the new window, since nothing is in flight to the
// new process. It reports whether this open changed the link.
func (l *link) openWith(window int64, epoch uint32) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open && l.epoch == epoch {
		return false
	}
	l.open, l.epoch, l.window, l.credit = true, epoch, window, window
	close(l.wake)
	l.wake = make(chan struct{})
	return true
}

// linkState is a snapshot of one link's credit.
type linkState struct {
	Task      uint32
	Container int
	Open      bool
	Window    int64
	Credit    int64
}

func (l *link) state() linkState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return linkState{Task: l.dst, Container: l.container, Open: l.open, Window: l.window, Credit: l.credit}
}
