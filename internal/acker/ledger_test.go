package acker

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// sim drives a Ledger and the Anchors of named bolt tasks the way the stream
// managers will, applying every update to the ledger at once.
type sim struct {
	t       *testing.T
	l       *Ledger
	rnd     *rand.Rand
	bolts   map[string]*Anchors
	now     time.Time
	results []Result
}

// tup is a tuple on its way to a bolt: its tuple id (edge) and roots.
type tup struct {
	id    uint64
	roots []RootID
}

func newSim(t *testing.T, o LedgerOptions) *sim {
	r := seeded(1)
	if o.Rand == nil {
		o.Rand = r
	}
	return &sim{t: t, l: NewLedger(o), rnd: r, bolts: map[string]*Anchors{}, now: t0}
}

func (s *sim) bolt(name string) *Anchors {
	a := s.bolts[name]
	if a == nil {
		a = NewAnchors(s.rnd)
		s.bolts[name] = a
	}
	return a
}

// spout emits msgID from spout task 1 as copies tuples and starts its tree.
func (s *sim) spout(msgID uint64, copies int) (RootID, []tup) {
	s.t.Helper()
	root := s.l.NewRoot(1)
	var xor uint64
	var out []tup
	for range copies {
		e := s.l.NewEdge()
		xor ^= e
		out = append(out, tup{id: e, roots: []RootID{root}})
	}
	r, done, err := s.l.Start(root, msgID, xor, s.now)
	if err != nil {
		s.t.Fatal(err)
	}
	if done {
		s.results = append(s.results, r)
	}
	return root, out
}

func (s *sim) recv(bolt string, in tup) {
	s.t.Helper()
	if err := s.bolt(bolt).Receive(in.id, in.roots); err != nil {
		s.t.Fatal(err)
	}
}

func (s *sim) emit(bolt string, anchors ...uint64) tup {
	e, roots := s.bolt(bolt).Emit(anchors)
	return tup{id: e, roots: append([]RootID(nil), roots...)}
}

func (s *sim) ack(bolt string, id uint64) {
	for _, u := range s.bolt(bolt).Ack(id) {
		if r, done := s.l.Update(u.Root, u.Xor, s.now); done {
			s.results = append(s.results, r)
		}
	}
}

func (s *sim) fail(bolt string, id uint64) {
	for _, root := range s.bolt(bolt).Fail(id) {
		if r, done := s.l.Fail(root, s.now); done {
			s.results = append(s.results, r)
		}
	}
}

func (s *sim) expire() {
	s.results = s.l.Expire(s.now, s.results)
}

// want checks the results so far (msg id and outcome, in order) and
// forgets them.
func (s *sim) want(step string, want ...Result) {
	s.t.Helper()
	if len(s.results) != len(want) {
		s.t.Fatalf("%s: results %+v, want %+v", step, s.results, want)
	}
	for i, w := range want {
		g := s.results[i]
		if g.MsgID != w.MsgID || g.Outcome != w.Outcome {
			s.t.Fatalf("%s: result %d is %+v, want msg %d %v", step, i, g, w.MsgID, w.Outcome)
		}
	}
	s.results = nil
}

func res(msgID uint64, o Outcome) Result { return Result{MsgID: msgID, Outcome: o} }

