package ardea

import (
	"errors"
	"testing"
)

// A malformed ack list fails the call (the harness, ardeatest, cannot
// send one; the spout's lifecycle is tested through it in
// spout_ext_test.go).
func TestSpoutMalformedAcks(t *testing.T) {
	x := newHarness(t, &BaseSpout{}, nil)
	x.open(wordContext("word", "count"))
	x.mustFail(x.r.ackFailIDs(x.put([]byte{2, 0, 0, 0, 1}), false), "malformed message id list (5 bytes)")
	x.mustFail(x.r.ackFailIDs(x.put([]byte{1, 0}), true), "malformed message id list (2 bytes)")
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
