package ardea

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	goruntime "runtime"
	"strings"
	"unsafe"

	"github.com/ardea-dev/ardea/wasm-sdk/go/internal/tuple"
)

// ABIVersion is the guest ABI version this SDK implements (wasm-sdk/ABI.md).
const ABIVersion = 1

// outFlush: pending emit ops are sent as soon as they reach this size.
const outFlush = 64 << 10

// hostAPI is the host's side of the ABI (the `ardea` import module). The
// wasip1 build implements it with //go:wasmimport functions; tests use an
// in-memory fake. Slices passed in are only valid during the call.
type hostAPI interface {
	emit(ops []byte)
	log(level int32, msg string)
	error(msg string)
	stateGet(key string, buf []byte) int32
	stateWrite(ops []byte)
	stateScan(prefix string, buf []byte) int32
	metric(name string, delta int64)
	gauge(name string, value float64)
	observe(name string, value int64)
	observeMany(name string, values []int64)
	now() int64
}

// runtime dispatches the ABI's lifecycle exports to the registered
// component. A module has exactly one (the package-level global); each
// export calls one method.
type runtime struct {
	host  hostAPI
	spout Spout
	bolt  Bolt

	in  []byte // the input buffer handed out by ardea_buffer
	out []byte // pending emit ops

	// cursor is the index of the batch record ardea_execute is at (the
	// ABI's ardea_cursor points at it); batch is that call's input, which
	// a panic's report reads the failing record from.
	cursor uint32
	batch  []byte

	ctx         *Context
	manifest    manifest      // what the component declared at registration
	manifestBuf []byte        // ardea_manifest's last answer
	decls       []Declaration // as registered (for ardeatest)
	defStream   int           // index of the "default" output stream, or -1
	defFields   int           // its number of fields
	ready       bool          // open/prepare succeeded
	done        bool          // the spout reported Done
	call        string        // current lifecycle method, for messages
	canEmit     bool
	emitErr     error

	// Acking (automatic mode unless the bolt asked for manual acking):
	// cur is the id of the tuple being executed, curDone whether it was
	// acked or failed during the call, autoAnchor what plain emits anchor
	// on (cur in automatic mode, else 0).
	manualAck  bool
	cur        uint64
	curDone    bool
	autoAnchor uint64
	ackable    uint64 // cur while it may still be acked or failed in this call, else 0 (ackFail's fast path)

	offs    []uint32 // field offsets of the current input tuple
	state   State
	sc      SpoutCollector
	bc      BoltCollector
	metrics map[string]int64
	// Observations not yet sent, by histogram (few per component: a
	// slice searched by the name's pointer first).
	observed []observed
	// types holds the type words of Text, string, int64 and int in an
	// interface value, for emit_wasm.s.
	types [4]uintptr
}

// observed holds one histogram's pending observations.
type observed struct {
	name   string
	values []int64
}

func newRuntime(h hostAPI) *runtime {
	r := &runtime{host: h, defStream: -1}
	r.types = [4]uintptr{typeWord(Text(nil)), typeWord(""), typeWord(int64(0)), typeWord(0)}
	r.sc.r = r
	r.bc.r = r
	r.state.init(r)
	return r
}

// typeWord is the type word of v (the first word of an interface value).
func typeWord(v any) uintptr { return *(*uintptr)(unsafe.Pointer(&v)) }

func (r *runtime) register(s Spout, b Bolt, decls []Declaration) {
	if r.spout != nil || r.bolt != nil {
		panic("ardea: a component is already registered; a module registers exactly one spout or bolt")
	}
	m, err := newManifest(b != nil, decls)
	if err != nil {
		panic("ardea: " + err.Error())
	}
	r.spout, r.bolt, r.manifest, r.decls = s, b, m, decls
}

// buffer returns the input buffer, at least size bytes. It is replaced
// only when the host asks for more room (the host caches its address).
func (r *runtime) buffer(size int32) []byte {
	if int(size) > len(r.in) || r.in == nil {
		n := max(int(size), 2*len(r.in), 64<<10)
		r.in = make([]byte, n)
	}
	return r.in
}

