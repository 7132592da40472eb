package bus

import (
	"context"
	"fmt"
)

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
	var hdr [HeaderLen]byte
	for _, d := range o.down {
		if d.eosSent {
			continue
		}
		if d.inbox != nil {
			d.inbox.putBarrier(o.task, id)
			continue
		}
		if err := d.link.waitOpen(ctx, o); err != nil {
			return err
		}
		putHeader(hdr[:], MsgBarrier, d.task, o.task, int64(id))
		if err := o.sm.nc.Publish(d.subj, hdr[:]); err != nil {
			return fmt.Errorf("bus: component %s task %d: publish barrier %d to task %d: %w", o.comp.Name, o.task, id, d.task, err)
		}
	}
	return nil
}

// Checkpoints reports whether barriers and end-of-stream markers are
// queued as deliveries (Options.Checkpoints).
func (sm *StreamManager) Checkpoints() bool { return sm.opts.Checkpoints }
