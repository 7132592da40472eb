package host

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/host/limits"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// A failing tuple (wasm-sdk/ABI.md, "A failing tuple (cursor)"). A bolt
// whose module exports ardea_cursor runs each batch so that a failure
// leaves nothing behind: the call's emits are kept in the instance and
// routed only once it succeeded (hostEmit, routePending), and its state
// writes go to an undo scope of the task's MemoryState. When the call
// traps or returns an error, the cursor names the record it was
// processing; the host undoes the call's writes, drops its emits, asks
// InstanceConfig.OnTupleFailure what to do, starts a fresh instance of
// the module with the same state and context, fails the record (a fail op
// for its tuple id) and runs the rest of the batch. A module without the
// cursor fails the instance as before.

// failingTuples is a measuring switch, not a setting: linked with
// -ldflags=-X=github.com/ardea-dev/ardea/host.failingTuples=off, a module
// with a cursor runs as one without (no buffered emits, no undo log), so
// that a benchmark can compare the two on the same modules
// (docs/performance.md).
var failingTuples = "on"

var isolating = failingTuples != "off"

// defaultMaxConsecutiveFailures is topology.bolt.max_consecutive_failures'
// default.
const defaultMaxConsecutiveFailures = 100

// DefaultMaxFailingTime is topology.bolt.max_failing_time's default.
const DefaultMaxFailingTime = limits.DefaultMaxFailingTime

// errTooManyFailures is the kind of the error that fails an instance after
// topology.bolt.max_consecutive_failures tuples failed in a row, or after
// tuples failing in a row took topology.bolt.max_failing_time; the
// error's text names the bound that was hit.
var errTooManyFailures = errors.New("too many consecutive failing tuples")

// TupleFailure is one input record a bolt's execute failed on.
type TupleFailure struct {
	Component string
	Task      uint32
	// Index is the record's index in the batch as executed (records
	// failed before it are no longer in it).
	Index      int
	Input      uint16
	SourceTask uint32
	TupleID    uint64
	// Values is the record's values block (ABI "Values"); it aliases the
	// batch: copy it to keep it past the callback.
	Values []byte
	// Err is the failed call's error: the guest's message (with its
	// source location, as the SDKs report it) or the trap and its stack.
	Err error
	// Consecutive counts the tuples that failed in a row, this one
	// included.
	Consecutive int
	// Failing is the time the calls that failed on them took, this
	// one's included (topology.bolt.max_failing_time bounds it).
	Failing time.Duration
}

// maxTupleText bounds the bytes of a tuple's payloads shown in errors.
const maxTupleText = 256

// FormatTuple renders a values block for an error message: each field
// decoded, strings and bytes quoted with Go escapes, at most 256 bytes
// of payload, a longer one cut with the size it had.
func FormatTuple(values []byte) string {
	var sb strings.Builder
	sb.WriteByte('[')
	if len(values) < 2 {
		return "[malformed tuple]"
	}
	n := int(binary.LittleEndian.Uint16(values))
	off, budget := 2, maxTupleText
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteString(", ")
		}
		if off >= len(values) {
			sb.WriteString("<truncated>")
			break
		}
		tag := tuple.Kind(values[off])
		off++
		switch tag {
		case tuple.Null:
			sb.WriteString("null")
		case tuple.Bytes, tuple.String:
			if len(values)-off < 4 {
				sb.WriteString("<truncated>")
				i = n
				continue
			}
			l := int(binary.LittleEndian.Uint32(values[off:]))
			off += 4
			if l > len(values)-off {
				sb.WriteString("<truncated>")
				i = n
				continue
			}
			p := values[off : off+l]
			off += l
			show := p[:min(len(p), max(budget, 0))]
			budget -= len(show)
			if tag == tuple.Bytes {
				sb.WriteString("bytes:")
			}
			sb.WriteString(strconv.Quote(string(show)))
			if len(show) < len(p) {
				fmt.Fprintf(&sb, "...(%d bytes)", len(p))
			}
		case tuple.Int64:
			if len(values)-off < 8 {
				sb.WriteString("<truncated>")
				i = n
				continue
			}
			sb.WriteString(strconv.FormatInt(int64(binary.LittleEndian.Uint64(values[off:])), 10))
			off += 8
		case tuple.Float64:
			if len(values)-off < 8 {
				sb.WriteString("<truncated>")
				i = n
				continue
			}
			v, _, _ := tuple.DecodeValue(values[off-1:])
			sb.WriteString(strconv.FormatFloat(v.F, 'g', -1, 64))
			off += 8
		case tuple.Bool:
			if off >= len(values) {
				sb.WriteString("<truncated>")
				i = n
				continue
			}
			sb.WriteString(strconv.FormatBool(values[off] == 1))
			off++
		default:
			fmt.Fprintf(&sb, "<field of unknown type %d>", tag)
			i = n
		}
	}
	sb.WriteByte(']')
	return sb.String()
}

