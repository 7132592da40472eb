package bus

import "context"

// Barrier sends checkpoint barrier id to every downstream task that has
// not had end-of-stream, after everything the outbox has emitted so far
// (it flushes first): a local barrier is queued behind the batches in the
// inbox, a remote one is published on the data subject of the same
// connection, so it arrives after them. Barriers cost no credit, like
// end-of-stream. Owner goroutine only.
func (o *Outbox) Barrier(ctx context.Context, id uint64) error {
	if o.done {
		return nil // its end-of-stream stands for every later barrier
	}
	if err := o.Flush(ctx, true); err != nil {
		return err
	}
	return o.signal(ctx, msgBarrier, id, notEnded)
}

// Checkpoints reports whether barriers and end-of-stream markers are
// queued as deliveries (Options.Checkpoints).
func (sm *StreamManager) Checkpoints() bool { return sm.opts.Checkpoints }
