package ardea

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/wasm-sdk/go/internal/tuple"
)

// TestEmitDefaultMatchesEmit checks emitDefault's fast path (8-byte stores
// into spare capacity, short values copied without memmove) against the
// general encoder, for every value length up to 40 bytes and beyond, with
// and without an anchor, whatever room the output buffer has.
func TestEmitDefaultMatchesEmit(t *testing.T) {
	x := newHarness(t, nil, &funcBolt{})
	x.prepare(wordContext("word", "count"))
	r := x.r
	r.canEmit = true
	lengths := []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 40, 100, 5000}
	for _, n := range lengths {
		s := strings.Repeat("abcdefghij", n/10+1)[:n]
		for _, vals := range [][]any{
			{Text(s), int64(-1 << 40)},
			{s, 7},
			{Text(s), Text(s + "x")},
			{int64(n), int64(1<<63 - 1)},
		} {
			for _, anchor := range []uint64{0, 0x0102030405060708} {
				r.out = nil
				r.emit(r.defStream, defaultStream, 0xffffffff, 0, anchor, vals)
				want := bytes.Clone(r.out)
				if r.emitErr != nil || len(want) == 0 {
					t.Fatalf("emit %v: %v", vals, r.emitErr)
				}
				// Every capacity from too small to ample: the result must
				// not depend on which path ran.
				for spare := 0; spare <= len(want)+24; spare += max(1, len(want)/16) {
					r.out = append(make([]byte, 0, 3+spare), "pre"...)
					r.emitDefaultGo(0, anchor, vals)
					if got := r.out[3:]; !bytes.Equal(got, want) || string(r.out[:3]) != "pre" {
						t.Fatalf("len %d, %v, anchor %x, %d spare bytes:\n got %x\nwant %x", n, fmt.Sprint(vals...), anchor, spare, got, want)
					}
				}
			}
		}
	}
	if r.emitErr != nil {
		t.Fatal(r.emitErr)
	}
}

// TestAckFastPath checks that Ack of the tuple being executed, through the
// inlined fast path, writes the same op as the general one, once.
func TestAckFastPath(t *testing.T) {
	b := &funcBolt{exec: func(tp Tuple, c *BoltCollector) error {
		c.Ack(tp)
		c.Ack(tp) // dropped: acked already
		c.Fail(tp)
		return nil
	}}
	x := newHarness(t, nil, b)
	x.prepare(wordContext("word", "count"))
	x.r.out = make([]byte, 0, 1024) // room: the fast path runs
	x.mustOK(x.execute(batchOf([]tuple.Value{tuple.Str("a")}, []tuple.Value{tuple.Str("b")})), 0, "execute")
	ops := x.h.ops()
	if len(ops) != 2 || ops[0].Code != tuple.OpAck || ops[0].MsgID != 1 || ops[1].Code != tuple.OpAck || ops[1].MsgID != 2 {
		t.Fatalf("ops = %+v, want acks of 1 and 2", ops)
	}
}

// TestObserveBatched checks that a call's observations reach the host in
// one observe_many per histogram, in order, also when the call fails, and
// that 1024 pending observations are sent at once.
func TestObserveBatched(t *testing.T) {
	var ctx *Context
	fail := false
	b := &funcBolt{
		prepare: func(c *Context) error { ctx = c; return nil },
		exec: func(tp Tuple, c *BoltCollector) error {
			ctx.Observe("a", 1)
			ctx.Observe("b", 2)
			ctx.Observe(string([]byte{'a'}), 3) // same name, another pointer
			if fail {
				return errors.New("boom")
			}
			return nil
		},
	}
	x := newHarness(t, nil, b)
	x.prepare(wordContext("word", "count"))
	x.mustOK(x.execute(batchOf([]tuple.Value{tuple.Str("w")})), 0, "execute")
	if got := x.h.Observed; !slices.Equal(got["a"], []int64{1, 3}) || !slices.Equal(got["b"], []int64{2}) || x.h.ObserveCalls != 2 {
		t.Fatalf("observed %v in %d calls, want a=[1 3] b=[2] in 2", got, x.h.ObserveCalls)
	}
	x.h.Reset()
	x.h.Observed, x.h.ObserveCalls = nil, 0
	fail = true
	x.mustFail(x.execute(batchOf([]tuple.Value{tuple.Str("w")})), "boom")
	if got := x.h.Observed; !slices.Equal(got["a"], []int64{1, 3}) || x.h.ObserveCalls != 2 {
		t.Fatalf("after a failed call: observed %v in %d calls", got, x.h.ObserveCalls)
	}
	x.h.Observed, x.h.ObserveCalls = nil, 0
	for i := range 2*maxObserved + 1 {
		x.r.observe("c", int64(i))
	}
	if n := len(x.h.Observed["c"]); n != 2*maxObserved || x.h.ObserveCalls != 2 {
		t.Fatalf("%d observations sent in %d calls before the call ended, want %d in 2", n, x.h.ObserveCalls, 2*maxObserved)
	}
}