func TestTreeCompletion(t *testing.T) {
	tests := []struct {
		name  string
		run   func(s *sim)
		stats LedgerStats
	}{
		{"spout tuple with no destination completes at Start", func(s *sim) {
			s.spout(7, 0)
			s.want("start", res(7, Acked))
		}, LedgerStats{Started: 1, Acked: 1}},
		{"linear chain", func(s *sim) {
			_, c := s.spout(1, 1)
			s.recv("a", c[0])
			x := s.emit("a", c[0].id)
			s.recv("b", x)
			s.ack("a", c[0].id)
			y := s.emit("b", x.id)
			s.recv("c", y)
			s.ack("b", x.id)
			s.want("before the last ack")
			s.ack("c", y.id)
			s.want("last ack", res(1, Acked))
		}, LedgerStats{Started: 1, Acked: 1}},
		{"fan-out: three copies, two children each", func(s *sim) {
			_, cs := s.spout(2, 3)
			var kids []tup
			for i, c := range cs {
				b := string(rune('a' + i))
				s.recv(b, c)
				kids = append(kids, s.emit(b, c.id), s.emit(b, c.id))
				s.ack(b, c.id)
			}
			for i, k := range kids {
				s.want("before the last child")
				s.recv("sink", k)
				s.ack("sink", k.id)
				if i == len(kids)-2 {
					s.want("all but one child acked")
				}
			}
			s.want("every child acked", res(2, Acked))
		}, LedgerStats{Started: 1, Acked: 1}},
		{"diamond: one emit anchored on two tuples of the same tree", func(s *sim) {
			_, cs := s.spout(3, 2)
			s.recv("a", cs[0])
			s.recv("b", cs[1])
			x, y := s.emit("a", cs[0].id), s.emit("b", cs[1].id)
			s.ack("a", cs[0].id)
			s.ack("b", cs[1].id)
			s.recv("join", x)
			s.recv("join", y)
			j := s.emit("join", x.id, y.id)
			if len(j.roots) != 1 {
				s.t.Fatalf("join roots %v, want the one shared root", j.roots)
			}
			s.ack("join", x.id)
			s.ack("join", y.id)
			s.want("join acked its inputs, its output is pending")
			s.recv("sink", j)
			s.ack("sink", j.id)
			s.want("output acked", res(3, Acked))
		}, LedgerStats{Started: 1, Acked: 1}},
		{"multi-anchoring across two trees", func(s *sim) {
			_, c1 := s.spout(4, 1)
			_, c2 := s.spout(5, 1)
			s.recv("join", c1[0])
			s.recv("join", c2[0])
			j := s.emit("join", c1[0].id, c2[0].id, c1[0].id)
			if len(j.roots) != 2 {
				s.t.Fatalf("join roots %v, want both roots once", j.roots)
			}
			s.ack("join", c2[0].id)
			s.ack("join", c1[0].id)
			s.recv("sink", j)
			s.want("output pending")
			s.ack("sink", j.id)
			s.want("output acked", res(4, Acked), res(5, Acked))
		}, LedgerStats{Started: 2, Acked: 2}},
		{"a bolt fails a tuple; the other edges' acks come late", func(s *sim) {
			_, cs := s.spout(6, 2)
			s.recv("a", cs[0])
			s.recv("b", cs[1])
			x := s.emit("a", cs[0].id)
			s.ack("a", cs[0].id)
			s.fail("b", cs[1].id)
			s.want("fail", res(6, Failed))
			s.recv("c", x)
			s.ack("c", x.id)
			s.want("late ack after the failure")
		}, LedgerStats{Started: 1, Failed: 1, Unknown: 1}},
		{"timeout, then a late ack", func(s *sim) {
			_, cs := s.spout(7, 1)
			s.recv("a", cs[0])
			s.expire()
			s.now = s.now.Add(10 * time.Second)
			s.expire()
			s.want("before the timeout")
			s.now = s.now.Add(time.Minute)
			s.expire()
			s.want("after the timeout", res(7, TimedOut))
			s.ack("a", cs[0].id)
			s.want("late ack")
		}, LedgerStats{Started: 1, TimedOut: 1, Unknown: 1}},
		{"duplicate ack", func(s *sim) {
			_, cs := s.spout(8, 2)
			s.recv("a", cs[0])
			s.recv("b", cs[1])
			s.ack("a", cs[0].id)
			s.ack("a", cs[0].id) // must not cancel the first
			s.want("one copy acked twice")
			if got := s.bolt("a").Stats().UnknownAcks; got != 1 {
				s.t.Fatalf("UnknownAcks %d, want 1", got)
			}
			s.ack("b", cs[1].id)
			s.want("both copies acked", res(8, Acked))
			s.ack("b", cs[1].id)
			s.want("ack after completion")
		}, LedgerStats{Started: 1, Acked: 1}},
		{"unanchored emit is not tracked", func(s *sim) {
			_, cs := s.spout(9, 1)
			s.recv("a", cs[0])
			x := s.emit("a")
			y := s.emit("a", 12345) // not in flight
			if x.id != 0 || len(x.roots) != 0 || y.id != 0 || len(y.roots) != 0 {
				s.t.Fatalf("unanchored emits %+v %+v, want untracked", x, y)
			}
			s.ack("a", cs[0].id)
			s.want("ack", res(9, Acked))
			s.ack("a", 0)
		}, LedgerStats{Started: 1, Acked: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, LedgerOptions{Timeout: 30 * time.Second})
			tc.run(s)
			s.want("end")
			if got := s.l.Stats(); got != tc.stats {
				t.Fatalf("stats %+v, want %+v", got, tc.stats)
			}
			if s.l.Len() != 0 || s.l.Pending(1) != 0 {
				t.Fatalf("%d trees still pending", s.l.Len())
			}
		})
	}
}

