package host

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrBadSnapshot wraps every error of RestoreState.
var ErrBadSnapshot = errors.New("host: malformed state snapshot")

// Snapshot encodes the whole state (a checkpoint of the task):
// u32 max key groups, u32 n, n * (u32 key length, key, u32 value length,
// value), little-endian, keys in no particular order. It takes the state's
// mutex once; call it between the task's calls into its component for a
// consistent cut.
func (s *MemoryState) Snapshot() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	size := 8
	for _, g := range s.groups {
		for k, v := range g {
			size += 8 + len(k) + len(v)
		}
	}
	b := make([]byte, 0, size)
	b = binary.LittleEndian.AppendUint32(b, uint32(s.max))
	b = binary.LittleEndian.AppendUint32(b, uint32(s.n))
	for _, g := range s.groups {
		for k, v := range g {
			b = binary.LittleEndian.AppendUint32(b, uint32(len(k)))
			b = append(b, k...)
			b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
			b = append(b, v...)
		}
	}
	return b
}

// RestoreState decodes a Snapshot into a new state with maxKeyGroups key
// groups, which must be the count the snapshot was taken with.
func RestoreState(b []byte, maxKeyGroups int) (*MemoryState, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("%w: %d bytes", ErrBadSnapshot, len(b))
	}
	s := NewMemoryState(maxKeyGroups)
	if got := int(binary.LittleEndian.Uint32(b)); got != s.max {
		return nil, fmt.Errorf("%w: taken with %d key groups, the component has %d", ErrBadSnapshot, got, s.max)
	}
	n := int(binary.LittleEndian.Uint32(b[4:]))
	b = b[8:]
	for i := range n {
		if len(b) < 4 {
			return nil, fmt.Errorf("%w: entry %d of %d is cut short", ErrBadSnapshot, i, n)
		}
		kl := int(binary.LittleEndian.Uint32(b))
		if kl > len(b)-8 {
			return nil, fmt.Errorf("%w: entry %d: key of %d bytes", ErrBadSnapshot, i, kl)
		}
		k := b[4 : 4+kl]
		b = b[4+kl:]
		vl := int(binary.LittleEndian.Uint32(b))
		if vl > len(b)-4 {
			return nil, fmt.Errorf("%w: entry %d: value of %d bytes", ErrBadSnapshot, i, vl)
		}
		if _, dup := s.Get(k); dup {
			return nil, fmt.Errorf("%w: key %q twice", ErrBadSnapshot, k)
		}
		s.Put(k, b[4:4+vl])
		b = b[4+vl:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last entry", ErrBadSnapshot, len(b))
	}
	return s, nil
}
