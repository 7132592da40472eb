package ardeatest

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	ardea "github.com/ardea-dev/ardea/wasm-sdk/go"
	"github.com/ardea-dev/ardea/wasm-sdk/go/internal/bridge"
	"github.com/ardea-dev/ardea/wasm-sdk/go/internal/tuple"
)

// Bolt runs a bolt. Its methods are the host's calls; each returns the
// call's error (a *CallError: the error Execute returned or its panic,
// with the message the host would log). The first call prepares the bolt
// (Prepare) if the test did not; a failing Prepare then fails the test.
type Bolt struct {
	*Host
	prepared bool
	nextID   uint64
}

// NewBolt returns a harness for b with the declarations it registers with
// (pass the same ones as its ardea.RegisterBolt, or use RegisteredBolt).
func NewBolt(t testing.TB, b ardea.Bolt, task Task, decls ...ardea.Declaration) *Bolt {
	t.Helper()
	return &Bolt{Host: newHost(t, b, decls, task)}
}

// RegisteredBolt returns a harness for the bolt this package registered
// (ardea.RegisterBolt in an init function) with its declarations. The
// component is that one value: state it keeps carries over between
// harnesses.
func RegisteredBolt(t testing.TB, task Task) *Bolt {
	t.Helper()
	c, decls := registered(t)
	b, ok := c.(ardea.Bolt)
	if !ok {
		t.Fatalf("ardeatest: the registered component %T is not a bolt", c)
	}
	return &Bolt{Host: newHost(t, b, decls, task)}
}

func registered(t testing.TB) (any, []ardea.Declaration) {
	t.Helper()
	if bridge.Registered == nil {
		t.Fatal("ardeatest: the ardea package is not linked natively")
	}
	c, d := bridge.Registered()
	if c == nil {
		t.Fatal("ardeatest: no component registered (call ardea.RegisterBolt or ardea.RegisterSpout from an init function)")
	}
	decls, _ := d.([]ardea.Declaration)
	return c, decls
}

// Prepare calls the bolt's Prepare with the task's context.
func (b *Bolt) Prepare() error {
	ctx, err := b.context()
	if err != nil {
		return fmt.Errorf("ardeatest: %w", err)
	}
	b.ctx = ctx
	n := len(b.h.Errors)
	err = b.result(b.r.Prepare(b.put(ctx.Encode(nil))), n)
	b.prepared = err == nil
	return err
}

func (b *Bolt) ensure() {
	b.t.Helper()
	if !b.prepared {
		if err := b.Prepare(); err != nil {
			b.t.Fatalf("ardeatest: Prepare: %v", err)
		}
	}
}

// In is one input tuple.
type In struct {
	// Input is the index of its input in Task.Inputs (default 0).
	Input int
	// Values are the tuple's fields in the input's field order ...
	Values []any
	// ... or Fields gives them by name (a declared field left out is
	// null); a name the input does not declare fails the test.
	Fields map[string]any
	// ID is the tuple id; 0 picks the next of 1, 2, 3, ... (tracked, as
	// under at-least-once). Use Untracked for an id of 0.
	ID uint64
	// Untracked sends the tuple with id 0 (at most once: not acked).
	Untracked bool
	// SourceTask is the task that emitted it (default 1).
	SourceTask uint32
}

// Execute feeds one tuple with values in the first input's field order
// and returns Execute's error.
func (b *Bolt) Execute(values ...any) error { return b.ExecuteBatch(In{Values: values}) }

// ExecuteFields feeds one tuple on the first input, its fields by name.
func (b *Bolt) ExecuteFields(fields map[string]any) error {
	return b.ExecuteBatch(In{Fields: fields})
}

// ExecuteBatch feeds tuples as one batch (one ardea_execute call). If one
// fails, the host fails that tuple (Cursor says which) and the call's
// error is returned; nothing the call emitted or wrote to state is kept.
func (b *Bolt) ExecuteBatch(ins ...In) error {
	b.t.Helper()
	b.ensure()
	var w tuple.BatchWriter
	w.Reset()
	for i, in := range ins {
		if in.Input < 0 || in.Input >= len(b.ctx.Inputs) {
			b.t.Fatalf("ardeatest: tuple %d: input %d, but the bolt has %d inputs", i, in.Input, len(b.ctx.Inputs))
		}
		decl := b.ctx.Inputs[in.Input]
		vals := in.Values
		if in.Fields != nil {
			if in.Values != nil {
				b.t.Fatalf("ardeatest: tuple %d sets both Values and Fields", i)
			}
			vals = make([]any, len(decl.Fields))
			for name, v := range in.Fields {
				j := slices.Index(decl.Fields, name)
				if j < 0 {
					b.t.Fatalf("ardeatest: tuple %d: input %s/%s has no field %q (fields %q)", i, decl.Component, decl.Stream, name, decl.Fields)
				}
				vals[j] = v
			}
		}
		enc, err := values(vals)
		if err != nil {
			b.t.Fatalf("ardeatest: tuple %d: %v", i, err)
		}
		id := in.ID
		if id == 0 && !in.Untracked {
			b.nextID++
			id = b.nextID
		} else if id > b.nextID {
			b.nextID = id
		}
		src := in.SourceTask
		if src == 0 {
			src = 1
		}
		w.Append(uint16(in.Input), src, id, enc)
	}
	n := len(b.h.Errors)
	return b.result(b.r.Execute(b.put(w.Buf)), n)
}

