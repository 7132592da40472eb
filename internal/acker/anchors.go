package acker

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// RootUpdate is what an ack sends to the ledger of Root: XOR Xor into the
// tree (wire op OpUpdate).
type RootUpdate struct {
	Root RootID
	Xor  uint64
}

// AnchorsStats are an Anchors' counters since it was created.
type AnchorsStats struct {
	Received uint64 // tracked input tuples registered
	Emitted  uint64 // emits that got an edge (anchored on at least one known input)
	Acked    uint64
	Failed   uint64
	// UnknownAnchors counts nonzero anchor ids in Emit that are not in flight
	// (already acked or failed, or never received): they are ignored, as
	// Storm does, so the new tuple is not part of their trees.
	UnknownAnchors uint64
	// UnknownAcks counts Ack and Fail of nonzero ids that are not in flight
	// (a duplicate ack): ignored, so a tree never hears of an edge twice.
	UnknownAcks uint64
	InFlight    int // input tuples registered and not yet acked or failed
}

// ErrInvalidInput is returned by Receive for a tracked input without roots
// or an id that is already in flight.
var ErrInvalidInput = errors.New("acker: invalid input tuple")

// rootXor is one root of an input tuple and the XOR of the edge ids of the
// tuples emitted anchored on the input that were charged to this root.
type rootXor struct {
	root RootID
	xor  uint64
}

type input struct {
	roots []rootXor
	one   [1]rootXor // backing array for the common single-root case
	more  []rootXor  // backing array for several roots, kept for reuse
}

// Anchors is the input side of one bolt task: for every input tuple in
// flight (received, not yet acked or failed) it keeps the roots that came
// with the tuple and, per root, the XOR of the edge ids of the tuples the
// task emitted anchored on it.
//
// A tuple's edge id is its tuple id. When the input is acked, each of its
// roots gets input id XOR accumulated child edges (Storm: the ack value);
// each child later sends its own edge XOR its children, so the two copies of
// every edge cancel in the root's ledger.
//
// Multi-anchoring: an emit anchored on several inputs gets one edge id and
// the union of their roots. For each root of the union, the edge is charged
// to exactly one of the anchors that carry that root, so a root shared by
// two anchors (a diamond) still hears of the edge exactly twice.
//
// Slices returned by Emit, Ack and Fail belong to the Anchors and stay valid
// only until the next call of any of the three; copy or encode them first.
//
// An Anchors is not safe for concurrent use: drive it from one goroutine or
// under one mutex. Its methods never block.
type Anchors struct {
	rand    Rand
	inputs  idMap[*input]
	free    []*input
	roots   []RootID
	updates []RootUpdate
	stats   AnchorsStats
}

// NewAnchors returns an empty Anchors drawing edge ids from r (nil:
// DefaultRand). Tests pass a seeded source for deterministic ids.
func NewAnchors(r Rand) *Anchors {
	if r == nil {
		r = DefaultRand
	}
	return &Anchors{rand: r}
}

// Receive registers an input tuple with tuple id id and the roots it came
// with (duplicates are dropped; roots is copied). An id of 0 is an untracked
// tuple: nothing is registered. Receive refuses (ErrInvalidInput) a nonzero
// id without roots and an id already in flight.
func (a *Anchors) Receive(id uint64, roots []RootID) error {
	if id == 0 {
		return nil
	}
	if len(roots) == 0 {
		return fmt.Errorf("%w: tuple %016x is tracked but has no roots", ErrInvalidInput, id)
	}
	if _, ok := a.inputs.get(id); ok {
		return fmt.Errorf("%w: tuple %016x is already in flight", ErrInvalidInput, id)
	}
	var in *input
	if n := len(a.free); n > 0 {
		in = a.free[n-1]
		a.free = a.free[:n-1]
	} else {
		in = new(input)
	}
	if len(roots) == 1 {
		in.roots = in.one[:0]
	} else {
		if cap(in.more) < len(roots) {
			in.more = make([]rootXor, 0, len(roots))
		}
		in.roots = in.more[:0]
	}
next:
	for _, r := range roots {
		for _, have := range in.roots {
			if have.root == r {
				continue next
			}
		}
		in.roots = append(in.roots, rootXor{root: r})
	}
	a.inputs.put(id, in)
	a.stats.Received++
	return nil
}