func (r *runtime) input(n int32) ([]byte, error) {
	if n < 0 || int(n) > len(r.in) {
		return nil, fmt.Errorf("input length %d exceeds the %d-byte buffer from ardea_buffer", n, len(r.in))
	}
	return r.in[:n], nil
}

// begin starts a lifecycle call.
func (r *runtime) begin(call string, mayEmit bool) {
	r.call, r.canEmit, r.emitErr, r.batch = call, mayEmit, nil, nil
}

// end completes a successful call: one state_write with the dirty state,
// then the pending emit ops, then metrics. A deferred emit error fails it.
func (r *runtime) end(status int32) int32 {
	if r.emitErr != nil {
		return r.fail(r.emitErr)
	}
	r.canEmit = false
	r.state.flush()
	r.flushOut()
	r.flushMetrics()
	r.flushObserved()
	return status
}

// fail reports err as the call's error and drops what the call had not
// sent yet (emit ops, dirty state).
func (r *runtime) fail(err error) int32 {
	r.canEmit = false
	r.out = r.out[:0]
	r.state.discard()
	r.flushMetrics()
	r.flushObserved()
	r.host.error(r.call + ": " + err.Error())
	return -1
}

// guard turns a panic in user code into the call's error: "panic: <value>
// at <file>:<line> (<function>)", naming the innermost frame outside the
// Go runtime and this SDK (the user's code). In Execute the error names
// the tuple (the record at the cursor). Use it as `defer r.guard(&code)`.
func (r *runtime) guard(code *int32) {
	p := recover()
	if p == nil {
		return
	}
	var err error = &PanicError{Value: p, Frame: userFrame()}
	if r.call == "Execute" && r.batch != nil {
		if t, ok := r.recordAt(r.cursor); ok {
			err = tupleError{t, err}
		}
	}
	r.cur, r.autoAnchor, r.ackable = 0, 0, 0
	*code = r.fail(err)
}

// PanicError is the error a recovered panic of a component's method
// becomes: the panic value and the innermost frame of the component's own
// code when it panicked.
type PanicError struct {
	Value any
	Frame goruntime.Frame // Function, File and Line; zero if not found
}

func (e *PanicError) Error() string {
	msg := fmt.Sprint(e.Value)
	if err, ok := e.Value.(error); ok {
		msg = err.Error()
	}
	if e.Frame.Function == "" {
		return "panic: " + msg
	}
	return fmt.Sprintf("panic: %s at %s:%d (%s)", msg, e.Frame.File, e.Frame.Line, e.Frame.Function)
}

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// sdkPkg is this package's import path.
var sdkPkg = reflect.TypeOf(runtime{}).PkgPath()

// userFrame is the innermost frame of the panicking stack that belongs
// to the component's code: neither to the Go runtime, nor to this SDK
// (its packages, tests aside), nor to the standard library (a package
// path without a dot in its first element, but main), so that a panic in
// strings.Repeat names the component's call. Failing that, the innermost
// frame outside the runtime and the SDK, or outside the runtime.
func userFrame() goruntime.Frame {
	var pcs [64]uintptr
	n := goruntime.Callers(3, pcs[:]) // from the deferred guard's caller
	frames := goruntime.CallersFrames(pcs[:n])
	var notSDK, notRuntime goruntime.Frame
	for {
		f, more := frames.Next()
		if f.Function != "" && !strings.HasPrefix(f.Function, "runtime.") {
			if notRuntime.Function == "" {
				notRuntime = f
			}
			sdk := (strings.HasPrefix(f.Function, sdkPkg+".") || strings.HasPrefix(f.Function, sdkPkg+"/")) &&
				!strings.HasSuffix(f.File, "_test.go")
			if !sdk {
				if !stdlib(f.Function) {
					return f
				}
				if notSDK.Function == "" {
					notSDK = f
				}
			}
		}
		if !more {
			break
		}
	}
	if notSDK.Function != "" {
		return notSDK
	}
	return notRuntime
}

