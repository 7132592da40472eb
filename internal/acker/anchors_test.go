package acker

import (
	"encoding/binary"
	"errors"
	"testing"
)

func TestAnchorsReceiveRefuses(t *testing.T) {
	a := NewAnchors(seeded(4))
	if err := a.Receive(0, nil); err != nil {
		t.Fatalf("untracked tuple: %v", err)
	}
	if err := a.Receive(5, nil); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("tracked tuple without roots: %v", err)
	}
	if err := a.Receive(5, []RootID{{1, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := a.Receive(5, []RootID{{1, 2}}); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("id in flight: %v", err)
	}
	if a.Len() != 1 || !a.InFlight(5) || a.InFlight(0) {
		t.Fatalf("len %d", a.Len())
	}
}

// TestAnchorsAckValue checks the ack value against the XOR scheme by hand:
// an input with two roots, two anchored emits, one shared with another input.
func TestAnchorsAckValue(t *testing.T) {
	a := NewAnchors(seeded(5))
	r1, r2, r3 := RootID{1, 11}, RootID{1, 12}, RootID{2, 13}
	roots := []RootID{r1, r2, r1} // the duplicate is dropped
	if err := a.Receive(100, roots); err != nil {
		t.Fatal(err)
	}
	roots[0] = RootID{9, 9} // Receive copied them
	if err := a.Receive(200, []RootID{r2, r3}); err != nil {
		t.Fatal(err)
	}
	e1, got := a.Emit([]uint64{100})
	if e1 == 0 || len(got) != 2 || got[0] != r1 || got[1] != r2 {
		t.Fatalf("emit on 100: %x %v", e1, got)
	}
	var le []byte
	le = binary.LittleEndian.AppendUint64(le, 200)
	le = binary.LittleEndian.AppendUint64(le, 100)
	e2, got := a.EmitLE(le)
	if e2 == 0 || e2 == e1 || len(got) != 3 || got[0] != r2 || got[1] != r3 || got[2] != r1 {
		t.Fatalf("emit on 200,100: %x %v", e2, got)
	}
	// Input 100: r1 has e1 and e2 (e2 charged to 100 for r1 only), r2 has e1.
	// Input 200: r2 and r3 have e2.
	want := map[uint64][]RootUpdate{
		100: {{r1, 100 ^ e1 ^ e2}, {r2, 100 ^ e1}},
		200: {{r2, 200 ^ e2}, {r3, 200 ^ e2}},
	}
	for id, w := range want {
		ups := a.Ack(id)
		if len(ups) != len(w) {
			t.Fatalf("ack %d: %v, want %v", id, ups, w)
		}
		for i := range w {
			if ups[i] != w[i] {
				t.Fatalf("ack %d: %v, want %v", id, ups, w)
			}
		}
	}
	if s := a.Stats(); s != (AnchorsStats{Received: 2, Emitted: 2, Acked: 2}) {
		t.Fatalf("stats %+v", s)
	}
}

func TestAnchorsFailAndReuse(t *testing.T) {
	a := NewAnchors(seeded(6))
	many := []RootID{{1, 1}, {1, 2}, {1, 3}}
	for round := range 3 {
		if err := a.Receive(7, many); err != nil {
			t.Fatal(err)
		}
		if err := a.Receive(8, many[:1]); err != nil {
			t.Fatal(err)
		}
		if got := a.Fail(7); len(got) != 3 || got[2] != many[2] {
			t.Fatalf("round %d: fail: %v", round, got)
		}
		if got := a.Fail(7); got != nil {
			t.Fatalf("round %d: second fail: %v", round, got)
		}
		if ups := a.Ack(8); len(ups) != 1 || ups[0] != (RootUpdate{many[0], 8}) {
			t.Fatalf("round %d: ack: %v", round, ups)
		}
	}
	if s := a.Stats(); s.Failed != 3 || s.Acked != 3 || s.UnknownAcks != 3 || s.InFlight != 0 {
		t.Fatalf("stats %+v", s)
	}
}
