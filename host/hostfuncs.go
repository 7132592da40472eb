package host

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/tuple"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// hostModule is the import module of the ABI v1 host functions.
const hostModule = "ardea"

type hostFunc struct {
	name            string
	params, results []api.ValueType
	paramNames      []string
	fn              api.GoModuleFunc
}

var (
	tI32 = api.ValueTypeI32
	tI64 = api.ValueTypeI64
	tF64 = api.ValueTypeF64
)

// hostFuncs is exactly the import table of ABI.md.
var hostFuncs = []hostFunc{
	{"emit", []api.ValueType{tI32, tI32}, nil, []string{"ptr", "len"}, hostEmit},
	{"log", []api.ValueType{tI32, tI32, tI32}, nil, []string{"level", "ptr", "len"}, hostLog},
	{"error", []api.ValueType{tI32, tI32}, nil, []string{"ptr", "len"}, hostError},
	{"state_get", []api.ValueType{tI32, tI32, tI32, tI32}, []api.ValueType{tI32}, []string{"kptr", "klen", "vptr", "vcap"}, hostStateGet},
	{"state_put", []api.ValueType{tI32, tI32, tI32, tI32}, nil, []string{"kptr", "klen", "vptr", "vlen"}, hostStatePut},
	{"state_delete", []api.ValueType{tI32, tI32}, nil, []string{"kptr", "klen"}, hostStateDelete},
	{"state_write", []api.ValueType{tI32, tI32}, nil, []string{"ptr", "len"}, hostStateWrite},
	{"state_scan", []api.ValueType{tI32, tI32, tI32, tI32}, []api.ValueType{tI32}, []string{"pptr", "plen", "bufptr", "bufcap"}, hostStateScan},
	{"metric", []api.ValueType{tI32, tI32, tI64}, nil, []string{"nptr", "nlen", "delta"}, hostMetric},
	{"gauge", []api.ValueType{tI32, tI32, tF64}, nil, []string{"nptr", "nlen", "value"}, hostGauge},
	{"observe", []api.ValueType{tI32, tI32, tI64}, nil, []string{"nptr", "nlen", "value"}, hostObserve},
	{"observe_many", []api.ValueType{tI32, tI32, tI32, tI32}, nil, []string{"nptr", "nlen", "vptr", "count"}, hostObserveMany},
	{"now", nil, []api.ValueType{tI64}, nil, hostNow},
}

func hostFuncByName(name string) (hostFunc, bool) {
	for _, f := range hostFuncs {
		if f.name == name {
			return f, true
		}
	}
	return hostFunc{}, false
}

func hostFuncNames() []string {
	n := make([]string, len(hostFuncs))
	for i, f := range hostFuncs {
		n[i] = f.name
	}
	return n
}

func instantiateHostModule(ctx context.Context, r wazero.Runtime) error {
	b := r.NewHostModuleBuilder(hostModule)
	for _, f := range hostFuncs {
		b.NewFunctionBuilder().
			WithGoModuleFunction(f.fn, f.params, f.results).
			WithParameterNames(f.paramNames...).
			Export(f.name)
	}
	_, err := b.Instantiate(ctx)
	return err
}

// instanceKey carries the calling instance in the per-instance context
// that every call of that instance uses (created once, never per call).
type instanceKey struct{}

// violation is an ABI violation detected in a host function. Host
// functions panic with it; wazero recovers the panic and returns it wrapped
// from the call, and the instance fails with it.
type violation struct{ err error }

func (v *violation) Error() string { return v.err.Error() }
func (v *violation) Unwrap() error { return v.err }

// errABIViolation is matched (errors.Is) by errors of instances that broke
// the ABI contract: bad emits, out-of-range pointers, malformed ops.
var errABIViolation = errors.New("ABI violation")

func callerOf(ctx context.Context) *instance {
	in, _ := ctx.Value(instanceKey{}).(*instance)
	if in == nil {
		panic(errors.New("host: ardea host function called outside an Ardea instance"))
	}
	return in
}

