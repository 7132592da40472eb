package ardea

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"unsafe"
)

// Cache bounds. When an insert would exceed either, the cache writes its
// dirty entries to the host and starts empty.
const (
	DefaultCacheEntries = 1 << 16
	DefaultCacheBytes   = 8 << 20 // keys + values
)

// inlineValue is the largest value the cache stores inside its entry (an
// int64 from PutInt/AddInt fits); longer values get their own slice.
const inlineValue = 16

// maxProbe bounds the cache's hash-table clusters: an insert whose free
// cell is further than this from the key's home cell (only with
// pathological keys) empties the cache first, like an insert over a
// bound.
const maxProbe = 64 // State.maxProbe

// State is the task's key/value state. The host holds it (it survives a
// module restart or swap); the SDK keeps a write-back cache in the guest:
//
//   - Get reads through the cache: a miss asks the host once (state_get)
//     and caches the value, or its absence.
//   - Put and Delete only change the cache and mark the key dirty.
//   - When a lifecycle call (Execute, Next, Tick, Finish, Ack, ...)
//     returns successfully, all dirty entries go to the host in ONE
//     state_write call, before the call's emits. So the host holds the
//     truth at every call boundary, and a batch of N tuples costs one
//     host call for its writes however many keys it touched.
//   - The cache holds at most DefaultCacheEntries entries and
//     DefaultCacheBytes bytes; when an insert would exceed that it first
//     writes the dirty entries (an extra state_write) and then empties.
//   - Scan first writes the dirty entries, then asks the host.
//   - If the call fails (error or panic), its unwritten changes are
//     dropped with the whole cache: the instance fails anyway.
//
// The cache assumes the task is its state's only writer between Prepare
// (or Open) and Close, which is how the host runs a task; it is emptied at
// every Prepare/Open.
//
// Keys are strings (any bytes). Every method has a variant whose name
// ends in Bytes that takes the key as a []byte (for example a view of the
// input from StateKeyView or Tuple.BytesView): it does not allocate for a
// key already in the cache, and the cache never keeps the caller's slice.
// To keep a key's state with the tuples routed by it when the component
// is rescaled, build keys with StateKey, StateKeyView or AppendStateKey.
//
// A value returned by Get is the cache's copy: do not modify it, and do
// not keep it past the next state call.
type State struct {
	r *runtime

	// The cache is a hash table without Go pointers in its hot parts (the
	// garbage collector does not scan them): index is open-addressed
	// (linear probing) with slot number+1 per cell, 0 for empty; its size
	// is a power of two, at least twice the number of slots. Keys are
	// stored back to back in keys; values up to inlineValue bytes inside
	// their slot, longer ones in big.
	index []uint32
	slots []slot
	keys  []byte
	big   [][]byte
	dirty []uint32 // slots with unwritten changes, in first-write order
	seed  uint64
	bytes int // keys + values

	maxEntries int
	maxBytes   int
	maxProbe   int
	vbuf       []byte // state_get
	sbuf       []byte // state_scan
	wbuf       []byte // state_write
}

// slot is one cached key.
type slot struct {
	pre   uint64 // the key's first 8 bytes (see hashKey)
	hash  uint32
	koff  uint32 // key = keys[koff : koff+klen]
	klen  uint32
	vlen  int32 // value length; -1: the key is absent
	big   int32 // 0 or big[big-1] holds the value if vlen > inlineValue
	dirty bool
	inl   [inlineValue]byte
}

func (s *State) init(r *runtime) {
	s.r = r
	s.maxEntries, s.maxBytes, s.maxProbe = DefaultCacheEntries, DefaultCacheBytes, maxProbe
	s.seed = rand.Uint64() | 1
}

