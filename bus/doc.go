// Package bus is Ardea's own (not a public API): it moves tuples between
// tasks with an embedded NATS server, the subject scheme, the data-message
// header around ABI v1 batches, and the stream manager (one per container)
// that routes by grouping, batches, and applies credit-based flow control.
//
// Data path: a task's Outbox (a plugin.Collector) appends each emitted
// tuple to a batch per destination task; Flush hands a batch for a task in
// the same container straight to that task's Inbox (no copy, no NATS) and
// publishes a batch for a task elsewhere on the destination container's data
// subject, once the link (this container -> that task) has credit. The
// receiving stream manager's NATS callback queues it in the task's Inbox
// without waiting; the task's runner takes batches with Next and gives them
// back with Release, which frees capacity and grants credit back.
//
// A task runner drives its Outbox and Inbox from one goroutine:
//
//	spout: for { status := spout.Next(max, ob); ob.Flush(ctx, status == Idle) }
//	       then ob.Finish(ctx) when it is Done
//	bolt:  for {
//	           d, ok := in.tryNext()
//	           if !ok { ob.Flush(ctx, true); d, err = in.Next(ctx) } // err: ctx or ErrClosed
//	           switch d.Kind {
//	           case DeliveryData: bolt.Execute(d.Batch, ob); in.Release(d); ob.Flush(ctx, false)
//	           case DeliveryEnd: bolt.Finish(ob); ob.Finish(ctx); return
//	           case DeliveryKick: ob.Flush(ctx, true) // applies a posted re-plan step
//	           case DeliverySwitch: ob.Flush(ctx, true); ob.MarkDownstream(ctx, d.ID, comps); return
//	           }
//	       }
//
// Control reaches the runner as a DeliveryKind, never as an error: Next's
// error only says that the wait ended (ctx, ErrClosed).
//
// Flush is the only call that waits on downstream capacity, so back pressure
// stops exactly the tasks whose output is headed for a full inbox or an
// exhausted link, and through them only the spouts upstream of those.
//
// See README.md for the wire formats, the credit protocol, the invariants
// and measured figures.
package bus