// violate fails the current call with an error naming component, task and
// call. It does not return.
func (in *instance) violate(format string, args ...any) {
	err := fmt.Errorf("%s: %s: %s: %w", in.label, callNames[in.cur], fmt.Sprintf(format, args...), errABIViolation)
	in.fault = err
	panic(&violation{err})
}

// hostFailure fails the current call because the host side (collector,
// state) returned an error.
func (in *instance) hostFailure(what string, err error) {
	e := fmt.Errorf("%s: %s: %s: %w", in.label, callNames[in.cur], what, err)
	in.fault = e
	panic(&violation{e})
}

func (in *instance) read(what string, ptr, n uint32) []byte {
	b, ok := in.mem.Read(ptr, n)
	if !ok {
		in.violate("%s: range %d+%d is outside linear memory (%d bytes)", what, ptr, n, in.mem.Size())
	}
	return b
}

func (in *instance) write(what string, ptr uint32, b []byte) {
	if !in.mem.Write(ptr, b) {
		in.violate("%s: range %d+%d is outside linear memory (%d bytes)", what, ptr, len(b), in.mem.Size())
	}
}

func u32(v uint64) uint32 { return uint32(v) }

// overLimit fails the current call because the guest pushed a host
// resource past its limit (kind ErrStateLimit or ErrEmitLimit); the message
// names the limit's config key, its value and the use. It does not return.
func (in *instance) overLimit(kind error, format string, args ...any) {
	e := &callError{msg: fmt.Sprintf("%s: %s: %s", in.label, callNames[in.cur], fmt.Sprintf(format, args...)), kind: kind}
	in.fault = e
	panic(&violation{e})
}

// st is the task's state; using it before open/prepare is a violation.
func (in *instance) st() plugin.State {
	if in.state == nil {
		in.violate("state used before %s", openCall(in.kind))
	}
	return in.state
}

func hostEmit(ctx context.Context, _ api.Module, stack []uint64) {
	in := callerOf(ctx)
	b := in.read("emit", u32(stack[0]), u32(stack[1]))
	if in.out == nil {
		in.violate("emit is not allowed here (only open, next, ack and fail of a spout and prepare, execute, tick and finish of a bolt may emit)")
	}
	if in.emitted += int64(len(b)); in.emitted > in.lim.EmitMaxBytesPerCall {
		in.overLimit(ErrEmitLimit, "emit: the call emitted %d bytes, over the limit emit.max.bytes.per.call = %d",
			in.emitted, in.lim.EmitMaxBytesPerCall)
	}
	if in.buffering {
		// Routed once the call succeeded (routePending): a failing
		// tuple's call leaves nothing behind.
		in.pending = append(in.pending, b...)
		return
	}
	in.route(b)
}

// route decodes, checks and hands to the collector a sequence of emit
// ops. A violation panics (violate, hostFailure) with in.fault set.
func (in *instance) route(b []byte) {
	// This loop runs once per emitted tuple: the op and the spans buffer
	// are reused, and the checks only call out when one fails.
	op, spans, sc := &in.op, in.spans, in.spanOut
	defer func() { in.spans = spans }()
	off := 0
	for off < len(b) {
		next, sp, err := op.Decode(b, off, spans)
		spans = sp
		if err != nil {
			in.violate("emit: malformed op: %v", err)
		}
		switch op.Code {
		case tuple.OpEmit:
			if s := int(op.Stream); s >= len(in.outFields) || in.outFields[s] != len(spans)/2 || len(op.Values) > in.maxTuple {
				in.checkEmit(op, len(spans)/2)
			}
			var err error
			if sc != nil {
				err = sc.EmitSpans(op.Stream, op.Direct, op.MsgID, op.Anchors, op.Values, spans)
			} else {
				err = in.out.Emit(op.Stream, op.Direct, op.MsgID, op.Anchors, op.Values)
			}
			if err != nil {
				in.hostFailure(fmt.Sprintf("emit on stream %q", in.outNames[op.Stream]), err)
			}
		case tuple.OpAck:
			if err := in.out.Ack(op.MsgID); err != nil {
				in.hostFailure(fmt.Sprintf("ack of tuple %d", op.MsgID), err)
			}
		case tuple.OpFail:
			if err := in.out.Fail(op.MsgID); err != nil {
				in.hostFailure(fmt.Sprintf("fail of tuple %d", op.MsgID), err)
			}
		}
		off = next
	}
}

