package ardea

import (
	"errors"
	"slices"
	"testing"
)

// counterSpout emits the integers 1..limit, one per Next, with message ids.
type counterSpout struct {
	BaseSpout
	ctx     *Context
	c       *SpoutCollector
	n       int
	limit   int
	calls   int
	active  bool
	acked   []uint64
	replays []uint64
}

func (s *counterSpout) Open(ctx *Context) error {
	s.ctx, s.active = ctx, true
	return nil
}

func (s *counterSpout) Next(c *SpoutCollector) (Status, error) {
	s.c = c
	s.calls++
	if s.n >= s.limit {
		return Done, nil
	}
	if s.n == 3 && s.calls == 4 { // pretend the source has nothing right now, once
		return Idle, nil
	}
	s.n++
	c.EmitWithID(uint64(s.n), "w", s.n)
	return More, nil
}

func (s *counterSpout) Ack(id uint64) { s.acked = append(s.acked, id) }

// Fail replays at once through the collector kept from Next.
func (s *counterSpout) Fail(id uint64) {
	s.replays = append(s.replays, id)
	s.c.EmitWithID(id, "replay", int64(id))
}

func (s *counterSpout) Activate()   { s.active = true }
func (s *counterSpout) Deactivate() { s.active = false }

func msgIDs(ids ...uint64) []byte {
	b := []byte{byte(len(ids)), 0, 0, 0}
	for _, id := range ids {
		for i := range 8 {
			b = append(b, byte(id>>(8*i)))
		}
	}
	return b
}

func TestSpoutNextLoop(t *testing.T) {
	s := &counterSpout{limit: 5}
	x := newHarness(t, s, nil)
	x.open(wordContext("word", "count"))
	// max 2: Next is called until two tuples are out, in one emit call.
	x.mustOK(x.r.next(2), 0, "next")
	if s.calls != 2 || len(x.h.Emits) != 1 || len(x.h.ops()) != 2 {
		t.Fatalf("calls %d, emit calls %d", s.calls, len(x.h.Emits))
	}
	// max 10: one more tuple, then Idle ends the call.
	x.mustOK(x.r.next(10), int32(Idle), "next")
	if s.calls != 4 || len(x.h.ops()) != 3 {
		t.Fatalf("calls %d, ops %d", s.calls, len(x.h.ops()))
	}
	x.mustOK(x.r.next(10), int32(Done), "next")
	if ops := x.h.ops(); len(ops) != 5 || ops[4].MsgID != 5 {
		t.Fatalf("ops %+v", ops)
	}
	// Done is final: Next is not called again.
	calls := s.calls
	x.mustOK(x.r.next(10), int32(Done), "next")
	if s.calls != calls {
		t.Error("Next called after Done")
	}
	// Ack and Fail get the ids; Fail may emit (replay).
	x.h.Reset()
	x.mustOK(x.r.ackFailIDs(x.put(msgIDs(1, 2)), false), 0, "ack")
	x.mustOK(x.r.ackFailIDs(x.put(msgIDs(3)), true), 0, "fail")
	if !slices.Equal(s.acked, []uint64{1, 2}) || !slices.Equal(s.replays, []uint64{3}) {
		t.Errorf("acked %v replays %v", s.acked, s.replays)
	}
	if ops := x.h.ops(); len(ops) != 1 || ops[0].MsgID != 3 {
		t.Errorf("replay ops %+v", ops)
	}
	x.mustFail(x.r.ackFailIDs(x.put([]byte{2, 0, 0, 0, 1}), false), "malformed message id list (5 bytes)")
	// Activate/Deactivate may not emit.
	x.mustOK(x.r.activate(false), 0, "deactivate")
	if s.active {
		t.Error("still active")
	}
	x.mustOK(x.r.activate(true), 0, "activate")
	if !s.active {
		t.Error("not active")
	}
	x.mustOK(x.r.close(), 0, "close")
}

func TestSpoutMoreWithoutEmitReturns(t *testing.T) {
	calls := 0
	sp := &funcSpout{next: func(c *SpoutCollector) (Status, error) {
		calls++
		if c.Remaining() != 100 || c.Emitted() != 0 {
			t.Errorf("remaining %d emitted %d", c.Remaining(), c.Emitted())
		}
		return More, nil
	}}
	x := newHarness(t, sp, nil)
	x.open(wordContext("word"))
	x.mustOK(x.r.next(100), 0, "next")
	if calls != 1 || len(x.h.Emits) != 0 {
		t.Errorf("%d Next calls, %d emit calls", calls, len(x.h.Emits))
	}
	sp.next = func(c *SpoutCollector) (Status, error) { return More, errors.New("source broke") }
	x.mustFail(x.r.next(1), "Next: source broke")
	sp.next = func(c *SpoutCollector) (Status, error) { return Status(9), nil }
	x.mustFail(x.r.next(1), "Next: unknown status 9")
	sp.next = func(c *SpoutCollector) (Status, error) {
		c.EmitTo("nope", 1)
		return More, nil
	}
	x.mustFail(x.r.next(5), `undeclared stream "nope"`)
}

func TestSpoutBatchEmits(t *testing.T) {
	sp := &batchSpout{}
	x := newHarness(t, sp, nil)
	x.open(wordContext("word"))
	if x.h.Writes != 1 || len(x.h.State["opened"]) != 1 {
		t.Fatalf("Open's state write: %d writes", x.h.Writes)
	}
	x.mustOK(x.r.next(50), 0, "next")
	if ops := x.h.ops(); len(ops) != 50 || len(x.h.Emits) != 1 {
		t.Errorf("%d ops", len(ops))
	}
	sp.emitOnActivate = true
	x.mustFail(x.r.activate(true), "during Activate")
}

// batchSpout emits all it is allowed to in one Next call.
type batchSpout struct {
	BaseSpout
	c              *SpoutCollector
	emitOnActivate bool
}

func (s *batchSpout) Open(ctx *Context) error {
	ctx.State().Put("opened", []byte{1})
	return nil
}

func (s *batchSpout) Next(c *SpoutCollector) (Status, error) {
	s.c = c
	for c.Remaining() > 0 {
		c.Emit("w")
	}
	return More, nil
}

func (s *batchSpout) Activate() {
	if s.emitOnActivate {
		s.c.Emit("x")
	}
}
