package acker

import "testing"

// BenchmarkLedgerStartUpdateComplete: one spout tuple sent to two bolts,
// both copies acked: NewRoot, 2 NewEdge, Start, 2 Update (the second
// completes the tree).
func BenchmarkLedgerStartUpdateComplete(b *testing.B) {
	l := NewLedger(LedgerOptions{Rand: seeded(10)})
	now := t0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		root := l.NewRoot(1)
		e1, e2 := l.NewEdge(), l.NewEdge()
		if _, _, err := l.Start(root, uint64(i), e1^e2, now); err != nil {
			b.Fatal(err)
		}
		l.Update(root, e1, now)
		if _, done := l.Update(root, e2, now); !done {
			b.Fatal("not complete")
		}
	}
}

// BenchmarkLedgerPending100: the same with 100 other trees pending (the
// default max_spout_pending), so the map is not trivially small.
func BenchmarkLedgerPending100(b *testing.B) {
	l := NewLedger(LedgerOptions{Rand: seeded(11)})
	now := t0
	ring := make([]RootID, 100)
	for i := range ring {
		ring[i] = l.NewRoot(1)
		if _, _, err := l.Start(ring[i], 0, 1, now); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		j := i % len(ring)
		if _, done := l.Update(ring[j], 1, now); !done {
			b.Fatal("not complete")
		}
		ring[j] = l.NewRoot(1)
		if _, _, err := l.Start(ring[j], uint64(i), 1, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnchorsEmitAck: a bolt receives a tuple with one root, emits one
// tuple anchored on it and acks it: Receive + Emit + Ack.
func BenchmarkAnchorsEmitAck(b *testing.B) {
	a := NewAnchors(seeded(12))
	roots := []RootID{{1, 42}}
	anchor := []uint64{0}
	b.ReportAllocs()
	for i := uint64(1); b.Loop(); i++ {
		if err := a.Receive(i, roots); err != nil {
			b.Fatal(err)
		}
		anchor[0] = i
		if e, _ := a.Emit(anchor); e == 0 {
			b.Fatal("untracked")
		}
		if len(a.Ack(i)) != 1 {
			b.Fatal("no update")
		}
	}
}

// BenchmarkWire: encode and decode a message of 1024 updates (ns/op per
// message; divide by 1024 for an entry).
func BenchmarkWire(b *testing.B) {
	batch := NewBatch(1)
	var dst []Entry
	b.ReportAllocs()
	b.SetBytes(WireHeaderSize + 1024*WireEntrySize)
	for b.Loop() {
		batch.Reset()
		for i := range uint64(1024) {
			batch.Update(RootID{1, i + 1}, i)
		}
		var err error
		if _, dst, err = DecodeMessage(batch.Bytes(), dst[:0]); err != nil || len(dst) != 1024 {
			b.Fatal(err)
		}
	}
}
