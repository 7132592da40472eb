package ardea

import (
	"encoding/binary"
	"fmt"
)

// Cache bounds. When an insert would exceed either, the cache writes its
// dirty entries to the host and starts empty.
const (
	DefaultCacheEntries = 1 << 16
	DefaultCacheBytes   = 8 << 20 // keys + values
)

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
// Keys are strings (any bytes). To keep a key's state with the tuples
// routed by it when the component is rescaled, build keys with StateKey.
// A value returned by Get is the cache's copy: do not modify it, and do not
// keep it past the next state call.
type State struct {
	r          *runtime
	cache      map[string]entry
	dirty      []string // keys with dirty entries, in first-write order
	bytes      int
	maxEntries int
	maxBytes   int
	vbuf       []byte // state_get
	sbuf       []byte // state_scan
	wbuf       []byte // state_write
}

type entry struct {
	val     []byte
	present bool
	dirty   bool
}

func (s *State) init(r *runtime) {
	s.r = r
	s.maxEntries, s.maxBytes = DefaultCacheEntries, DefaultCacheBytes
}

// Get returns a key's value.
func (s *State) Get(key string) ([]byte, bool) {
	if e, ok := s.cache[key]; ok {
		return e.val, e.present
	}
	v, ok := s.load(key)
	s.makeRoom(len(key) + len(v))
	s.cache[key] = entry{val: v, present: ok}
	s.bytes += len(key) + len(v)
	return v, ok
}

// load asks the host for a key (a copy owned by the cache).
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
			return append([]byte{}, s.vbuf[:n]...), true
		}
		s.vbuf = make([]byte, n)
	}
}

// makeRoom empties the cache (after writing its dirty entries) if adding
// a new entry of size bytes would exceed a bound.
func (s *State) makeRoom(size int) {
	if s.cache == nil {
		s.cache = make(map[string]entry)
	}
	if len(s.cache) >= s.maxEntries || s.bytes+size > s.maxBytes {
		s.flush()
		clear(s.cache)
		s.bytes = 0
	}
}

func (s *State) set(key string, v []byte, present bool) {
	e, ok := s.cache[key]
	if !ok {
		s.makeRoom(len(key) + len(v))
		s.bytes += len(key)
	}
	s.bytes += len(v) - len(e.val)
	if present {
		e.val = append(e.val[:0], v...) // reuses the cached copy's room
		if e.val == nil {
			e.val = []byte{}
		}
	} else {
		e.val = nil
	}
	e.present = present
	if !e.dirty {
		e.dirty = true
		s.dirty = append(s.dirty, key)
	}
	s.cache[key] = e
}

// Put stores a value (copied).
func (s *State) Put(key string, value []byte) { s.set(key, value, true) }

// Delete removes a key.
func (s *State) Delete(key string) { s.set(key, nil, false) }

// GetInt returns a value stored by PutInt; ok is false if the key is absent
// or its value is not 8 bytes.
func (s *State) GetInt(key string) (v int64, ok bool) {
	b, ok := s.Get(key)
	if !ok || len(b) != 8 {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(b)), true
}

// PutInt stores v as 8 bytes little-endian.
func (s *State) PutInt(key string, v int64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	s.set(key, b[:], true)
}

// AddInt adds delta to the int64 under key (absent counts as 0) and returns
// the new value.
func (s *State) AddInt(key string, delta int64) int64 {
	v, _ := s.GetInt(key)
	v += delta
	s.PutInt(key, v)
	return v
}

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
	for _, k := range s.dirty {
		e := s.cache[k]
		if !e.dirty {
			continue
		}
		if e.present {
			w = append(w, 1)
			w = binary.LittleEndian.AppendUint32(w, uint32(len(k)))
			w = append(w, k...)
			w = binary.LittleEndian.AppendUint32(w, uint32(len(e.val)))
			w = append(w, e.val...)
		} else {
			w = append(w, 2)
			w = binary.LittleEndian.AppendUint32(w, uint32(len(k)))
			w = append(w, k...)
			w = binary.LittleEndian.AppendUint32(w, 0)
		}
		e.dirty = false
		s.cache[k] = e
	}
	clear(s.dirty) // drop the key references
	s.dirty = s.dirty[:0]
	if len(w) > 0 {
		s.r.host.stateWrite(w)
	}
	if cap(w) <= 4<<20 {
		s.wbuf = w[:0]
	} else {
		s.wbuf = nil
	}
}

// discard drops the cache with its unwritten changes.
func (s *State) discard() {
	clear(s.cache)
	clear(s.dirty)
	s.dirty = s.dirty[:0]
	s.bytes = 0
}