// stdlib reports whether a function (as runtime.Frame names it) is in a
// standard library package.
func stdlib(fn string) bool {
	pkg := fn
	if i := strings.LastIndexByte(pkg, '/'); i >= 0 {
		if j := strings.IndexByte(pkg[i:], '.'); j >= 0 {
			pkg = pkg[:i+j]
		}
	} else if j := strings.IndexByte(pkg, '.'); j >= 0 {
		pkg = pkg[:j]
	}
	first, _, _ := strings.Cut(pkg, "/")
	return pkg != "main" && !strings.Contains(first, ".")
}

// recordAt is record i of the current batch as a Tuple (for messages:
// the cold path of a failing tuple).
func (r *runtime) recordAt(i uint32) (Tuple, bool) {
	src := r.batch
	if len(src) < 4 || i >= binary.LittleEndian.Uint32(src) {
		return Tuple{}, false
	}
	off := 4
	for j := uint32(0); ; j++ {
		if len(src)-off < recordHeader {
			return Tuple{}, false
		}
		l := int(binary.LittleEndian.Uint32(src[off:]))
		if l < recordHeader-4 || len(src)-off-4 < l {
			return Tuple{}, false
		}
		rec := src[off+4 : off+4+l]
		off += 4 + l
		if j < i {
			continue
		}
		idx := binary.LittleEndian.Uint16(rec)
		if int(idx) >= len(r.ctx.inputs) {
			return Tuple{}, false
		}
		return Tuple{in: &r.ctx.inputs[idx], raw: rec[recordHeader-4:], id: binary.LittleEndian.Uint64(rec[6:]),
			src: binary.LittleEndian.Uint32(rec[2:]), idx: idx}, true
	}
}

func (r *runtime) kindError(export string, wantBolt bool) error {
	want, have, register := "spout", "bolt", "RegisterSpout"
	if wantBolt {
		want, have, register = "bolt", "spout", "RegisterBolt"
	}
	if r.spout == nil && r.bolt == nil {
		return fmt.Errorf("%s: no component registered (call ardea.%s from an init function)", export, register)
	}
	return fmt.Errorf("%s is a %s export, but this module registers a %s", export, want, have)
}

// setup decodes the context blob (open/prepare).
func (r *runtime) setup(n int32) error {
	src, err := r.input(n)
	if err != nil {
		return err
	}
	c, err := tuple.DecodeContext(src)
	if err != nil {
		return err
	}
	ctx, err := newContext(r, c)
	if err != nil {
		return err
	}
	r.ctx = ctx
	r.defStream, r.defFields = -1, 0
	if si, ok := ctx.streams[defaultStream]; ok {
		r.defStream, r.defFields = si, len(ctx.outputs[si].Fields)
	}
	r.ready, r.done = false, false
	r.state.discard()
	return nil
}

func (r *runtime) open(n int32) (code int32) {
	defer r.guard(&code)
	r.begin("Open", false)
	if r.spout == nil {
		return r.fail(r.kindError("ardea_open", false))
	}
	if err := r.setup(n); err != nil {
		return r.fail(err)
	}
	r.canEmit = true
	if err := r.spout.Open(r.ctx); err != nil {
		return r.fail(err)
	}
	r.ready = true
	return r.end(0)
}

func (r *runtime) prepare(n int32) (code int32) {
	defer r.guard(&code)
	r.begin("Prepare", false)
	if r.bolt == nil {
		return r.fail(r.kindError("ardea_prepare", true))
	}
	if err := r.setup(n); err != nil {
		return r.fail(err)
	}
	r.canEmit = true
	if err := r.bolt.Prepare(r.ctx); err != nil {
		return r.fail(err)
	}
	r.ready = true
	return r.end(0)
}

// check verifies that a lifecycle export fits the registered component.
func (r *runtime) check(export string, bolt bool) error {
	if (bolt && r.bolt == nil) || (!bolt && r.spout == nil) {
		return r.kindError(export, bolt)
	}
	if !r.ready {
		first := "ardea_open"
		if bolt {
			first = "ardea_prepare"
		}
		return fmt.Errorf("%s called before a successful %s", export, first)
	}
	return nil
}

