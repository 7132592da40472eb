package bus

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Data messages (subject data.<container>) are a fixed header followed by
// exactly the ABI v1 input batch (wasm-sdk/ABI.md), so the receiver hands
// the batch to the guest without re-encoding:
//
//	off  0  u8  version (1)
//	off  1  u8  kind: 1 data, 2 end-of-stream, 3 switch mark, 4 barrier
//	off  2  u16 flags: flagRoots or 0 (a receiver refuses others)
//	off  4  u32 destination task
//	off  8  u32 source task
//	off 12  i64 sent at: unix ns when the batch's first tuple was appended;
//	            for a switch mark, the switch epoch; for a barrier, the
//	            checkpoint id
//	off 20  data: ABI v1 batch (u32 count, record*); end-of-stream and
//	            switch mark: nothing
//	        with flagRoots (data only), after the batch: the roots trailer
//	            (entry*, u32 trailer length including this u32), one entry
//	            per tracked record (nonzero tuple id), in record order:
//	            u64 tuple id, u16 n, n * (u32 spout task, u64 root key)
//
// The trailer stays outside the ABI batch: the guest never sees roots, the
// receiving stream manager registers them (acker.Anchors) for the task's
// acks. Little-endian like the ABI.
const (
	headerVersion = 1
	headerLen     = 20
)

// flagRoots marks a data message that carries a roots trailer.
const flagRoots uint16 = 1

// msgKind is the kind of a data-subject message.
type msgKind uint8

const (
	msgData msgKind = 1
	msgEOS  msgKind = 2
	// msgMark says that the sender routes nothing more to the destination
	// under the current plan until a live re-plan (the epoch in SentAt).
	msgMark msgKind = 3
	// msgBarrier is a checkpoint barrier (effectively once): everything the
	// sender sent before it belongs to checkpoint SentAt.
	msgBarrier msgKind = 4
)