// initCursor calls ardea_cursor once: the pointer it returns holds the
// record index for the instance's life.
func (in *instance) initCursor() error {
	d := in.module.c.exports[callNames[callCursor]]
	if !sameSig(d.ParamTypes(), d.ResultTypes(), nil, i32) {
		in.shutdown()
		return fmt.Errorf("host: %s: module %s: export ardea_cursor has signature %s, want () -> i32",
			in.label, in.module.name, sig(d.ParamTypes(), d.ResultTypes()))
	}
	p, err := in.call(callCursor, 0, nil)
	if err != nil {
		return err
	}
	if p == 0 || uint64(uint32(p))+4 > uint64(in.mem.Size()) {
		in.shutdown()
		return fmt.Errorf("host: %s: module %s: ardea_cursor returned %d, outside linear memory (%d bytes): %w",
			in.label, in.module.name, uint32(p), in.mem.Size(), errABIViolation)
	}
	in.cursorPtr = uint32(p)
	return nil
}

// readCursor records the record a failed execute was processing, before
// the instance is closed.
func (in *instance) readCursor(id callID) {
	if id != callExecute || in.cursorPtr == 0 || in.mem == nil {
		return
	}
	if v, ok := in.mem.ReadUint32Le(in.cursorPtr); ok {
		in.failedAt = int(v)
	}
}

// routePending routes what a successful call emitted; a violation in it
// fails the instance as it would have during the call.
func (in *instance) routePending() (err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(*violation); !ok {
				panic(r)
			}
			err = in.kill(in.fault)
		}
	}()
	in.route(in.pending)
	return nil
}

// isolable reports whether a failed execute fails one tuple rather than
// the instance: a trap, a guest error, the call's deadline, the memory
// limit or an exit. ABI violations and the host's state and emit limits
// fail the instance.
func isolable(err error) bool {
	if errors.Is(err, errABIViolation) || errors.Is(err, ErrStateLimit) || errors.Is(err, ErrEmitLimit) {
		return false
	}
	return errors.Is(err, ErrTrap) || errors.Is(err, ErrGuest) || errors.Is(err, ErrDeadlineExceeded) ||
		errors.Is(err, ErrMemoryLimit) || errors.Is(err, errExited)
}

// undoer is a state whose writes can be undone (MemoryState).
type undoer interface {
	Mark() int
	UndoTo(mark int)
	Release(mark int)
}

// executeIsolated runs a batch on a bolt with a cursor: see the top of
// this file.
func (b *bolt) executeIsolated(ctx context.Context, batch []byte, out plugin.Collector) error {
	cur := batch
	good := 0 // records before it went through in an earlier call of this batch
	for {
		in := b.in
		if err := in.input(cur); err != nil {
			return err
		}
		un, _ := in.state.(undoer)
		mark := 0
		if un != nil {
			mark = un.Mark()
		}
		in.buffering = true
		began := time.Now()
		_, err := in.call(callExecute, uint64(len(cur)), out)
		spent := time.Since(began)
		in.buffering = false
		if err == nil {
			if un != nil {
				un.Release(mark)
			}
			if recordCount(cur) > good {
				b.consecutive, b.failing = 0, 0
			}
			return nil
		}
		if un != nil {
			un.UndoTo(mark)
			un.Release(mark)
		}
		if in.failedAt < 0 || !isolable(err) {
			return err
		}
		rec, start, end, ok := recordAt(cur, in.failedAt)
		if !ok {
			return fmt.Errorf("%w (the cursor names record %d, which the batch of %d records does not have)",
				err, in.failedAt, recordCount(cur))
		}
		if in.failedAt > good {
			// Records between the last failed one and this went through.
			b.consecutive, b.failing = 0, 0
		}
		b.consecutive++
		b.failing += spent
		good = in.failedAt
		f := TupleFailure{Component: b.ic.Component, Task: b.ic.TaskID, Index: in.failedAt,
			Input: rec.Input, SourceTask: rec.SourceTask, TupleID: rec.TupleID, Values: rec.Values,
			Err: err, Consecutive: b.consecutive, Failing: b.failing}
		if err := b.overBounds(in.label, rec.Values, err); err != nil {
			return err
		}
		if b.ic.OnTupleFailure != nil {
			if perr := b.ic.OnTupleFailure(f); perr != nil {
				return perr
			}
		}
		id := rec.TupleID
		if err := b.restart(ctx, out); err != nil {
			return err
		}
		if err := out.Fail(id); err != nil {
			return fmt.Errorf("%s: fail of tuple %d: %w", in.label, id, err)
		}
		if ctx.Err() != nil {
			// A stop while tuples of a batch keep failing: the rest of the
			// batch is not run (each of its tuples may loop until the call's
			// deadline), and its tuples are left to the delivery mode as
			// any tuple in flight at a stop is.
			return fmt.Errorf("%s: stopped with %d tuples of the batch not run: %w", in.label, recordCount(cur)-1, context.Cause(ctx))
		}
		// The rest of the batch, without the record (a copy: the batch
		// belongs to the caller).
		if &cur[0] == &batch[0] {
			b.batch = append(b.batch[:0], cur...)
			cur = b.batch
		}
		n := copy(cur[start:], cur[end:])
		cur = cur[:start+n]
		binary.LittleEndian.PutUint32(cur, binary.LittleEndian.Uint32(cur)-1)
		b.batch = cur
	}
}

