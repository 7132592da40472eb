package engine

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/ardea-dev/ardea/bus"
)

// TxState is a task state that can undo the writes of one call
// (host.MemoryState).
type TxState interface {
	Begin()
	Commit()
	Rollback()
}

// Trapped is the result of a task on probation that failed on a batch:
// nothing the batch did was kept (its state writes were undone, its output
// dropped), and Delivery, not yet released, is to be retried by the
// version that replaces this one.
type Trapped struct {
	Delivery bus.Delivery
	Err      error
}

func (e *Trapped) Error() string {
	return fmt.Sprintf("engine: swapped-in version failed on a batch: %v", e.Err)
}
func (e *Trapped) Unwrap() error { return e.Err }

// idle reports whether no checkpoint alignment holds data (a swap waits
// until then: held data lives in the runner).
func (a *alignment) idle() bool {
	return len(a.held) == 0 && len(a.released) == 0 && len(a.afterDue) == 0 && a.due == 0
}

// executeTx runs one batch with no effect unless it succeeds: state writes
// go through a transaction and output is buffered, then passed on.
func executeTx(ctx context.Context, t *Task, d bus.Delivery, out *counting) error {
	tx := t.ctl.tx
	if tx != nil {
		tx.Begin()
	}
	var buf txCollector
	if err := t.Bolt.Execute(ctx, d.Batch, &buf); err != nil {
		if tx != nil {
			tx.Rollback()
		}
		return &Trapped{Delivery: d, Err: err}
	}
	if tx != nil {
		tx.Commit()
	}
	return buf.replay(out)
}

// txCollector buffers a call's output (copies: the guest's memory is
// reused) until the call has succeeded.
type txCollector struct {
	ops  []txOp
	data bytes.Buffer
}

type txOp struct {
	kind           uint8 // 0 emit, 1 ack, 2 fail
	stream         uint16
	direct         uint32
	id             uint64 // msgID or tuple id
	anchors, value [2]int // offsets into data
}

func (c *txCollector) put(b []byte) [2]int {
	start := c.data.Len()
	c.data.Write(b)
	return [2]int{start, c.data.Len()}
}

func (c *txCollector) Emit(stream uint16, direct uint32, msgID uint64, anchors, values []byte) error {
	c.ops = append(c.ops, txOp{kind: 0, stream: stream, direct: direct, id: msgID, anchors: c.put(anchors), value: c.put(values)})
	return nil
}

func (c *txCollector) Ack(id uint64) error {
	c.ops = append(c.ops, txOp{kind: 1, id: id})
	return nil
}

func (c *txCollector) Fail(id uint64) error {
	c.ops = append(c.ops, txOp{kind: 2, id: id})
	return nil
}

func (c *txCollector) replay(out *counting) error {
	b := c.data.Bytes()
	for _, op := range c.ops {
		var err error
		switch op.kind {
		case 0:
			err = out.Emit(op.stream, op.direct, op.id, b[op.anchors[0]:op.anchors[1]], b[op.value[0]:op.value[1]])
		case 1:
			err = out.Ack(op.id)
		case 2:
			err = out.Fail(op.id)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Latency is a moving average of the task's execute time per tuple (0
// before its first batch): a canary's health measure.
func (t *Task) Latency() time.Duration { return time.Duration(t.latency.Load()) }