// checkEmit applies the ABI's emit checks (hostEmit tests them inline and
// calls this to report the one that failed). Whether a direct task belongs
// to a direct-grouping subscriber is left to the collector (the task
// context does not carry subscriber groupings).
func (in *instance) checkEmit(op *tuple.Op, nfields int) {
	if int(op.Stream) >= len(in.outFields) {
		in.violate("emit on stream index %d, which is not declared (declared streams: %s)",
			op.Stream, in.streamList())
	}
	if want := in.outFields[op.Stream]; nfields != want {
		in.violate("emit on stream %q: tuple has %d fields, the stream declares %d",
			in.outNames[op.Stream], nfields, want)
	}
	if len(op.Values) > in.maxTuple {
		in.violate("emit on stream %q: tuple of %d bytes exceeds the limit of %d bytes (topology.max.tuple.bytes)",
			in.outNames[op.Stream], len(op.Values), in.maxTuple)
	}
}

func (in *instance) streamList() string {
	if len(in.outNames) == 0 {
		return "none"
	}
	s := ""
	for i, n := range in.outNames {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d %q", i, n)
	}
	return s
}

func hostLog(ctx context.Context, _ api.Module, stack []uint64) {
	in := callerOf(ctx)
	msg := in.read("log", u32(stack[1]), u32(stack[2]))
	lvl := slog.Level(int32(u32(stack[0])))
	if !in.log.Enabled(ctx, lvl) {
		return
	}
	if len(msg) > in.lim.LogMaxLineBytes {
		in.logs.writeCut(lvl, msg, "log", in.lim.LogMaxLineBytes)
		return
	}
	in.logs.write(lvl, msg, "log")
}

func hostError(ctx context.Context, _ api.Module, stack []uint64) {
	in := callerOf(ctx)
	msg := in.read("error", u32(stack[0]), u32(stack[1]))
	in.errText = append(in.errText[:0], msg...)
}

func hostStateGet(ctx context.Context, _ api.Module, stack []uint64) {
	in := callerOf(ctx)
	key := in.read("state_get key", u32(stack[0]), u32(stack[1]))
	v, ok := in.st().Get(key)
	if !ok {
		stack[0] = uint64(uint32(0xFFFFFFFF)) // -1
		return
	}
	if len(v) > math.MaxInt32 {
		in.violate("state_get: value of %d bytes does not fit an i32 length", len(v))
	}
	if uint32(len(v)) <= u32(stack[3]) {
		in.write("state_get value", u32(stack[2]), v)
	}
	stack[0] = uint64(uint32(len(v)))
}

func hostStatePut(ctx context.Context, _ api.Module, stack []uint64) {
	in := callerOf(ctx)
	key := in.read("state_put key", u32(stack[0]), u32(stack[1]))
	val := in.read("state_put value", u32(stack[2]), u32(stack[3]))
	if len(key) > in.lim.StateMaxKeyBytes || len(val) > in.lim.StateMaxValueBytes {
		in.entryOverLimit("state_put", key, val)
	}
	st := in.st()
	if in.bounded == nil {
		st.Put(key, val)
		return
	}
	if size, ok := in.bounded.PutWithin(key, val, in.lim.StateMaxBytes); !ok {
		in.stateOverLimit("state_put", size)
	}
}

