package acker

import (
	"fmt"
	"math/rand/v2"
)

// RootID names a tuple tree: the spout task that emitted the root tuple and
// a random nonzero key. The spout task also tells the ack traffic which
// container's ledger to go to.
type RootID struct {
	SpoutTask uint32
	Key       uint64
}

func (r RootID) String() string { return fmt.Sprintf("%d/%016x", r.SpoutTask, r.Key) }

// Rand is a source of random 64-bit values. *math/rand/v2.Rand,
// *rand.ChaCha8 and *rand.PCG satisfy it. Ledger and Anchors call it only
// from their own methods, so it needs no locking of its own.
type Rand interface {
	Uint64() uint64
}

// globalRand uses math/rand/v2's goroutine-safe, randomly seeded source.
type globalRand struct{}

func (globalRand) Uint64() uint64 { return rand.Uint64() }

// DefaultRand is the source used when none is given: math/rand/v2's global
// source (ChaCha8, randomly seeded, safe for concurrent use). Ids only need
// to be unlikely to collide, not unpredictable.
var DefaultRand Rand = globalRand{}

// nonZero draws until the value is not 0 (0 means "not tracked").
func nonZero(r Rand) uint64 {
	for {
		if v := r.Uint64(); v != 0 {
			return v
		}
	}
}

// NewID returns a random nonzero id from DefaultRand: a root key or an edge
// id drawn outside a Ledger or Anchors.
func NewID() uint64 { return nonZero(DefaultRand) }
