package acker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Ack message wire format, version 1 (all integers little-endian):
//
//	off  0  u8   version (1)
//	off  1  u8   flags (0; others refused)
//	off  2  u16  reserved (0)
//	off  4  u32  sending container (nonzero)
//	off  8  u32  entry count n
//	off 12  entry * n, 21 bytes each:
//	        u8   op: 1 update (XOR into the tree), 2 fail
//	        u32  root spout task (nonzero)
//	        u64  root key (nonzero)
//	        u64  xor (update); for fail, the task that failed the
//	             tuple (below 2^32; 0: unknown)
//
// The length must be exactly 12 + 21*n. One message carries the updates
// and fails for every root owned by the destination container that the
// sender produced since its last flush.
const (
	WireVersion    = 1
	WireHeaderSize = 12
	WireEntrySize  = 21
)

// Op is an entry's operation.
type Op uint8

const (
	// OpUpdate XORs Entry.Xor into the tree (from Anchors.Ack).
	OpUpdate Op = 1
	// OpFail fails the tree (from Anchors.Fail).
	OpFail Op = 2
)

// Entry is one operation on one tree.
type Entry struct {
	Op   Op
	Root RootID
	Xor  uint64 // OpUpdate: XOR; OpFail: the failing task (0: unknown)
}

// ErrBadMessage wraps every decoding error.
var ErrBadMessage = errors.New("acker: bad ack message")

// Batch builds one ack message in place. The zero value is not usable; use
// NewBatch. A Batch is not safe for concurrent use.
type Batch struct {
	buf []byte
	n   uint32
}

// NewBatch returns an empty message from container from.
func NewBatch(from uint32) *Batch {
	b := &Batch{buf: make([]byte, WireHeaderSize, WireHeaderSize+64*WireEntrySize)}
	b.buf[0] = WireVersion
	binary.LittleEndian.PutUint32(b.buf[4:], from)
	return b
}

// Update appends an OpUpdate entry.
func (b *Batch) Update(root RootID, xor uint64) { b.add(OpUpdate, root, xor) }

// Fail appends an OpFail entry; by is the task that failed the tuple (0:
// unknown).
func (b *Batch) Fail(root RootID, by uint32) { b.add(OpFail, root, uint64(by)) }

// Add appends e (the Xor of an OpFail is its failing task, cut to 32 bits).
func (b *Batch) Add(e Entry) {
	if e.Op == OpFail {
		e.Xor = uint64(uint32(e.Xor))
	}
	b.add(e.Op, e.Root, e.Xor)
}

func (b *Batch) add(op Op, root RootID, xor uint64) {
	b.buf = append(b.buf, byte(op))
	b.buf = binary.LittleEndian.AppendUint32(b.buf, root.SpoutTask)
	b.buf = binary.LittleEndian.AppendUint64(b.buf, root.Key)
	b.buf = binary.LittleEndian.AppendUint64(b.buf, xor)
	b.n++
	binary.LittleEndian.PutUint32(b.buf[8:], b.n)
}

// Len returns the number of entries.
func (b *Batch) Len() int { return int(b.n) }

// Bytes returns the encoded message. It stays valid until the next Add,
// Update, Fail or Reset.
func (b *Batch) Bytes() []byte { return b.buf }

// Reset empties the batch, keeping its buffer and sender.
func (b *Batch) Reset() {
	b.buf = b.buf[:WireHeaderSize]
	b.n = 0
	binary.LittleEndian.PutUint32(b.buf[8:], 0)
}

// DecodeMessage checks and decodes an ack message, appending its entries to
// dst. Every violation (version, flags, reserved bits, a length that does not
// match the count, an unknown op, a zero spout task, key or sending
// container, a fail with a nonzero xor) is an error wrapping ErrBadMessage;
// nothing is returned then.
func DecodeMessage(msg []byte, dst []Entry) (from uint32, entries []Entry, err error) {
	if len(msg) < WireHeaderSize {
		return 0, dst, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrBadMessage, len(msg), WireHeaderSize)
	}
	if msg[0] != WireVersion {
		return 0, dst, fmt.Errorf("%w: version %d, want %d", ErrBadMessage, msg[0], WireVersion)
	}
	if msg[1] != 0 || msg[2] != 0 || msg[3] != 0 {
		return 0, dst, fmt.Errorf("%w: flags %#02x, reserved %#04x: must be 0", ErrBadMessage, msg[1], binary.LittleEndian.Uint16(msg[2:]))
	}
	from = binary.LittleEndian.Uint32(msg[4:])
	if from == 0 {
		return 0, dst, fmt.Errorf("%w: sending container 0", ErrBadMessage)
	}
	n := binary.LittleEndian.Uint32(msg[8:])
	body := msg[WireHeaderSize:]
	if uint64(len(body)) != uint64(n)*WireEntrySize {
		return 0, dst, fmt.Errorf("%w: from container %d: %d entries need %d bytes, have %d", ErrBadMessage, from, n, uint64(n)*WireEntrySize, len(body))
	}
	first := len(dst)
	dst = slices.Grow(dst, int(n))[:first+int(n)]
	out := dst[first:]
	for i := range out {
		e := body[i*WireEntrySize : (i+1)*WireEntrySize]
		op := Op(e[0])
		root := RootID{SpoutTask: binary.LittleEndian.Uint32(e[1:]), Key: binary.LittleEndian.Uint64(e[5:])}
		xor := binary.LittleEndian.Uint64(e[13:])
		switch {
		case op != OpUpdate && op != OpFail:
			err = fmt.Errorf("unknown op %d", op)
		case root.SpoutTask == 0 || root.Key == 0:
			err = fmt.Errorf("root %v: spout task and key must be nonzero", root)
		case op == OpFail && xor > math.MaxUint32:
			err = fmt.Errorf("fail of root %v names task %d", root, xor)
		}
		if err != nil {
			return 0, dst[:first], fmt.Errorf("%w: from container %d: entry %d: %w", ErrBadMessage, from, i, err)
		}
		out[i] = Entry{Op: op, Root: root, Xor: xor}
	}
	return from, dst, nil
}