// hashKey hashes a key (seeded per instance) and returns its first 8
// bytes packed little-endian, which slots keep to compare short keys
// without reading the key store.
func (s *State) hashKey(k string) (pre uint64, h uint32) {
	n := len(k)
	x := s.seed ^ uint64(n)*0x9e3779b97f4a7c15
	switch {
	case n > 8:
		pre = le64(k)
		for r := k; len(r) > 8; r = r[8:] {
			x = bits.RotateLeft64((x^le64(r))*0x9e3779b97f4a7c15, 29)
		}
		x ^= le64(k[n-8:]) // the last 8 bytes, overlapping
	case n >= 4: // two overlapping 4-byte loads
		pre = uint64(le32(k)) | uint64(le32(k[n-4:]))<<((8*(n-4))&63)
		x ^= pre
	case n > 0:
		pre = uint64(k[0]) | uint64(k[n/2])<<((8*(n/2))&63) | uint64(k[n-1])<<((8*(n-1))&63)
		x ^= pre
	}
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return pre, uint32(x)
}

func le64(k string) uint64 {
	_ = k[7]
	return uint64(k[0]) | uint64(k[1])<<8 | uint64(k[2])<<16 | uint64(k[3])<<24 |
		uint64(k[4])<<32 | uint64(k[5])<<40 | uint64(k[6])<<48 | uint64(k[7])<<56
}

func le32(k string) uint32 {
	_ = k[3]
	return uint32(k[0]) | uint32(k[1])<<8 | uint32(k[2])<<16 | uint32(k[3])<<24
}

// lookup returns the slot number of a key, loading the key from the
// host on a miss.
func (s *State) lookup(k string) int {
	if i, pre, h := s.slotOf(k); i >= 0 {
		return i
	} else {
		return s.miss(k, pre, h)
	}
}

// slotOf is hashKey and find for the hot path: the slot number of a
// cached key, or -1 (then call miss).
func (s *State) slotOf(k string) (i int, pre uint64, h uint32) {
	// hashKey, inlined by hand.
	n := len(k)
	x := s.seed ^ uint64(n)*0x9e3779b97f4a7c15
	switch {
	case n > 8:
		pre = le64(k)
		for r := k; len(r) > 8; r = r[8:] {
			x = bits.RotateLeft64((x^le64(r))*0x9e3779b97f4a7c15, 29)
		}
		x ^= le64(k[n-8:])
	case n >= 4:
		pre = uint64(le32(k)) | uint64(le32(k[n-4:]))<<((8*(n-4))&63)
		x ^= pre
	case n > 0:
		pre = uint64(k[0]) | uint64(k[n/2])<<((8*(n/2))&63) | uint64(k[n-1])<<((8*(n-1))&63)
		x ^= pre
	}
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	h = uint32(x)
	if len(s.index) == 0 {
		return -1, pre, h
	}
	mask := uint32(len(s.index) - 1)
	c := h & mask
	for { // ends: the index is at most half full
		j := s.index[c]
		if j == 0 {
			break
		}
		if e := &s.slots[j-1]; e.hash == h && e.pre == pre && int(e.klen) == len(k) &&
			(len(k) <= 8 || string(s.keys[e.koff+8:e.koff+e.klen]) == k[8:]) {
			return int(j - 1), pre, h
		}
		c = (c + 1) & mask
	}
	return -1, pre, h
}

// miss loads a key that slotOf did not find from the host and caches it.
func (s *State) miss(k string, pre uint64, h uint32) int {
	v, ok := s.load(k)
	i := s.insert(k, pre, h, ^s.find(k, pre, h), len(v))
	if ok {
		s.store(&s.slots[i], v)
	}
	return i
}