// LastID is the id of the last tracked tuple fed.
func (b *Bolt) LastID() uint64 { return b.nextID }

// Cursor is the index, in the last batch, of the tuple the last Execute
// call was at: the failing tuple if it failed.
func (b *Bolt) Cursor() int { return int(b.r.Cursor()) }

// Tick calls Tick.
func (b *Bolt) Tick() error {
	b.t.Helper()
	b.ensure()
	n := len(b.h.Errors)
	return b.result(b.r.Tick(), n)
}

// Finish calls Finish (every upstream task finished).
func (b *Bolt) Finish() error {
	b.t.Helper()
	b.ensure()
	n := len(b.h.Errors)
	return b.result(b.r.Finish(), n)
}

// Close calls Close.
func (b *Bolt) Close() error {
	b.t.Helper()
	b.ensure()
	n := len(b.h.Errors)
	return b.result(b.r.Close(), n)
}

// Spout runs a spout; see Bolt. The first call opens it (Open).
type Spout struct {
	*Host
	opened bool
	done   bool
}

// NewSpout returns a harness for s with its declarations (see NewBolt).
func NewSpout(t testing.TB, s ardea.Spout, task Task, decls ...ardea.Declaration) *Spout {
	t.Helper()
	return &Spout{Host: newHost(t, s, decls, task)}
}

// RegisteredSpout returns a harness for the spout this package
// registered, with its declarations (see RegisteredBolt).
func RegisteredSpout(t testing.TB, task Task) *Spout {
	t.Helper()
	c, decls := registered(t)
	s, ok := c.(ardea.Spout)
	if !ok {
		t.Fatalf("ardeatest: the registered component %T is not a spout", c)
	}
	return &Spout{Host: newHost(t, s, decls, task)}
}

// Open calls the spout's Open with the task's context.
func (s *Spout) Open() error {
	ctx, err := s.context()
	if err != nil {
		return fmt.Errorf("ardeatest: %w", err)
	}
	s.ctx = ctx
	n := len(s.h.Errors)
	err = s.result(s.r.Open(s.put(ctx.Encode(nil))), n)
	s.opened = err == nil
	return err
}

func (s *Spout) ensure() {
	s.t.Helper()
	if !s.opened {
		if err := s.Open(); err != nil {
			s.t.Fatalf("ardeatest: Open: %v", err)
		}
	}
}

// Next asks for up to max tuples (one ardea_next call: the SDK calls the
// spout's Next while it emits and the budget lasts) and returns the
// status.
func (s *Spout) Next(max int) (ardea.Status, error) {
	s.t.Helper()
	s.ensure()
	n := len(s.h.Errors)
	code := s.r.Next(int32(max))
	if err := s.result(code, n); err != nil {
		return 0, err
	}
	st := ardea.Status(code)
	if st == ardea.Done {
		s.done = true
	}
	return st, nil
}

// Drain calls Next(max) until the spout reports Done, at most calls
// times, and fails the test if it does not (or a call fails).
func (s *Spout) Drain(max, calls int) {
	s.t.Helper()
	for range calls {
		st, err := s.Next(max)
		if err != nil {
			s.t.Fatalf("ardeatest: Next: %v", err)
		}
		if st == ardea.Done {
			return
		}
	}
	s.t.Fatalf("ardeatest: the spout did not report Done in %d Next calls", calls)
}

// Done reports whether the spout reported Done.
func (s *Spout) Done() bool { return s.done }

// Ack delivers acks of message ids (their tuple trees were processed).
func (s *Spout) Ack(ids ...uint64) error { return s.ackFail(ids, false) }

// Fail delivers fails of message ids (a tree failed or timed out).
func (s *Spout) Fail(ids ...uint64) error { return s.ackFail(ids, true) }

func (s *Spout) ackFail(ids []uint64, fail bool) error {
	s.t.Helper()
	s.ensure()
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(ids)))
	for _, id := range ids {
		b = binary.LittleEndian.AppendUint64(b, id)
	}
	n := len(s.h.Errors)
	p := s.put(b)
	if fail {
		return s.result(s.r.Fail(p), n)
	}
	return s.result(s.r.Ack(p), n)
}

// Activate and Deactivate resume and pause the spout.
func (s *Spout) Activate() error {
	s.t.Helper()
	s.ensure()
	n := len(s.h.Errors)
	return s.result(s.r.Activate(), n)
}

func (s *Spout) Deactivate() error {
	s.t.Helper()
	s.ensure()
	n := len(s.h.Errors)
	return s.result(s.r.Deactivate(), n)
}

// Close calls Close.
func (s *Spout) Close() error {
	s.t.Helper()
	s.ensure()
	n := len(s.h.Errors)
	return s.result(s.r.Close(), n)
}