// Emit is called for every tuple the task emits anchored on anchorIDs, once
// per copy (destination task): each copy is an edge of its own. It returns
// the copy's edge id (its tuple id) and its roots, the union of the
// anchors' roots, and charges the edge to the anchors' accumulators.
// Anchors that are 0 or not in flight are ignored; if none is left, the
// tuple is not tracked: edge is 0 and roots is empty.
func (a *Anchors) Emit(anchorIDs []uint64) (edge uint64, roots []RootID) {
	a.roots = a.roots[:0]
	for _, id := range anchorIDs {
		edge = a.charge(id, edge)
	}
	if edge != 0 {
		a.stats.Emitted++
	}
	return edge, a.roots
}

// EmitLE is Emit with the anchors in the ABI's encoding: u64 tuple ids,
// little-endian, as plugin.Collector.Emit receives them. A trailing
// partial id is ignored (the host has validated the op before).
func (a *Anchors) EmitLE(anchors []byte) (edge uint64, roots []RootID) {
	a.roots = a.roots[:0]
	for ; len(anchors) >= 8; anchors = anchors[8:] {
		edge = a.charge(binary.LittleEndian.Uint64(anchors), edge)
	}
	if edge != 0 {
		a.stats.Emitted++
	}
	return edge, a.roots
}

// charge adds the roots of input id that are not yet in a.roots, XORing the
// edge (drawn at the first root) into their accumulators.
func (a *Anchors) charge(id, edge uint64) uint64 {
	if id == 0 {
		return edge
	}
	in, _ := a.inputs.get(id)
	if in == nil {
		a.stats.UnknownAnchors++
		return edge
	}
next:
	for i := range in.roots {
		r := in.roots[i].root
		for _, have := range a.roots {
			if have == r {
				continue next
			}
		}
		if edge == 0 {
			edge = nonZero(a.rand)
		}
		in.roots[i].xor ^= edge
		a.roots = append(a.roots, r)
	}
	return edge
}

// Ack ends input tuple id: it returns one update per root, input id XOR the
// edges charged to that root, for the roots' ledgers. An id of 0 or not in
// flight (a duplicate ack) returns nothing; nonzero ones are counted in
// UnknownAcks.
func (a *Anchors) Ack(id uint64) []RootUpdate {
	in := a.take(id)
	if in == nil {
		return nil
	}
	a.updates = a.updates[:0]
	for _, r := range in.roots {
		a.updates = append(a.updates, RootUpdate{Root: r.root, Xor: id ^ r.xor})
	}
	a.release(in)
	a.stats.Acked++
	return a.updates
}

// Fail ends input tuple id as failed: it returns its roots, each to be
// failed in its ledger. An id of 0 or not in flight returns nothing, as in
// Ack.
func (a *Anchors) Fail(id uint64) []RootID {
	in := a.take(id)
	if in == nil {
		return nil
	}
	a.roots = a.roots[:0]
	for _, r := range in.roots {
		a.roots = append(a.roots, r.root)
	}
	a.release(in)
	a.stats.Failed++
	return a.roots
}

func (a *Anchors) take(id uint64) *input {
	if id == 0 {
		return nil
	}
	in, _ := a.inputs.del(id)
	if in == nil {
		a.stats.UnknownAcks++
		return nil
	}
	return in
}

func (a *Anchors) release(in *input) {
	in.roots = in.roots[:0]
	a.free = append(a.free, in)
}

// InFlight reports whether input tuple id is registered and not yet acked
// or failed.
func (a *Anchors) InFlight(id uint64) bool { _, ok := a.inputs.get(id); return ok }

// Len returns the number of input tuples in flight.
func (a *Anchors) Len() int { return a.inputs.len() }

// Stats returns the counters.
func (a *Anchors) Stats() AnchorsStats {
	s := a.stats
	s.InFlight = a.inputs.len()
	return s
}
