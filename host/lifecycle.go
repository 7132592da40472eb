package host

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ardea-dev/ardea/connectors/plugin"
)

// kill makes err the instance's final error and releases it.
func (in *instance) kill(err error) error {
	in.dead = err
	in.shutdown()
	return err
}

func (in *instance) shutdown() {
	if in.down {
		return
	}
	in.down = true
	in.rt.unwatch(in)
	if in.wm != nil {
		// in.ctx may be cancelled already (a deadline): close regardless.
		_ = in.wm.Close(context.WithoutCancel(in.ctx))
	}
	in.cancel()
	in.stdout.flush()
	in.stderr.flush()
	in.logs.report(true)
}

// input copies b into the guest buffer, asking the guest for a bigger one
// only when b does not fit the cached one.
func (in *instance) input(b []byte) error {
	if len(b) > math.MaxInt32 {
		return fmt.Errorf("%s: input of %d bytes exceeds the 2 GiB ABI limit", in.label, len(b))
	}
	n := uint32(len(b))
	if n > in.bufCap || in.bufCap == 0 {
		want := max(n, 64<<10)
		if in.bufCap > 0 && in.bufCap < math.MaxInt32/2 {
			want = max(want, 2*in.bufCap)
		}
		p, err := in.call(callBuffer, uint64(want), nil)
		if err != nil {
			return err
		}
		ptr := uint32(p)
		if uint64(ptr)+uint64(want) > uint64(in.mem.Size()) && in.memLim.refused != 0 {
			// The guest could not allocate the buffer and said so with
			// a null pointer (or none at all).
			return in.kill(&callError{
				msg:  fmt.Sprintf("%s: ardea_buffer(%d) returned %d: %s", in.label, want, ptr, in.outOfMemory()),
				kind: ErrMemoryLimit,
			})
		}
		if uint64(ptr)+uint64(want) > uint64(in.mem.Size()) {
			return in.kill(&callError{
				msg: fmt.Sprintf("%s: ardea_buffer(%d) returned %d: the buffer is outside linear memory (%d bytes): %v",
					in.label, want, ptr, in.mem.Size(), errABIViolation),
				kind: errABIViolation,
			})
		}
		in.bufPtr, in.bufCap = ptr, want
	}
	if !in.mem.Write(in.bufPtr, b) {
		return in.kill(&callError{
			msg:  fmt.Sprintf("%s: cannot write %d bytes at %d into linear memory", in.label, n, in.bufPtr),
			kind: errABIViolation,
		})
	}
	return nil
}

func (in *instance) open(id callID, ctx plugin.TaskContext, out plugin.Collector) error {
	if in.dead != nil {
		return in.dead
	}
	if in.opened {
		return fmt.Errorf("%s: %s called twice", in.label, callNames[id])
	}
	in.outNames, in.outFields = in.outNames[:0], in.outFields[:0]
	for _, o := range ctx.Outputs {
		in.outNames = append(in.outNames, o.Name)
		in.outFields = append(in.outFields, len(o.Fields))
	}
	in.state = ctx.State
	if in.state == nil {
		in.state = NewMemoryState(ctx.MaxKeyGroups)
	}
	in.bounded, _ = in.state.(boundedState)
	if in.bounded != nil {
		// A state restored from a checkpoint or moved in by a rescale
		// may already be over a limit lowered since: it is not refused
		// (writes that shrink it work), but not silently either.
		if size := in.bounded.Bytes(); size > in.lim.StateMaxBytes {
			in.log.Warn(fmt.Sprintf("host-side state holds %d bytes, over the limit state.max.bytes = %d: writes that grow it will fail the instance",
				size, in.lim.StateMaxBytes), "state_bytes", size, "limit", in.lim.StateMaxBytes)
		}
	}
	in.metric, in.gauge, in.observe = ctx.Metric, ctx.Gauge, ctx.Observe
	in.scratch = ctx.Context.Encode(in.scratch[:0])
	if err := in.input(in.scratch); err != nil {
		return err
	}
	in.opened = true
	_, err := in.call(id, uint64(len(in.scratch)), out)
	return err
}

func (in *instance) ready(id callID) error {
	if in.dead != nil {
		return in.dead
	}
	if !in.opened {
		return fmt.Errorf("%s: %s called before %s", in.label, callNames[id], openCall(in.kind))
	}
	return nil
}

// simple runs a lifecycle call without input.
func (in *instance) simple(id callID, out plugin.Collector) error {
	if err := in.ready(id); err != nil {
		return err
	}
	_, err := in.call(id, 0, out)
	return err
}

// ids writes u32 count, u64 ids and runs ack or fail.
func (in *instance) ids(id callID, ids []uint64, out plugin.Collector) error {
	if err := in.ready(id); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	in.scratch = appendIDs(in.scratch[:0], ids)
	if err := in.input(in.scratch); err != nil {
		return err
	}
	_, err := in.call(id, uint64(len(in.scratch)), out)
	return err
}

func (in *instance) closeTask() error {
	if in.closed {
		return nil
	}
	in.closed = true
	if in.dead != nil {
		in.shutdown()
		return in.dead
	}
	var err error
	if in.opened {
		_, err = in.call(callClose, 0, nil)
	}
	if err == nil {
		in.dead = &callError{msg: in.label + ": instance is closed", kind: errClosed}
	}
	in.shutdown()
	return err
}

func appendIDs(dst []byte, ids []uint64) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(ids)))
	for _, id := range ids {
		dst = binary.LittleEndian.AppendUint64(dst, id)
	}
	return dst
}
