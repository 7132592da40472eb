package host

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// MemoryState is a task's host-side state held in memory (ABI v1 "State"),
// partitioned into key groups: a key lives in group
// tuple.KeyGroup(tuple.StateKeyHash(key), maxKeyGroups), so state keyed by a
// grouping field's payload (optionally + 0x1F + suffix) lives in the group
// its tuples are routed to. Whole groups can be exported and imported to move
// them to another task when a component is rescaled.
//
// Concurrency: every method takes the state's mutex, so an inspection API
// may call KeyGroups, ExportGroup and Len while the task runs. The slices
// that Get returns and that Scan passes to its callback alias the stored
// value: they are valid until the next Put or Delete of that key (a Put of
// a value that fits is done in place, so updating a counter allocates
// nothing) and are meant for the task's own goroutine; other goroutines
// should read copies through ExportGroup.
type MemoryState struct {
	mu     sync.Mutex
	max    int
	groups []map[string][]byte // index = key group; nil until used
	n      int
	// size is the bytes held: the sum of len(key)+len(value) over every
	// key (what state.max.bytes bounds; map and slice overhead not counted).
	size int64
	// The undo log (Mark, UndoTo, Release): while depth > 0, every write
	// appends the key and its previous value (undoBuf) and an entry
	// (undo); undoing replays the entries backwards. Reused from call to
	// call, so a write costs two copies and no allocation.
	undo    []undoEntry
	undoBuf []byte
	depth   int
	txMark  int // Begin's mark
}

// undoEntry is one write to undo: the key is undoBuf[k:v], its previous
// value undoBuf[v:end] (absent: the key did not exist).
type undoEntry struct {
	k, v, end int
	present   bool
}

var _ plugin.State = (*MemoryState)(nil)

// NewMemoryState returns an empty state with maxKeyGroups key groups
// (tuple.DefaultMaxKeyGroups if <= 0).
func NewMemoryState(maxKeyGroups int) *MemoryState {
	if maxKeyGroups <= 0 {
		maxKeyGroups = tuple.DefaultMaxKeyGroups
	}
	return &MemoryState{max: maxKeyGroups, groups: make([]map[string][]byte, maxKeyGroups)}
}

// maxKeyGroups is the number of key groups keys are hashed into.
func (s *MemoryState) maxKeyGroups() int { return s.max }

// keyGroupOf is the key group a key belongs to.
func (s *MemoryState) keyGroupOf(key []byte) int {
	return tuple.KeyGroup(tuple.StateKeyHash(key), s.max)
}

// Get returns the value of key; see the type's doc for how long it stays
// valid.
func (s *MemoryState) Get(key []byte) ([]byte, bool) {
	kg := s.keyGroupOf(key)
	s.mu.Lock()
	v, ok := s.groups[kg][string(key)]
	s.mu.Unlock()
	return v, ok
}

// Put stores a copy of value under key.
func (s *MemoryState) Put(key, value []byte) {
	s.PutWithin(key, value, math.MaxInt64)
}

// PutWithin stores a copy of value under key unless that would make the
// state hold more than limit bytes (Bytes) and more than it holds now: a
// write that does not grow the state is always done, so a state already
// over a lowered limit can still shrink. It returns the bytes the state
// holds (or would hold, when refused) after the write and whether it was
// done, at the cost of one Put.
func (s *MemoryState) PutWithin(key, value []byte, limit int64) (int64, bool) {
	kg := s.keyGroupOf(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[kg]
	old, ok := g[string(key)]
	after := s.size + int64(len(value))
	if ok {
		after -= int64(len(old))
	} else {
		after += int64(len(key))
	}
	if after > limit && after > s.size {
		return after, false
	}
	s.size = after
	if g == nil {
		g = map[string][]byte{}
		s.groups[kg] = g
	}
	if s.depth > 0 {
		s.record(key, old, ok)
	}
	switch {
	case ok && len(old) == len(value):
		copy(old, value) // in place: no allocation, no map write
	case ok && cap(old) >= len(value):
		g[string(key)] = append(old[:0], value...)
	default:
		if !ok {
			s.n++
		}
		g[string(key)] = bytes.Clone(value)
	}
	return after, true
}

// Bytes is what the state holds: the sum of len(key)+len(value) over
// every key (state.max.bytes bounds it for a wasm instance's writes).
func (s *MemoryState) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.size
}

// Delete removes key.
func (s *MemoryState) Delete(key []byte) {
	kg := s.keyGroupOf(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[kg]
	if old, ok := g[string(key)]; ok {
		if s.depth > 0 {
			s.record(key, old, true)
		}
		delete(g, string(key))
		s.n--
		s.size -= int64(len(key) + len(old))
	}
}

// record appends key's value before a write to the undo log; s.mu must
// be held.
func (s *MemoryState) record(key, old []byte, ok bool) {
	k := len(s.undoBuf)
	s.undoBuf = append(s.undoBuf, key...)
	v := len(s.undoBuf)
	if ok {
		s.undoBuf = append(s.undoBuf, old...)
	}
	s.undo = append(s.undo, undoEntry{k: k, v: v, end: len(s.undoBuf), present: ok})
}

// Mark opens an undo scope: the writes from now on can be undone with
// UndoTo(mark) until the matching Release. Scopes nest (a batch on
// probation holds a transaction, and each of its calls a scope of its
// own). One goroutine at a time: the task's.
func (s *MemoryState) Mark() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.depth++
	return len(s.undo)
}