// find returns the slot number of a cached key, or ^cell with the index
// cell where the key would go; cell is len(index) if there is no index
// yet or if the free cell is more than maxProbe cells from the key's home.
func (s *State) find(k string, pre uint64, h uint32) int {
	if len(s.index) == 0 {
		return ^0
	}
	mask := uint32(len(s.index) - 1)
	i := h & mask
	for n := 0; ; n++ { // ends: the index is at most half full
		c := s.index[i]
		if c == 0 {
			if n > s.maxProbe {
				return ^len(s.index)
			}
			return ^int(i)
		}
		if e := &s.slots[c-1]; e.hash == h && e.pre == pre && int(e.klen) == len(k) &&
			(len(k) <= 8 || string(s.keys[e.koff+8:e.koff+e.klen]) == k[8:]) {
			return int(c - 1)
		}
		i = (i + 1) & mask
	}
}

// entry returns the slot number of a key that is about to be given a
// value of vlen bytes (or deleted, vlen 0): a miss does not read the
// host, the value is replaced anyway.
func (s *State) entry(k string, vlen int) int {
	pre, h := s.hashKey(k)
	c := s.find(k, pre, h)
	if c >= 0 {
		return c
	}
	return s.insert(k, pre, h, ^c, vlen)
}

// insert adds an absent slot for a key that is not cached and returns its
// number. cell is where find would put it (len(index): no index yet, or
// too far from the key's home cell); vlen is the size of the value to
// come.
func (s *State) insert(k string, pre uint64, h uint32, cell, vlen int) int {
	if cell >= len(s.index) || len(s.slots) >= s.maxEntries || s.bytes+len(k)+vlen > s.maxBytes {
		if len(s.slots) > 0 {
			s.flush()
			s.reset()
		}
		cell = -1
	}
	if 2*(len(s.slots)+1) > len(s.index) {
		s.grow()
		cell = -1
	}
	if cell < 0 {
		if cell = ^s.find(k, pre, h); cell >= len(s.index) {
			panic("ardea: state cache: no free cell") // not in a fresh table
		}
	}
	s.slots = append(s.slots, slot{hash: h, pre: pre, koff: uint32(len(s.keys)), klen: uint32(len(k)), vlen: -1})
	s.keys = append(s.keys, k...)
	s.index[cell] = uint32(len(s.slots))
	s.bytes += len(k)
	return len(s.slots) - 1
}

// grow doubles the index (or makes the first one) and re-inserts every
// slot.
func (s *State) grow() {
	n := max(2*len(s.index), 64)
	for n < 2*(len(s.slots)+1) {
		n *= 2
	}
	s.index = make([]uint32, n)
	mask := uint32(n - 1)
	for j := range s.slots {
		i := s.slots[j].hash & mask
		for s.index[i] != 0 {
			i = (i + 1) & mask
		}
		s.index[i] = uint32(j + 1)
	}
}

// reset empties the cache (its unwritten changes are lost).
func (s *State) reset() {
	clear(s.index)
	// A value returned by Get may still be in use while an insert empties
	// the cache (Put(k2, v) with v from Get(k1)): take fresh slots rather
	// than overwrite the old ones.
	s.slots = make([]slot, 0, cap(s.slots))
	s.keys = s.keys[:0]
	clear(s.big)
	s.big = s.big[:0]
	s.dirty = s.dirty[:0]
	s.bytes = 0
}

// value is a slot's value (nil if absent).
func (s *State) value(e *slot) []byte {
	switch {
	case e.vlen < 0:
		return nil
	case e.vlen > inlineValue:
		return s.big[e.big-1]
	}
	return e.inl[:e.vlen:e.vlen]
}

// store sets a slot's value (present), copying v, and keeps the byte
// count.
func (s *State) store(e *slot, v []byte) {
	s.bytes += len(v) - max(int(e.vlen), 0)
	if len(v) <= inlineValue {
		copy(e.inl[:], v)
		if e.vlen > inlineValue {
			s.big[e.big-1] = nil // the slot keeps its big index
		}
	} else {
		if e.big == 0 {
			s.big = append(s.big, nil)
			e.big = int32(len(s.big))
		}
		b := s.big[e.big-1]
		if cap(b) < len(v) || cap(b) > 2*len(v)+64 {
			b = make([]byte, len(v))
		}
		b = b[:len(v)]
		copy(b, v)
		s.big[e.big-1] = b
	}
	e.vlen = int32(len(v))
}