func (r *runtime) next(max int32) (code int32) {
	defer r.guard(&code)
	r.begin("Next", true)
	if err := r.check("ardea_next", false); err != nil {
		return r.fail(err)
	}
	if r.done {
		return r.end(int32(Done))
	}
	r.sc.max, r.sc.emitted = int(max), 0
	for {
		before := r.sc.emitted
		st, err := r.spout.Next(&r.sc)
		if err != nil {
			return r.fail(err)
		}
		switch st {
		case More:
			if r.sc.emitted == before || r.sc.emitted >= r.sc.max || r.emitErr != nil {
				return r.end(int32(More))
			}
		case Idle:
			return r.end(int32(Idle))
		case Done:
			r.done = true
			return r.end(int32(Done))
		default:
			return r.fail(fmt.Errorf("unknown status %d", st))
		}
	}
}

// ackFailIDs delivers a spout's "u32 count, u64 msgid*" payload.
func (r *runtime) ackFailIDs(n int32, fail bool) (code int32) {
	defer r.guard(&code)
	call, export := "Ack", "ardea_ack"
	if fail {
		call, export = "Fail", "ardea_fail"
	}
	r.begin(call, true)
	if err := r.check(export, false); err != nil {
		return r.fail(err)
	}
	src, err := r.input(n)
	if err != nil {
		return r.fail(err)
	}
	if len(src) < 4 || uint64(len(src)-4) != 8*uint64(binary.LittleEndian.Uint32(src)) {
		return r.fail(fmt.Errorf("malformed message id list (%d bytes)", len(src)))
	}
	r.sc.max, r.sc.emitted = 0, 0
	for i := 4; i < len(src); i += 8 {
		id := binary.LittleEndian.Uint64(src[i:])
		if fail {
			r.spout.Fail(id)
		} else {
			r.spout.Ack(id)
		}
	}
	return r.end(0)
}

func (r *runtime) activate(on bool) (code int32) {
	defer r.guard(&code)
	call, export := "Deactivate", "ardea_deactivate"
	if on {
		call, export = "Activate", "ardea_activate"
	}
	r.begin(call, false)
	if err := r.check(export, false); err != nil {
		return r.fail(err)
	}
	if on {
		r.spout.Activate()
	} else {
		r.spout.Deactivate()
	}
	return r.end(0)
}

func (r *runtime) execute(n int32) (code int32) {
	defer r.guard(&code)
	r.begin("Execute", true)
	if err := r.check("ardea_execute", true); err != nil {
		return r.fail(err)
	}
	src, err := r.input(n)
	if err != nil {
		return r.fail(err)
	}
	if len(src) < 4 {
		return r.fail(r.batchError(src))
	}
	r.batch, r.cursor = src, 0
	// The hot loop parses records in place and validates each values
	// block with scanFast; on any malformation batchError re-reads the
	// batch to describe the first problem.
	bolt, bc, inputs := r.bolt, &r.bc, r.ctx.inputs
	r.cur, r.autoAnchor, r.ackable = 0, 0, 0
	offs := r.offs[:0] // field offsets, reused for every tuple
	defer func() { r.offs = offs }()
	off := 4
	for i, count := uint32(0), binary.LittleEndian.Uint32(src); i < count; i++ {
		r.cursor = i // ardea_cursor: the record a failure is about
		if len(src)-off < recordHeader {
			return r.fail(r.batchError(src))
		}
		l := int(binary.LittleEndian.Uint32(src[off:]))
		if l < recordHeader-4 || len(src)-off-4 < l {
			return r.fail(r.batchError(src))
		}
		rec := src[off+4 : off+4+l]
		off += 4 + l
		idx := binary.LittleEndian.Uint16(rec)
		if int(idx) >= len(inputs) {
			return r.fail(r.batchError(src))
		}
		vals := rec[recordHeader-4:]
		k0 := uint16(0)
		if len(vals) >= 7 && vals[0] == 1 && vals[1] == 0 && (vals[2] == byte(KindString) || vals[2] == byte(KindBytes)) &&
			uint64(binary.LittleEndian.Uint32(vals[3:])) == uint64(len(vals)-7) {
			// One string or bytes field (split's lines, count's words).
			offs = append(offs[:0], 2)
			if n := len(vals) - 7; n < 0xffff {
				k0 = uint16(n + 1)
			}
		} else {
			var ok bool
			if offs, ok = scanFast(offs[:0], vals); !ok {
				return r.fail(r.batchError(src))
			}
		}
		t := Tuple{in: &inputs[idx], raw: vals, offs: offs, id: binary.LittleEndian.Uint64(rec[6:]), src: binary.LittleEndian.Uint32(rec[2:]), idx: idx, k0: k0}
		// An untracked tuple (id 0, every tuple at most once) needs no
		// acking state: cur, ackable and autoAnchor are 0 between tuples.
		if t.id != 0 {
			r.cur, r.curDone, r.ackable = t.id, false, t.id
			if !r.manualAck {
				r.autoAnchor = t.id
			}
		}
		if err := bolt.Execute(t, bc); err != nil {
			r.cur, r.autoAnchor, r.ackable = 0, 0, 0
			return r.fail(tupleError{t, err})
		}
		if t.id == 0 {
			continue
		}
		if !r.manualAck && !r.curDone {
			// ackFail's fast path by hand (a call costs more than this).
			if at := len(r.out); at < outFlush && cap(r.out)-at >= 16 {
				p := unsafe.Add(unsafe.Pointer(unsafe.SliceData(r.out)), at)
				*(*uint64)(p) = uint64(tuple.OpAck) | t.id<<8
				*(*uint64)(unsafe.Add(p, 8)) = t.id >> 56
				r.out = r.out[:at+9]
			} else {
				r.ackFail(tuple.OpAck, t.id)
			}
		}
		r.cur, r.autoAnchor, r.ackable = 0, 0, 0
	}
	if off != len(src) {
		return r.fail(r.batchError(src))
	}
	return r.end(0)
}

