package host

import (
	"fmt"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/tetratelabs/wazero/api"
)

type callID int32

const (
	callInit callID = iota
	callABIVersion
	callBuffer
	callOpen
	callNext
	callAck
	callFail
	callActivate
	callDeactivate
	callPrepare
	callExecute
	callTick
	callFinish
	callClose
	callCursor
	numCalls
)

var callNames = [numCalls]string{
	"_initialize", "ardea_abi_version", "ardea_buffer",
	"ardea_open", "ardea_next", "ardea_ack", "ardea_fail", "ardea_activate", "ardea_deactivate",
	"ardea_prepare", "ardea_execute", "ardea_tick", "ardea_finish", "ardea_close",
	"ardea_cursor",
}

const (
	kindSpout = "spout"
	kindBolt  = "bolt"
)

func kindCalls(kind string) []callID {
	if kind == kindSpout {
		return []callID{callBuffer, callOpen, callNext, callAck, callFail, callActivate, callDeactivate, callClose}
	}
	return []callID{callBuffer, callPrepare, callExecute, callTick, callFinish, callClose}
}

// callSig is the parameter list of a lifecycle export (all return i32).
func callSig(id callID) []api.ValueType {
	switch id {
	case callBuffer, callOpen, callNext, callAck, callFail, callPrepare, callExecute:
		return i32
	}
	return nil
}

func openCall(kind string) string {
	if kind == kindSpout {
		return callNames[callOpen]
	}
	return callNames[callPrepare]
}

// begin marks the start of a call for the watchdog and crash reports.
func (in *instance) begin(id callID) {
	in.cur = id
	in.errText = in.errText[:0]
	in.fault = nil
	in.emitted = 0
	in.pending = in.pending[:0]
	in.clearMetrics()
	in.failedAt = -1
	in.memLim.refused = 0
	in.stderr.begin()
	in.callStart.Store(in.rt.now())
}

// call runs one guest export. It allocates nothing itself: the context and
// the parameter/result stack are the instance's own.
func (in *instance) call(id callID, arg uint64, out plugin.Collector) (int32, error) {
	if in.dead != nil {
		return 0, in.dead
	}
	fn := in.fns[id]
	if fn == nil {
		return 0, fmt.Errorf("%s: module %s does not export %s", in.label, in.module.name, callNames[id])
	}
	in.out = out
	in.spanOut, _ = out.(spanCollector)
	in.stack[0] = arg
	in.begin(id)
	err := fn.CallWithStack(in.ctx, in.stack)
	timedOut := in.callStart.Swap(0) == -1
	if in.mem != nil {
		in.pagesUsed.Store(in.mem.Size() / 65536) // read by UsageOf from another goroutine
	}
	if in.logs.pending.Load() {
		in.logs.report(false) // lines dropped in a second that is over
	}
	if err != nil || timedOut || in.fault != nil {
		in.out, in.spanOut = nil, nil
		in.readCursor(id)
		return 0, in.fail(id, err, timedOut)
	}
	rc := int32(uint32(in.stack[0]))
	if rc < 0 && id != callBuffer && id != callABIVersion {
		in.out, in.spanOut = nil, nil
		in.readCursor(id)
		return rc, in.guestError(id, rc)
	}
	if in.buffering && len(in.pendingMetrics) > 0 {
		in.applyMetrics()
	}
	if in.buffering && len(in.pending) > 0 {
		if err := in.routePending(); err != nil {
			in.out, in.spanOut = nil, nil
			return 0, err
		}
	}
	in.out, in.spanOut = nil, nil
	return rc, nil
}

// forgive takes paused nanoseconds, during which the process did not run,
// off the running call's time (at most the time since it started: a call
// that began during the pause is not charged for it either). It runs on
// the watchdog goroutine; the compare-and-swap leaves a call that ended
// or timed out meanwhile alone.
func (in *instance) forgive(paused, now int64) {
	start := in.callStart.Load()
	if start <= 0 {
		return
	}
	in.callStart.CompareAndSwap(start, start+min(paused, max(now-start, 0)))
}

// checkDeadline runs on the watchdog goroutine.
func (in *instance) checkDeadline(now int64) {
	start := in.callStart.Load()
	if start > 0 && now-start > int64(in.timeout) && in.callStart.CompareAndSwap(start, -1) {
		if in.interrupt != nil {
			in.interrupt.Set(1) // the guest traps at its next loop iteration
		} else {
			in.cancel()
		}
	}
}