func TestLedgerStartRefuses(t *testing.T) {
	l := NewLedger(LedgerOptions{})
	for _, root := range []RootID{{0, 1}, {1, 0}} {
		if _, _, err := l.Start(root, 1, 5, t0); !errors.Is(err, ErrInvalidRoot) {
			t.Errorf("Start(%v): %v, want ErrInvalidRoot", root, err)
		}
	}
	root := RootID{1, 99}
	if _, _, err := l.Start(root, 1, 5, t0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Start(root, 2, 6, t0); !errors.Is(err, ErrInvalidRoot) {
		t.Errorf("second Start of %v: %v, want ErrInvalidRoot", root, err)
	}
	if l.Pending(1) != 1 {
		t.Errorf("pending %d, want 1", l.Pending(1))
	}
}

func TestLedgerLatencyAndResult(t *testing.T) {
	l := NewLedger(LedgerOptions{})
	root := RootID{3, 42}
	if _, _, err := l.Start(root, 77, 0xF0, t0); err != nil {
		t.Fatal(err)
	}
	if _, done := l.Update(root, 0x0F, t0.Add(time.Millisecond)); done {
		t.Fatal("complete too early")
	}
	r, done := l.Update(root, 0xFF, t0.Add(5*time.Millisecond))
	want := Result{Root: root, MsgID: 77, Outcome: Acked, Latency: 5 * time.Millisecond}
	if !done || r != want {
		t.Fatalf("Update: %+v %v, want %+v", r, done, want)
	}
}

func TestMaxSpoutPending(t *testing.T) {
	l := NewLedger(LedgerOptions{MaxPending: 2, Rand: seeded(2)})
	if got := l.Available(1); got != 2 {
		t.Fatalf("Available %d, want 2", got)
	}
	var roots []RootID
	for i := range 3 {
		root := l.NewRoot(1)
		if _, _, err := l.Start(root, uint64(i+1), 1, t0); err != nil {
			t.Fatal(err)
		}
		roots = append(roots, root)
	}
	// The stream manager asks for at most Available, so a third tuple can
	// only come from a spout emitting more than it was asked for; it is
	// tracked anyway and the spout is not asked again until pending drops.
	if l.Pending(1) != 3 || l.Available(1) != 0 || l.Available(2) != 2 {
		t.Fatalf("pending %d available %d/%d, want 3 0 2", l.Pending(1), l.Available(1), l.Available(2))
	}
	l.Update(roots[0], 1, t0)
	l.Fail(roots[1], t0)
	if l.Pending(1) != 1 || l.Available(1) != 1 {
		t.Fatalf("pending %d available %d, want 1 1", l.Pending(1), l.Available(1))
	}
	if got := NewLedger(LedgerOptions{MaxPending: -1}).Available(1); got != math.MaxInt {
		t.Fatalf("unlimited Available %d", got)
	}
}

// TestTimeoutBounds checks that with Expire called every tick, every tree
// times out between Timeout and Timeout*(1+1/Buckets) (+ one tick) after
// its Start, never earlier, whatever its phase against the rotations.
func TestTimeoutBounds(t *testing.T) {
	const (
		timeout = 40 * time.Second
		buckets = 4
		tick    = 250 * time.Millisecond
	)
	l := NewLedger(LedgerOptions{Timeout: timeout, Buckets: buckets, MaxPending: -1, Rand: seeded(3)})
	started := map[RootID]time.Time{}
	now := t0
	var out []Result
	for step := range 1200 { // 300 s
		if step < 600 && step%3 == 0 {
			root := l.NewRoot(1)
			if _, _, err := l.Start(root, uint64(step), 1, now); err != nil {
				t.Fatal(err)
			}
			started[root] = now
		}
		out = l.Expire(now, out[:0])
		for _, r := range out {
			if r.Outcome != TimedOut {
				t.Fatalf("outcome %v", r.Outcome)
			}
			age := now.Sub(started[r.Root])
			if age != r.Latency {
				t.Fatalf("latency %v, age %v", r.Latency, age)
			}
			if age < timeout || age > timeout+timeout/buckets+tick {
				t.Fatalf("tree started at +%v timed out after %v, want [%v, %v]", started[r.Root].Sub(t0), age, timeout, timeout+timeout/buckets+tick)
			}
			delete(started, r.Root)
		}
		now = now.Add(tick)
	}
	if len(started) != 0 || l.Len() != 0 {
		t.Fatalf("%d trees never timed out", len(started))
	}
	if s := l.Stats(); s.TimedOut != 200 || s.Started != 200 {
		t.Fatalf("stats %+v", s)
	}
}

// TestTimeoutNeverEarlyWhenExpireLags: a caller that did not call Expire
// for a long time must not time out a tree started just before.
func TestTimeoutNeverEarlyWhenExpireLags(t *testing.T) {
	const timeout = 10 * time.Second
	l := NewLedger(LedgerOptions{Timeout: timeout, Buckets: 2})
	old, young := RootID{1, 1}, RootID{1, 2}
	if _, _, err := l.Start(old, 1, 1, t0); err != nil {
		t.Fatal(err)
	}
	late := t0.Add(time.Hour)
	if _, _, err := l.Start(young, 2, 1, late); err != nil {
		t.Fatal(err)
	}
	out := l.Expire(late.Add(time.Second), nil)
	if len(out) != 1 || out[0].Root != old {
		t.Fatalf("after the lag: %+v, want only the old tree", out)
	}
	for now := late.Add(time.Second); now.Before(late.Add(timeout)); now = now.Add(time.Second) {
		if out := l.Expire(now, nil); len(out) != 0 {
			t.Fatalf("at +%v after its start: %+v timed out early", now.Sub(late), out)
		}
	}
	for now := late.Add(timeout); l.Len() > 0; now = now.Add(time.Second) {
		if now.Sub(late) > 2*timeout {
			t.Fatal("young tree never timed out")
		}
		out = l.Expire(now, out[:0])
	}
	if out[0].Root != young || out[0].Latency < timeout {
		t.Fatalf("%+v", out)
	}
}

func TestExpireOrdersOldestFirst(t *testing.T) {
	l := NewLedger(LedgerOptions{Timeout: time.Second, Buckets: 1})
	for i := range 5 {
		if _, _, err := l.Start(RootID{1, uint64(10 - i)}, uint64(i), 1, t0.Add(time.Duration(i)*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	out := l.Expire(t0.Add(time.Hour), nil)
	if len(out) != 5 {
		t.Fatalf("%d results", len(out))
	}
	for i, r := range out {
		if r.MsgID != uint64(i) {
			t.Fatalf("result %d is msg %d", i, r.MsgID)
		}
	}
}

// TestLedgerZeroNowReadsTheClock: an update without a time (the stream
// manager's local acks) completes its tree with the clock's time.
func TestLedgerZeroNowReadsTheClock(t *testing.T) {
	l := NewLedger(LedgerOptions{Rand: seeded(40)})
	root := l.NewRoot(1)
	start := time.Now()
	if _, _, err := l.Start(root, 7, 5, start); err != nil {
		t.Fatal(err)
	}
	if _, done := l.Update(root, 4, time.Time{}); done {
		t.Fatal("completed early")
	}
	r, done := l.Update(root, 1, time.Time{})
	if !done || r.MsgID != 7 || r.Outcome != Acked {
		t.Fatalf("result %+v, %v", r, done)
	}
	if r.Latency < 0 || r.Latency > time.Since(start) {
		t.Errorf("latency %s, want between 0 and %s", r.Latency, time.Since(start))
	}
}