// UndoTo undoes the writes since mark, newest first (the scope stays
// open).
func (s *MemoryState) UndoTo(mark int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if mark >= len(s.undo) {
		return
	}
	depth := s.depth
	s.depth = 0 // the undoing writes are not logged
	for i := len(s.undo) - 1; i >= mark; i-- {
		e := s.undo[i]
		key := s.undoBuf[e.k:e.v]
		if e.present {
			s.putLocked(key, s.undoBuf[e.v:e.end])
		} else {
			s.deleteLocked(key)
		}
	}
	s.depth = depth
	s.undoBuf = s.undoBuf[:s.undo[mark].k]
	s.undo = s.undo[:mark]
}

// Release closes the scope Mark opened; the outermost one forgets the
// log (its writes stay).
func (s *MemoryState) Release(mark int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.depth > 0 {
		s.depth--
	}
	if s.depth == 0 {
		s.undo = s.undo[:0]
		if cap(s.undoBuf) > maxIdleUndo {
			s.undoBuf = nil // one huge batch of writes: do not keep its copy
		}
		s.undoBuf = s.undoBuf[:0]
	}
}

// maxIdleUndo bounds the undo buffer kept between calls.
const maxIdleUndo = 4 << 20

// putLocked stores value under key, unbounded and unlogged unless the
// log is on; s.mu must be held.
func (s *MemoryState) putLocked(key, value []byte) {
	kg := s.keyGroupOf(key)
	g := s.groups[kg]
	if g == nil {
		g = map[string][]byte{}
		s.groups[kg] = g
	}
	old, ok := g[string(key)]
	if ok {
		s.size += int64(len(value) - len(old))
	} else {
		s.size += int64(len(key) + len(value))
		s.n++
	}
	g[string(key)] = bytes.Clone(value)
}

// deleteLocked removes key; s.mu must be held.
func (s *MemoryState) deleteLocked(key []byte) {
	g := s.groups[s.keyGroupOf(key)]
	if old, ok := g[string(key)]; ok {
		delete(g, string(key))
		s.n--
		s.size -= int64(len(key) + len(old))
	}
}

// Begin starts a transaction: the writes until Commit or Rollback can be
// undone (a swapped-in module on probation: a batch it fails on leaves the
// state as it was). One at a time, from the task's goroutine; it nests
// with Mark's scopes.
func (s *MemoryState) Begin() { s.txMark = s.Mark() }

// Commit keeps the transaction's writes.
func (s *MemoryState) Commit() { s.Release(s.txMark) }

// Rollback undoes the transaction's writes.
func (s *MemoryState) Rollback() {
	s.UndoTo(s.txMark)
	s.Release(s.txMark)
}

type kv struct {
	k string
	v []byte
}

// Scan calls fn for every key with the prefix, in ascending key order
// across all key groups, until fn returns false. It collects the matches
// first and calls fn without holding the mutex, so fn may use the state;
// key is a fresh copy, value aliases the stored value.
func (s *MemoryState) Scan(prefix []byte, fn func(key, value []byte) bool) {
	var hits []kv
	s.mu.Lock()
	for _, g := range s.groups {
		for k, v := range g {
			if len(k) >= len(prefix) && k[:len(prefix)] == string(prefix) {
				hits = append(hits, kv{k, v})
			}
		}
	}
	s.mu.Unlock()
	sort.Slice(hits, func(i, j int) bool { return hits[i].k < hits[j].k })
	for _, h := range hits {
		if !fn([]byte(h.k), h.v) {
			return
		}
	}
}

// Len is the number of keys.
func (s *MemoryState) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// KeyGroups lists the key groups that hold at least one key, ascending.
func (s *MemoryState) KeyGroups() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for kg, g := range s.groups {
		if len(g) > 0 {
			out = append(out, kg)
		}
	}
	return out
}

// ExportGroup returns a copy of key group kg (empty if it holds nothing or
// kg is out of range).
func (s *MemoryState) ExportGroup(kg int) map[string][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]byte{}
	if kg < 0 || kg >= s.max {
		return out
	}
	for k, v := range s.groups[kg] {
		out[k] = bytes.Clone(v)
	}
	return out
}

// ImportGroup replaces key group kg with a copy of m. Every key of m must
// belong to kg (the groups of both states must have the same count); on
// error nothing changes.
func (s *MemoryState) ImportGroup(kg int, m map[string][]byte) error {
	if kg < 0 || kg >= s.max {
		return fmt.Errorf("host: state: key group %d out of range [0, %d)", kg, s.max)
	}
	g := make(map[string][]byte, len(m))
	var size int64
	for k, v := range m {
		if got := s.keyGroupOf([]byte(k)); got != kg {
			return fmt.Errorf("host: state: key %q belongs to key group %d, not %d", k, got, kg)
		}
		g[k] = bytes.Clone(v)
		size += int64(len(k) + len(v))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n += len(g) - len(s.groups[kg])
	for k, v := range s.groups[kg] {
		size -= int64(len(k) + len(v))
	}
	s.size += size
	if len(g) == 0 {
		g = nil
	}
	s.groups[kg] = g
	return nil
}

// Keys lists every key in ascending order (for tests and inspection).
func (s *MemoryState) Keys() []string {
	s.mu.Lock()
	var out []string
	for _, g := range s.groups {
		for k := range g {
			out = append(out, k)
		}
	}
	s.mu.Unlock()
	slices.Sort(out)
	return out
}