// boundedState is a plugin.State that knows its size and can refuse a
// write over a limit (MemoryState). A State without it is bounded per key
// and value only.
type boundedState interface {
	plugin.State
	PutWithin(key, value []byte, limit int64) (int64, bool)
	Bytes() int64
}

// entryOverLimit fails the call for a key or value over its limit.
func (in *instance) entryOverLimit(what string, key, val []byte) {
	if len(key) > in.lim.StateMaxKeyBytes {
		in.overLimit(ErrStateLimit, "%s: key of %d bytes, over the limit state.max.key.bytes = %d",
			what, len(key), in.lim.StateMaxKeyBytes)
	}
	in.overLimit(ErrStateLimit, "%s: value of %d bytes (key %q), over the limit state.max.value.bytes = %d",
		what, len(val), shortKey(key), in.lim.StateMaxValueBytes)
}

// stateOverLimit fails the call for a write that would take the state to
// size bytes.
func (in *instance) stateOverLimit(what string, size int64) {
	in.overLimit(ErrStateLimit, "%s: host-side state would reach %d bytes, over the limit state.max.bytes = %d",
		what, size, in.lim.StateMaxBytes)
}

// shortKey is a key for an error message: at most 64 bytes of it.
func shortKey(k []byte) string {
	if len(k) > 64 {
		return string(k[:64]) + "..."
	}
	return string(k)
}

func hostStateDelete(ctx context.Context, _ api.Module, stack []uint64) {
	in := callerOf(ctx)
	in.st().Delete(in.read("state_delete key", u32(stack[0]), u32(stack[1])))
}

// hostStateWrite applies (u8 op, u32 klen, key, u32 vlen, value)*; it
// checks the whole batch before applying any of it.
func hostStateWrite(ctx context.Context, _ api.Module, stack []uint64) {
	in := callerOf(ctx)
	b := in.read("state_write", u32(stack[0]), u32(stack[1]))
	var grow int64 // what the puts add at most: the state's growth bound
	for pass := 0; pass < 2; pass++ {
		if pass == 1 && in.bounded != nil {
			if size := in.bounded.Bytes(); size+grow > in.lim.StateMaxBytes {
				if after := in.sizeAfterWrite(b, size); after > in.lim.StateMaxBytes && after > size {
					in.stateOverLimit("state_write", after)
				}
			}
		}
		for off := 0; off < len(b); {
			if len(b)-off < 5 {
				in.violate("state_write: truncated op at offset %d", off)
			}
			op := b[off]
			kl := int(binary.LittleEndian.Uint32(b[off+1:]))
			if len(b)-off-5 < kl+4 {
				in.violate("state_write: truncated key at offset %d", off)
			}
			key := b[off+5 : off+5+kl]
			vl := int(binary.LittleEndian.Uint32(b[off+5+kl:]))
			vs := off + 9 + kl
			if len(b)-vs < vl {
				in.violate("state_write: truncated value at offset %d", off)
			}
			switch op {
			case 1:
				if pass == 0 {
					if kl > in.lim.StateMaxKeyBytes || vl > in.lim.StateMaxValueBytes {
						in.entryOverLimit("state_write", key, b[vs:vs+vl])
					}
					grow += int64(kl + vl)
				} else {
					in.st().Put(key, b[vs:vs+vl])
				}
			case 2:
				if vl != 0 {
					in.violate("state_write: delete at offset %d has a %d-byte value, want 0", off, vl)
				}
				if pass == 1 {
					in.st().Delete(key)
				}
			default:
				in.violate("state_write: unknown op %d at offset %d (1 put, 2 delete)", op, off)
			}
			off = vs + vl
		}
	}
}