func (k msgKind) String() string {
	switch k {
	case msgData:
		return "data"
	case msgEOS:
		return "eos"
	case msgMark:
		return "mark"
	case msgBarrier:
		return "barrier"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// minRootsEntry is the smallest roots trailer entry: a tuple id, a count
// and one root.
const minRootsEntry = 8 + 2 + 12

// minRecord is the smallest ABI v1 record: u32 len, u16 input, u32 source,
// u64 tuple id, u16 nfields.
const minRecord = 4 + 2 + 4 + 8 + 2

// header is a decoded data-message header.
type header struct {
	Kind   msgKind
	Dst    uint32
	Src    uint32
	SentAt int64
	// Tuples is the record count announced by the batch (0 for EOS).
	Tuples int
	// Roots is the roots trailer's entries (flagRoots), aliasing the
	// message; nil without the flag.
	Roots []byte
}

// errBadMessage wraps every header or control-message decoding error.
var errBadMessage = errors.New("bus: malformed message")

// putHeader writes a header into b[:headerLen].
func putHeader(b []byte, kind msgKind, dst, src uint32, sentAt int64) {
	b[0] = headerVersion
	b[1] = byte(kind)
	binary.LittleEndian.PutUint16(b[2:], 0)
	binary.LittleEndian.PutUint32(b[4:], dst)
	binary.LittleEndian.PutUint32(b[8:], src)
	binary.LittleEndian.PutUint64(b[12:], uint64(sentAt))
}

// appendHeader appends a header for a message of the given kind.
func appendHeader(dst []byte, kind msgKind, dstTask, srcTask uint32, sentAt int64) []byte {
	n := len(dst)
	dst = append(dst, make([]byte, headerLen)...)
	putHeader(dst[n:], kind, dstTask, srcTask, sentAt)
	return dst
}

// decodeHeader decodes a data message and returns its header and payload (the
// ABI batch for msgData, empty for msgEOS; it aliases msg). It checks the
// version, flags, kind, task ids, and that the batch's record count is
// plausible for its length; it does not walk the records (the guest SDK
// does, and tuple.BatchReader reports a malformed record).
func decodeHeader(msg []byte) (header, []byte, error) {
	var h header
	if len(msg) < headerLen {
		return h, nil, fmt.Errorf("%w: %d bytes, header needs %d", errBadMessage, len(msg), headerLen)
	}
	if msg[0] != headerVersion {
		return h, nil, fmt.Errorf("%w: header version %d, want %d", errBadMessage, msg[0], headerVersion)
	}
	flags := binary.LittleEndian.Uint16(msg[2:])
	if flags&^flagRoots != 0 || (flags != 0 && msg[1] != byte(msgData)) {
		return h, nil, fmt.Errorf("%w: unknown header flags %#x", errBadMessage, flags)
	}
	h.Kind = msgKind(msg[1])
	h.Dst = binary.LittleEndian.Uint32(msg[4:])
	h.Src = binary.LittleEndian.Uint32(msg[8:])
	h.SentAt = int64(binary.LittleEndian.Uint64(msg[12:]))
	if h.Dst == 0 || h.Src == 0 {
		return h, nil, fmt.Errorf("%w: task id 0 (destination %d, source %d)", errBadMessage, h.Dst, h.Src)
	}
	p := msg[headerLen:]
	if flags&flagRoots != 0 {
		if len(p) < 4 {
			return h, nil, fmt.Errorf("%w: roots flag without a trailer", errBadMessage)
		}
		n := uint64(binary.LittleEndian.Uint32(p[len(p)-4:]))
		if n < 4+minRootsEntry || n > uint64(len(p)) {
			return h, nil, fmt.Errorf("%w: roots trailer of %d bytes in a %d-byte payload", errBadMessage, n, len(p))
		}
		h.Roots = p[len(p)-int(n) : len(p)-4]
		p = p[:len(p)-int(n)]
	}
	switch h.Kind {
	case msgData:
		if len(p) < 4 {
			return h, nil, fmt.Errorf("%w: data message without a batch count", errBadMessage)
		}
		n := uint64(binary.LittleEndian.Uint32(p))
		if n == 0 || n*minRecord > uint64(len(p)-4) {
			return h, nil, fmt.Errorf("%w: batch announces %d records in %d bytes", errBadMessage, n, len(p))
		}
		h.Tuples = int(n)
	case msgEOS, msgMark, msgBarrier:
		if len(p) != 0 {
			return h, nil, fmt.Errorf("%w: %v message with %d payload bytes", errBadMessage, h.Kind, len(p))
		}
	default:
		return h, nil, fmt.Errorf("%w: unknown message kind %d", errBadMessage, msg[1])
	}
	return h, p, nil
}

// Control messages (subject credit.<container>) run the per-link credit
// protocol. A link is (sending container -> destination task):
//
//	off 0  u8  version (1)
//	off 1  u8  kind: 1 hello, 2 open, 3 grant
//	off 2  u16 entry count
//	off 4  u32 from container
//	off 8  u32 epoch of the sending stream manager (random, non-zero)
//	off 12 (u32 task, u32 bytes)* entries
//
// hello (sender -> receiver, no entries): "my credit subscription is up;
// open my links to you". open (receiver -> sender): for each destination
// task, the link window; a sender accepts the first open of a link and
// ignores later ones from the same epoch. An open from a new epoch means the
// receiving container restarted: the link's credit is reset to the window
// (what was in flight to the old process is gone). grant (receiver ->
// sender): bytes consumed from the link, added to its credit; a grant from
// another epoch than the link's is stale and ignored.
const ctrlHeaderLen = 12

// ctrlKind is the kind of a control message.
type ctrlKind uint8

const (
	ctrlHello ctrlKind = 1
	ctrlOpen  ctrlKind = 2
	ctrlGrant ctrlKind = 3
)

// ctrlEntry is one (task, bytes) pair of an open or grant.
type ctrlEntry struct {
	Task  uint32
	Bytes uint32
}

// ctrl is a decoded control message.
type ctrl struct {
	Kind    ctrlKind
	From    int
	Epoch   uint32
	Entries []ctrlEntry
}

// appendCtrl encodes a control message.
func appendCtrl(dst []byte, c ctrl) []byte {
	dst = append(dst, headerVersion, byte(c.Kind))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(c.Entries)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(c.From))
	dst = binary.LittleEndian.AppendUint32(dst, c.Epoch)
	for _, e := range c.Entries {
		dst = binary.LittleEndian.AppendUint32(dst, e.Task)
		dst = binary.LittleEndian.AppendUint32(dst, e.Bytes)
	}
	return dst
}

// decodeCtrl decodes a control message; Entries is appended to buf.
func decodeCtrl(msg []byte, buf []ctrlEntry) (ctrl, error) {
	var c ctrl
	if len(msg) < ctrlHeaderLen {
		return c, fmt.Errorf("%w: control message of %d bytes", errBadMessage, len(msg))
	}
	if msg[0] != headerVersion {
		return c, fmt.Errorf("%w: control message version %d", errBadMessage, msg[0])
	}
	c.Kind = ctrlKind(msg[1])
	if c.Kind < ctrlHello || c.Kind > ctrlGrant {
		return c, fmt.Errorf("%w: unknown control kind %d", errBadMessage, msg[1])
	}
	n := int(binary.LittleEndian.Uint16(msg[2:]))
	c.From = int(binary.LittleEndian.Uint32(msg[4:]))
	c.Epoch = binary.LittleEndian.Uint32(msg[8:])
	if len(msg) != ctrlHeaderLen+8*n {
		return c, fmt.Errorf("%w: control message announces %d entries in %d bytes", errBadMessage, n, len(msg))
	}
	c.Entries = buf[:0]
	for i := 0; i < n; i++ {
		b := msg[ctrlHeaderLen+8*i:]
		c.Entries = append(c.Entries, ctrlEntry{Task: binary.LittleEndian.Uint32(b), Bytes: binary.LittleEndian.Uint32(b[4:])})
	}
	return c, nil
}
