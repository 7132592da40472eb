package acker

import "math/bits"

// idMap maps nonzero uint64 ids (tuple ids, root keys) to values: the
// per-tuple bookkeeping of at-least-once delivery, where a Go map's
// hashing and probing was about a seventh of the CPU of a word count
// (docs/performance.md, "Delivery modes"). Open addressing with linear
// probing in one array of slots, kept at most half full; a slot with key 0
// is empty (0 is never an id: it means "not tracked"). Keys are spread by
// a multiplication (Fibonacci hashing), which random ids do not need but
// sequential ones (tests, replays) do. Deletion shifts the following
// entries of the cluster back, so there are no tombstones and a lookup
// stops at the first empty slot.
//
// An idMap is not safe for concurrent use. The zero value is an empty map.
type idMap[V any] struct {
	slots []idSlot[V] // len is a power of two, or 0
	n     int
	shift uint8 // 64 - log2(len(slots))
}

type idSlot[V any] struct {
	key uint64
	val V
}

const idMapMinSlots = 16

// home is key's first slot.
func (m *idMap[V]) home(key uint64) int {
	return int((key * 0x9E3779B97F4A7C15) >> m.shift)
}

// get returns key's value and whether key is present.
func (m *idMap[V]) get(key uint64) (v V, ok bool) {
	if m.n == 0 || key == 0 {
		return v, false
	}
	mask := len(m.slots) - 1
	for i := m.home(key); ; i = (i + 1) & mask {
		s := &m.slots[i]
		if s.key == key {
			return s.val, true
		}
		if s.key == 0 {
			return v, false
		}
	}
}

// put sets key's value; key must not be 0.
func (m *idMap[V]) put(key uint64, v V) {
	if key == 0 {
		panic("acker: idMap key 0")
	}
	if 2*(m.n+1) > len(m.slots) {
		m.grow()
	}
	mask := len(m.slots) - 1
	for i := m.home(key); ; i = (i + 1) & mask {
		s := &m.slots[i]
		if s.key == key {
			s.val = v
			return
		}
		if s.key == 0 {
			s.key, s.val = key, v
			m.n++
			return
		}
	}
}

// del removes key and returns its value, if present.
func (m *idMap[V]) del(key uint64) (v V, ok bool) {
	if m.n == 0 || key == 0 {
		return v, false
	}
	mask := len(m.slots) - 1
	i := m.home(key)
	for ; m.slots[i].key != key; i = (i + 1) & mask {
		if m.slots[i].key == 0 {
			return v, false
		}
	}
	v = m.slots[i].val
	// Backward shift: move each later entry of the cluster whose home is
	// not in (i, j] into the hole, until an empty slot.
	for j := (i + 1) & mask; m.slots[j].key != 0; j = (j + 1) & mask {
		h := m.home(m.slots[j].key)
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			m.slots[i] = m.slots[j]
			i = j
		}
	}
	m.slots[i] = idSlot[V]{}
	m.n--
	return v, true
}

// len is the number of keys.
func (m *idMap[V]) len() int { return m.n }

// appendKeys appends every key, in slot order, to dst.
func (m *idMap[V]) appendKeys(dst []uint64) []uint64 {
	for i := range m.slots {
		if k := m.slots[i].key; k != 0 {
			dst = append(dst, k)
		}
	}
	return dst
}

func (m *idMap[V]) grow() {
	size := max(2*len(m.slots), idMapMinSlots)
	old := m.slots
	m.slots = make([]idSlot[V], size)
	m.shift = uint8(64 - bits.TrailingZeros(uint(size)))
	m.n = 0
	for i := range old {
		if old[i].key != 0 {
			m.put(old[i].key, old[i].val)
		}
	}
}