// sizeAfterWrite is the size the state would have after a state_write
// batch b (already checked) that starts from size bytes: the slow path,
// taken only when the batch might take the state over its limit.
func (in *instance) sizeAfterWrite(b []byte, size int64) int64 {
	entry := map[string]int64{} // keys written so far: their entry size (0: deleted)
	for off := 0; off < len(b); {
		op := b[off]
		kl := int(binary.LittleEndian.Uint32(b[off+1:]))
		key := b[off+5 : off+5+kl]
		vl := int(binary.LittleEndian.Uint32(b[off+5+kl:]))
		old, seen := entry[string(key)]
		if !seen {
			if v, ok := in.bounded.Get(key); ok {
				old = int64(kl + len(v))
			}
		}
		var now int64
		if op == 1 {
			now = int64(kl + vl)
		}
		size += now - old
		entry[string(key)] = now
		off += 9 + kl + vl
	}
	return size
}

func hostStateScan(ctx context.Context, _ api.Module, stack []uint64) {
	in := callerOf(ctx)
	prefix := in.read("state_scan prefix", u32(stack[0]), u32(stack[1]))
	in.scanBuf = append(in.scanBuf[:0], 0, 0, 0, 0)
	in.scanCount = 0
	in.st().Scan(prefix, in.scanFn)
	if len(in.scanBuf) > math.MaxInt32 {
		in.violate("state_scan: result of %d bytes does not fit an i32 length", len(in.scanBuf))
	}
	binary.LittleEndian.PutUint32(in.scanBuf, uint32(in.scanCount))
	if uint32(len(in.scanBuf)) <= u32(stack[3]) {
		in.write("state_scan buffer", u32(stack[2]), in.scanBuf)
	}
	stack[0] = uint64(uint32(len(in.scanBuf)))
}

// appendScan is the Scan callback (bound once per instance as scanFn).
func (in *instance) appendScan(k, v []byte) bool {
	in.scanBuf = binary.LittleEndian.AppendUint32(in.scanBuf, uint32(len(k)))
	in.scanBuf = append(in.scanBuf, k...)
	in.scanBuf = binary.LittleEndian.AppendUint32(in.scanBuf, uint32(len(v)))
	in.scanBuf = append(in.scanBuf, v...)
	in.scanCount++
	return true
}

func hostMetric(ctx context.Context, _ api.Module, stack []uint64) {
	in := callerOf(ctx)
	if name, ok := in.metricName(u32(stack[0]), u32(stack[1])); ok && in.metric != nil {
		in.updateMetric(pendingMetric{kind: metricCounter, name: name, n: int64(stack[2])})
	}
}

func hostGauge(ctx context.Context, _ api.Module, stack []uint64) {
	in := callerOf(ctx)
	if name, ok := in.metricName(u32(stack[0]), u32(stack[1])); ok && in.gauge != nil {
		in.updateMetric(pendingMetric{kind: metricGauge, name: name, f: api.DecodeF64(stack[2])})
	}
}

func hostObserve(ctx context.Context, _ api.Module, stack []uint64) {
	in := callerOf(ctx)
	if name, ok := in.metricName(u32(stack[0]), u32(stack[1])); ok && in.observe != nil {
		in.updateMetric(pendingMetric{kind: metricObserve, name: name, n: int64(stack[2])})
	}
}

// metricKind is what a pendingMetric updates.
type metricKind uint8

const (
	metricCounter metricKind = iota
	metricGauge
	metricObserve
)

// pendingMetric is one user metric update of a buffering call
// (failing.go): applied if the call succeeds, dropped if it fails.
type pendingMetric struct {
	kind metricKind
	name string
	n    int64
	f    float64
}