// recordHeader is the size of a batch record before its values.
const recordHeader = 4 + 2 + 4 + 8

// batchError describes the first malformation of an input batch (the
// execute loop found one).
func (r *runtime) batchError(src []byte) error {
	br, err := tuple.NewBatchReader(src)
	if err != nil {
		return err
	}
	for i := 0; ; i++ {
		rec, ok, err := br.Next()
		if err != nil {
			return err
		}
		if !ok {
			return errors.New("malformed batch")
		}
		if int(rec.Input) >= len(r.ctx.inputs) {
			return fmt.Errorf("batch record %d: input index %d, but the context declares %d inputs", i, rec.Input, len(r.ctx.inputs))
		}
		if _, err = scanValues(r.offs[:0], rec.Values); err != nil {
			in := &r.ctx.inputs[rec.Input]
			return fmt.Errorf("batch record %d from %s/%s task %d: %w", i, in.Component, in.Stream, rec.SourceTask, err)
		}
	}
}

// tupleError names the tuple whose Execute failed.
type tupleError struct {
	t   Tuple
	err error
}

func (e tupleError) Error() string {
	return fmt.Sprintf("tuple %d from %s/%s task %d: %v", e.t.id, e.t.Component(), e.t.Stream(), e.t.src, e.err)
}

func (e tupleError) Unwrap() error { return e.err }

func (r *runtime) tick() (code int32) {
	defer r.guard(&code)
	r.begin("Tick", true)
	if err := r.check("ardea_tick", true); err != nil {
		return r.fail(err)
	}
	if err := r.bolt.Tick(&r.bc); err != nil {
		return r.fail(err)
	}
	return r.end(0)
}

func (r *runtime) finish() (code int32) {
	defer r.guard(&code)
	r.begin("Finish", true)
	if err := r.check("ardea_finish", true); err != nil {
		return r.fail(err)
	}
	if err := r.bolt.Finish(&r.bc); err != nil {
		return r.fail(err)
	}
	return r.end(0)
}

func (r *runtime) close() (code int32) {
	defer r.guard(&code)
	r.begin("Close", false)
	var err error
	switch {
	case r.spout != nil:
		err = r.spout.Close()
	case r.bolt != nil:
		err = r.bolt.Close()
	default:
		err = errors.New("ardea_close: no component registered")
	}
	if err != nil {
		return r.fail(err)
	}
	r.ready = false
	return r.end(0)
}