// overBounds fails the instance when the tuples that failed in a row
// reached topology.bolt.max_consecutive_failures, or the calls that
// failed on them took topology.bolt.max_failing_time (each may cost up
// to the call's deadline: a bolt looping on every tuple would otherwise
// fail for the count times the deadline). The error names the bound.
func (b *bolt) overBounds(label string, values []byte, err error) error {
	if limit := b.maxConsecutive(); b.consecutive >= limit {
		return &callError{
			msg: fmt.Sprintf("%s: %d tuples in a row failed, the limit topology.bolt.max_consecutive_failures = %d; the last one, %s: %v",
				label, b.consecutive, limit, FormatTuple(values), err),
			kind: errTooManyFailures, cause: err,
		}
	}
	if limit := b.maxFailingTime(); b.failing >= limit {
		return &callError{
			msg: fmt.Sprintf("%s: %d tuples in a row failed in %s, the limit topology.bolt.max_failing_time = %s; the last one, %s: %v",
				label, b.consecutive, b.failing.Round(time.Millisecond), limit, FormatTuple(values), err),
			kind: errTooManyFailures, cause: err,
		}
	}
	return nil
}

func (b *bolt) maxConsecutive() int {
	if b.ic.MaxConsecutiveFailures > 0 {
		return b.ic.MaxConsecutiveFailures
	}
	return defaultMaxConsecutiveFailures
}

func (b *bolt) maxFailingTime() time.Duration {
	if b.ic.MaxFailingTime > 0 {
		return b.ic.MaxFailingTime
	}
	return DefaultMaxFailingTime
}

// restart replaces the failed instance with a fresh one of the same
// module, prepared with the same context and state (as a swap starts the
// new version); what its prepare emits goes to out.
func (b *bolt) restart(ctx context.Context, out plugin.Collector) error {
	old := b.in
	old.shutdown()
	in, err := old.module.newInstance(ctx, kindBolt, b.ic)
	if err != nil {
		return fmt.Errorf("%s: a fresh instance after a failing tuple: %w", old.label, err)
	}
	if err := in.open(callPrepare, b.tc, out); err != nil {
		in.shutdown()
		return fmt.Errorf("%s: a fresh instance after a failing tuple: %w", old.label, err)
	}
	b.in = in
	b.live.Store(in)
	b.restarts.Add(1)
	return nil
}

// recordAt finds record i of an ABI batch: the record and its byte range.
func recordAt(batch []byte, i int) (rec tuple.Record, start, end int, ok bool) {
	r, err := tuple.NewBatchReader(batch)
	if err != nil || i < 0 || i >= r.Count() {
		return rec, 0, 0, false
	}
	off := 4
	for j := 0; ; j++ {
		rec, more, err := r.Next()
		if err != nil || !more {
			return rec, 0, 0, false
		}
		n := 4 + int(binary.LittleEndian.Uint32(batch[off:]))
		if j == i {
			return rec, off, off + n, true
		}
		off += n
	}
}

func recordCount(batch []byte) int {
	if len(batch) < 4 {
		return 0
	}
	return int(binary.LittleEndian.Uint32(batch))
}

// restarts reports how many fresh instances a bolt started after failing
// tuples (0 for anything else).
func restarts(c any) int64 {
	if b, ok := c.(*bolt); ok {
		return b.restarts.Load()
	}
	return 0
}