// drop marks a slot's key absent.
func (s *State) drop(e *slot) {
	s.bytes -= max(int(e.vlen), 0)
	if e.vlen > inlineValue {
		s.big[e.big-1] = nil
	}
	e.vlen = -1
}

// touch marks slot i dirty.
func (s *State) touch(i int) {
	if e := &s.slots[i]; !e.dirty {
		e.dirty = true
		s.dirty = append(s.dirty, uint32(i))
	}
}

// bkey views a []byte key as a string for the duration of a state call;
// the cache copies it when it keeps it.
func bkey(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// Get returns a key's value.
func (s *State) Get(key string) ([]byte, bool) {
	e := &s.slots[s.lookup(key)]
	return s.value(e), e.vlen >= 0
}

// GetBytes is Get with the key as a []byte.
func (s *State) GetBytes(key []byte) ([]byte, bool) { return s.Get(bkey(key)) }

// load asks the host for a key (the result is valid until the next load).
func (s *State) load(key string) ([]byte, bool) {
	if s.vbuf == nil {
		s.vbuf = make([]byte, 256)
	}
	for {
		n := s.r.host.stateGet(key, s.vbuf)
		if n < 0 {
			return nil, false
		}
		if int(n) <= len(s.vbuf) {
			return s.vbuf[:n], true
		}
		s.vbuf = make([]byte, n)
	}
}

// Put stores a value (copied).
func (s *State) Put(key string, value []byte) {
	i := s.entry(key, len(value))
	s.store(&s.slots[i], value)
	s.touch(i)
}

// PutBytes is Put with the key as a []byte.
func (s *State) PutBytes(key, value []byte) { s.Put(bkey(key), value) }

// Delete removes a key.
func (s *State) Delete(key string) {
	i := s.entry(key, 0)
	s.drop(&s.slots[i])
	s.touch(i)
}

// DeleteBytes is Delete with the key as a []byte.
func (s *State) DeleteBytes(key []byte) { s.Delete(bkey(key)) }

// GetInt returns a value stored by PutInt; ok is false if the key is absent
// or its value is not 8 bytes.
func (s *State) GetInt(key string) (v int64, ok bool) {
	e := &s.slots[s.lookup(key)]
	if e.vlen != 8 {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(e.inl[:])), true
}

// GetIntBytes is GetInt with the key as a []byte.
func (s *State) GetIntBytes(key []byte) (v int64, ok bool) { return s.GetInt(bkey(key)) }

// PutInt stores v as 8 bytes little-endian.
func (s *State) PutInt(key string, v int64) {
	s.putInt(s.entry(key, 8), v)
}

// PutIntBytes is PutInt with the key as a []byte.
func (s *State) PutIntBytes(key []byte, v int64) { s.PutInt(bkey(key), v) }

// putInt stores v in slot i, inline.
func (s *State) putInt(i int, v int64) {
	e := &s.slots[i]
	if e.vlen != 8 {
		var b [8]byte
		s.store(e, b[:]) // the length and byte count; the bytes follow
	}
	binary.LittleEndian.PutUint64(e.inl[:], uint64(v))
	s.touch(i)
}

// AddInt adds delta to the int64 under key (absent counts as 0) and returns
// the new value.
func (s *State) AddInt(key string, delta int64) int64 { return addInt(s, key, delta) }

// addIntSlow is addIntGo as a function, for state_wasm.s.
func addIntSlow(s *State, key string, delta int64) int64 { return s.addIntGo(key, delta) }

// addIntGo is AddInt in Go; addInt (state_other.go, state_wasm.s) is it
// or its fast path in WebAssembly, which falls back to it.
func (s *State) addIntGo(key string, delta int64) int64 {
	// The WebAssembly build's hot path is state_wasm.s; this one can
	// afford the call to lookup.
	i := s.lookup(key)
	e := &s.slots[i]
	if e.vlen != 8 {
		var zero [8]byte
		s.store(e, zero[:])
	}
	v := int64(binary.LittleEndian.Uint64(e.inl[:])) + delta
	binary.LittleEndian.PutUint64(e.inl[:], uint64(v))
	s.touch(i)
	return v
}

// AddIntBytes is AddInt with the key as a []byte: a counter keyed by a
// view of the input costs no allocation once the key is cached.
func (s *State) AddIntBytes(key []byte, delta int64) int64 { return s.AddInt(bkey(key), delta) }

// Scan calls fn for every key starting with prefix, in ascending key
// order, until fn returns false. It first writes the cache's dirty entries
// so the host's view is current; writes made during the scan are not seen
// by it. value is valid only during fn.
func (s *State) Scan(prefix string, fn func(key string, value []byte) bool) {
	s.flush()
	buf := s.sbuf
	s.sbuf = nil // a nested Scan gets its own buffer
	if buf == nil {
		buf = make([]byte, 4096)
	}
	for {
		n := s.r.host.stateScan(prefix, buf)
		if n < 4 {
			panic(fmt.Sprintf("ardea: state_scan returned %d", n))
		}
		if int(n) <= len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, n)
	}
	defer func() { s.sbuf = buf[:cap(buf)] }()
	count := binary.LittleEndian.Uint32(buf)
	b := buf[4:]
	for i := uint32(0); i < count; i++ {
		k, rest, ok := scanField(b)
		if !ok {
			panic("ardea: malformed state_scan result")
		}
		v, rest, ok := scanField(rest)
		if !ok {
			panic("ardea: malformed state_scan result")
		}
		b = rest
		if !fn(string(k), v) {
			return
		}
	}
}

