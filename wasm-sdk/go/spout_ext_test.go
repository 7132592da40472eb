package ardea_test

import (
	"slices"
	"testing"

	ardea "github.com/ardea-dev/ardea/wasm-sdk/go"
	"github.com/ardea-dev/ardea/wasm-sdk/go/ardeatest"
)

// counterSpout emits the integers 1..limit, one per Next, with message ids.
type counterSpout struct {
	ardea.BaseSpout
	ctx     *ardea.Context
	c       *ardea.SpoutCollector
	n       int
	limit   int
	calls   int
	active  bool
	acked   []uint64
	replays []uint64
}

func (s *counterSpout) Open(ctx *ardea.Context) error {
	s.ctx, s.active = ctx, true
	return nil
}

func (s *counterSpout) Next(c *ardea.SpoutCollector) (ardea.Status, error) {
	s.c = c
	s.calls++
	if s.n >= s.limit {
		return ardea.Done, nil
	}
	if s.n == 3 && s.calls == 4 { // pretend the source has nothing right now, once
		return ardea.Idle, nil
	}
	s.n++
	c.EmitWithID(uint64(s.n), "w", s.n)
	return ardea.More, nil
}

func (s *counterSpout) Ack(id uint64) { s.acked = append(s.acked, id) }

// Fail replays at once through the collector kept from Next.
func (s *counterSpout) Fail(id uint64) {
	s.replays = append(s.replays, id)
	s.c.EmitWithID(id, "replay", int64(id))
}

func (s *counterSpout) Activate()   { s.active = true }
func (s *counterSpout) Deactivate() { s.active = false }

func TestSpoutNextLoop(t *testing.T) {
	s := &counterSpout{limit: 5}
	x := ardeatest.NewSpout(t, s, ardeatest.Task{}, ardea.Emits("default", "word", "count"))
	// max 2: Next is called until two tuples are out, in one call.
	if st, err := x.Next(2); err != nil || st != ardea.More || s.calls != 2 || len(x.AllEmits()) != 2 {
		t.Fatalf("Next(2) = %v, %v: calls %d, emits %v", st, err, s.calls, x.AllEmits())
	}
	// max 10: one more tuple, then Idle ends the call.
	if st, err := x.Next(10); err != nil || st != ardea.Idle || s.calls != 4 || len(x.AllEmits()) != 3 {
		t.Fatalf("Next(10) = %v, %v: calls %d, emits %v", st, err, s.calls, x.AllEmits())
	}
	if st, err := x.Next(10); err != nil || st != ardea.Done {
		t.Fatalf("Next = %v, %v", st, err)
	}
	if e := x.Emits("default"); len(e) != 5 || e[4].MsgID != 5 || e[4].Values[0] != "w" || e[4].Values[1] != int64(5) {
		t.Fatalf("emits %v", e)
	}
	// Done is final: Next is not called again.
	calls := s.calls
	if st, err := x.Next(10); err != nil || st != ardea.Done || s.calls != calls {
		t.Errorf("Next after Done = %v, %v; Next called %d more times", st, err, s.calls-calls)
	}
	// Ack and Fail get the ids; Fail may emit (replay).
	x.Clear()
	if err := x.Ack(1, 2); err != nil {
		t.Fatal(err)
	}
	if err := x.Fail(3); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.acked, []uint64{1, 2}) || !slices.Equal(s.replays, []uint64{3}) {
		t.Errorf("acked %v replays %v", s.acked, s.replays)
	}
	if e := x.AllEmits(); len(e) != 1 || e[0].MsgID != 3 || e[0].Values[0] != "replay" {
		t.Errorf("replay emits %v", e)
	}
	// Activate/Deactivate may not emit.
	if err := x.Deactivate(); err != nil || s.active {
		t.Errorf("deactivate: %v, active %v", err, s.active)
	}
	if err := x.Activate(); err != nil || !s.active {
		t.Errorf("activate: %v, active %v", err, s.active)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
}
