package connectors

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// outputStream finds the index of stream among the task's declared outputs
// and checks that it has nfields fields.
func outputStream(ctx plugin.TaskContext, kind, stream string, nfields int) (uint16, error) {
	for i, o := range ctx.Outputs {
		if o.Name != stream {
			continue
		}
		if len(o.Fields) != nfields {
			return 0, fmt.Errorf("component %q: the %s emits %d field(s) on stream %q, but the topology declares %d (%v)",
				ctx.Component, kind, nfields, stream, len(o.Fields), o.Fields)
		}
		return uint16(i), nil
	}
	return 0, fmt.Errorf("component %q: the %s emits on stream %q, which the topology does not declare", ctx.Component, kind, stream)
}

// appendStringValues appends a values block holding one string field.
func appendStringValues(dst, s []byte) []byte {
	dst = binary.LittleEndian.AppendUint16(dst, 1)
	dst = append(dst, byte(tuple.String))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

// taskOf returns a task's index and its component's parallelism (at least 1).
func taskOf(ctx plugin.TaskContext) (index, parallelism int64) {
	p := int64(ctx.Parallelism)
	if p < 1 {
		p = 1
	}
	return int64(ctx.TaskIndex), p
}

// fieldBytes is field i of vals as record bytes: a string's or bytes'
// content, a number's or bool's text; ok is false when there is no field i.
func fieldBytes(vals []tuple.Value, i int) (b []byte, ok bool) {
	if i >= len(vals) {
		return nil, false
	}
	if v := vals[i]; v.Kind == tuple.String || v.Kind == tuple.Bytes {
		return append([]byte{}, v.B...), true
	}
	return appendScalar([]byte{}, vals[i]), true
}

// failureText says how a tuple tree failed, for dead letters.
func failureText(f plugin.Failure) string {
	switch {
	case f.TimedOut:
		return "timed out (a bolt trapped, stalled or was lost)"
	case f.By != "":
		return "failed by " + f.By
	}
	return "failed by a bolt"
}

// sendResult is one asynchronous write's outcome (index in its batch).
type sendResult struct {
	i   int
	err error
}

// batchSends tracks a sink's asynchronous writes of one input batch: add
// one per tuple sent, have the write's callback call done once, then
// await. One channel per batch, sized to it, so a callback never blocks.
type batchSends struct {
	ids     []uint64
	results chan sendResult
}

func newBatchSends(n int) *batchSends {
	return &batchSends{results: make(chan sendResult, n)}
}

// add records tuple id as sent and returns the index its callback reports.
func (b *batchSends) add(id uint64) int {
	b.ids = append(b.ids, id)
	return len(b.ids) - 1
}

func (b *batchSends) done(i int, err error) { b.results <- sendResult{i, err} }

// await acks each tuple whose write succeeded and fails those whose write
// failed or did not finish within timeout (a write may still land later:
// a duplicate, never a loss). It returns how many were stored, failed and
// timed out.
func (b *batchSends) await(out plugin.Collector, timeout time.Duration) (stored, failed, timedOut int) {
	if len(b.ids) == 0 {
		return 0, 0, 0
	}
	finished := make([]bool, len(b.ids))
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for range b.ids {
		select {
		case r := <-b.results:
			finished[r.i] = true
			if r.err != nil {
				out.Fail(b.ids[r.i])
				failed++
			} else {
				out.Ack(b.ids[r.i])
				stored++
			}
		case <-timer.C:
			for i, f := range finished {
				if !f {
					out.Fail(b.ids[i])
					timedOut++
				}
			}
			return stored, failed, timedOut
		}
	}
	return stored, failed, timedOut
}