// updateMetric applies a user metric update now, or once the call
// succeeded when its effects are buffered. The buffer is bounded: counter
// and gauge updates merge per name (at most maxMetricNames of them), and
// past maxPendingObservations a call's observations are applied at once.
func (in *instance) updateMetric(m pendingMetric) {
	if !in.buffering || (m.kind == metricObserve && in.pendingObs >= maxPendingObservations) {
		in.applyMetric(m)
		return
	}
	if m.kind != metricObserve {
		if in.pendingIdx == nil {
			in.pendingIdx = map[string]int{}
		}
		key := m.name
		if m.kind == metricGauge {
			key = "\x00" + m.name // a gauge may share a counter's name
		}
		if i, ok := in.pendingIdx[key]; ok {
			in.pendingMetrics[i].n += m.n
			in.pendingMetrics[i].f = m.f
			return
		}
		in.pendingIdx[key] = len(in.pendingMetrics)
	} else {
		in.pendingObs++
	}
	in.pendingMetrics = append(in.pendingMetrics, m)
}

// maxPendingObservations bounds the histogram observations a buffering
// call keeps until it ends (8 bytes each in the guest's observe_many).
const maxPendingObservations = 1 << 16

func (in *instance) applyMetric(m pendingMetric) {
	switch m.kind {
	case metricCounter:
		in.metric(m.name, m.n)
	case metricGauge:
		in.gauge(m.name, m.f)
	case metricObserve:
		in.observe(m.name, m.n)
	}
}

// applyMetrics applies a successful buffering call's metric updates.
func (in *instance) applyMetrics() {
	for _, m := range in.pendingMetrics {
		in.applyMetric(m)
	}
	in.clearMetrics()
}

// clearMetrics forgets the buffered metric updates (a call begins).
func (in *instance) clearMetrics() {
	in.pendingMetrics = in.pendingMetrics[:0]
	in.pendingObs = 0
	if len(in.pendingIdx) > 0 {
		clear(in.pendingIdx)
	}
}

// maxObserveMany bounds one observe_many call (8 bytes a value: 512 KiB).
const maxObserveMany = 1 << 16

// hostObserveMany is observe for count i64 values at vptr: one call for a
// guest's observations of one histogram in a lifecycle call.
func hostObserveMany(ctx context.Context, _ api.Module, stack []uint64) {
	in := callerOf(ctx)
	n := u32(stack[3])
	if n > maxObserveMany {
		in.violate("observe_many: %d values in one call (at most %d)", n, maxObserveMany)
	}
	b := in.read("observe_many values", u32(stack[2]), n*8)
	if name, ok := in.metricName(u32(stack[0]), u32(stack[1])); ok && in.observe != nil {
		for i := 0; i+8 <= len(b); i += 8 {
			in.updateMetric(pendingMetric{kind: metricObserve, name: name, n: int64(binary.LittleEndian.Uint64(b[i:]))})
		}
	}
}

// metricName reads a user metric name from guest memory and interns it, so
// a name allocates once per instance. Counters, gauges and histograms share
// the maxMetricNames budget: a guest cannot grow the host's series without
// bound.
func (in *instance) metricName(ptr, n uint32) (string, bool) {
	b := in.read("metric name", ptr, n)
	name, ok := in.metricNames[string(b)]
	if !ok {
		if len(in.metricNames) >= maxMetricNames {
			in.violate("metric: more than %d distinct metric names", maxMetricNames)
		}
		name = string(b)
		if !validMetricName(name) {
			in.violate("metric name %q: must start with a letter and hold at most %d letters, digits, '_', '.', '/' or '-'", name, maxMetricNameLen)
		}
		in.metricNames[name] = name
	}
	return name, in.metric != nil || in.gauge != nil || in.observe != nil
}

const (
	maxMetricNames   = 1024
	maxMetricNameLen = 255
)

// validMetricName is OpenTelemetry's instrument name syntax, which every
// sink (Prometheus, Graphite, Scribe) can carry after its own escaping.
func validMetricName(s string) bool {
	if len(s) == 0 || len(s) > maxMetricNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '_' || c == '.' || c == '/' || c == '-'):
		default:
			return false
		}
	}
	return true
}

func hostNow(_ context.Context, _ api.Module, stack []uint64) {
	stack[0] = uint64(guestNow()) // guestClockResolution (clock.go)
}