// ScanBytes is Scan with the prefix as a []byte.
func (s *State) ScanBytes(prefix []byte, fn func(key string, value []byte) bool) {
	s.Scan(string(prefix), fn)
}

func scanField(b []byte) (field, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := binary.LittleEndian.Uint32(b)
	if uint64(len(b)-4) < uint64(n) {
		return nil, nil, false
	}
	return b[4 : 4+n : 4+n], b[4+n:], true
}

// flush writes the dirty entries to the host with one state_write call.
func (s *State) flush() {
	if len(s.dirty) == 0 {
		return
	}
	w := s.wbuf[:0]
	for _, i := range s.dirty {
		e := &s.slots[i]
		e.dirty = false
		k := s.keys[e.koff : e.koff+e.klen]
		kl := len(k)
		if e.vlen < 0 {
			w = append(w, 2, byte(kl), byte(kl>>8), byte(kl>>16), byte(kl>>24))
			w = append(w, k...)
			w = append(w, 0, 0, 0, 0)
			continue
		}
		w = append(w, 1, byte(kl), byte(kl>>8), byte(kl>>16), byte(kl>>24))
		w = append(w, k...)
		v := s.value(e)
		vl := len(v)
		w = append(w, byte(vl), byte(vl>>8), byte(vl>>16), byte(vl>>24))
		w = append(w, v...)
	}
	s.dirty = s.dirty[:0]
	s.r.host.stateWrite(w)
	if cap(w) <= 4<<20 {
		s.wbuf = w[:0]
	} else {
		s.wbuf = nil
	}
}

// discard drops the cache with its unwritten changes.
func (s *State) discard() {
	if len(s.slots) > 0 || len(s.dirty) > 0 {
		s.reset()
	}
}

// cached reports whether a key is in the cache (tests).
func (s *State) cached(key string) bool {
	pre, h := s.hashKey(key)
	return s.find(key, pre, h) >= 0
}

// entries is the number of cached keys (tests).
func (s *State) entries() int { return len(s.slots) }
