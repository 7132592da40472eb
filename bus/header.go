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
//	off  2  u16 flags: FlagRoots or 0 (a receiver refuses others)
//	off  4  u32 destination task
//	off  8  u32 source task
//	off 12  i64 sent at: unix ns when the batch's first tuple was appended;
//	            for a switch mark, the switch epoch; for a barrier, the
//	            checkpoint id
//	off 20  data: ABI v1 batch (u32 count, record*); end-of-stream and
//	            switch mark: nothing
//	        with FlagRoots (data only), after the batch: the roots trailer
//	            (entry*, u32 trailer length including this u32), one entry
//	            per tracked record (nonzero tuple id), in record order:
//	            u64 tuple id, u16 n, n * (u32 spout task, u64 root key)
//
// The trailer stays outside the ABI batch: the guest never sees roots, the
// receiving stream manager registers them (acker.Anchors) for the task's
// acks. Little-endian like the ABI.
const (
	HeaderVersion = 1
	HeaderLen     = 20
)

// FlagRoots marks a data message that carries a roots trailer.
const FlagRoots uint16 = 1

// MsgKind is the kind of a data-subject message.
type MsgKind uint8

const (
	MsgData MsgKind = 1
	MsgEOS  MsgKind = 2
	// MsgMark says that the sender routes nothing more to the destination
	// under the current plan until a live re-plan (the epoch in SentAt).
	MsgMark MsgKind = 3
	// MsgBarrier is a checkpoint barrier (effectively once): everything the
	// sender sent before it belongs to checkpoint SentAt.
	MsgBarrier MsgKind = 4
)

func (k MsgKind) String() string {
	switch k {
	case MsgData:
		return "data"
	case MsgEOS:
		return "eos"
	case MsgMark:
		return "mark"
	case MsgBarrier:
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

// Header is a decoded data-message header.
type Header struct {
	Kind   MsgKind
	Dst    uint32
	Src    uint32
	SentAt int64
	// Tuples is the record count announced by the batch (0 for EOS).
	Tuples int
	// Roots is the roots trailer's entries (FlagRoots), aliasing the
	// message; nil without the flag.
	Roots []byte
}

// ErrBadMessage wraps every header or control-message decoding error.
var ErrBadMessage = errors.New("bus: malformed message")

// putHeader writes a header into b[:HeaderLen].
func putHeader(b []byte, kind MsgKind, dst, src uint32, sentAt int64) {
	b[0] = HeaderVersion
	b[1] = byte(kind)
	binary.LittleEndian.PutUint16(b[2:], 0)
	binary.LittleEndian.PutUint32(b[4:], dst)
	binary.LittleEndian.PutUint32(b[8:], src)
	binary.LittleEndian.PutUint64(b[12:], uint64(sentAt))
}

// AppendHeader appends a header for a message of the given kind.
func AppendHeader(dst []byte, kind MsgKind, dstTask, srcTask uint32, sentAt int64) []byte {
	n := len(dst)
	dst = append(dst, make([]byte, HeaderLen)...)
	putHeader(dst[n:], kind, dstTask, srcTask, sentAt)
	return dst
}

// DecodeHeader decodes a data message and returns its header and payload (the
// ABI batch for MsgData, empty for MsgEOS; it aliases msg). It checks the
// version, flags, kind, task ids, and that the batch's record count is
// plausible for its length; it does not walk the records (the guest SDK
// does, and tuple.BatchReader reports a malformed record).
func DecodeHeader(msg []byte) (Header, []byte, error) {
	var h Header
	if len(msg) < HeaderLen {
		return h, nil, fmt.Errorf("%w: %d bytes, header needs %d", ErrBadMessage, len(msg), HeaderLen)
	}
	if msg[0] != HeaderVersion {
		return h, nil, fmt.Errorf("%w: header version %d, want %d", ErrBadMessage, msg[0], HeaderVersion)
	}
	flags := binary.LittleEndian.Uint16(msg[2:])
	if flags&^FlagRoots != 0 || (flags != 0 && msg[1] != byte(MsgData)) {
		return h, nil, fmt.Errorf("%w: unknown header flags %#x", ErrBadMessage, flags)
	}
	h.Kind = MsgKind(msg[1])
	h.Dst = binary.LittleEndian.Uint32(msg[4:])
	h.Src = binary.LittleEndian.Uint32(msg[8:])
	h.SentAt = int64(binary.LittleEndian.Uint64(msg[12:]))
	if h.Dst == 0 || h.Src == 0 {
		return h, nil, fmt.Errorf("%w: task id 0 (destination %d, source %d)", ErrBadMessage, h.Dst, h.Src)
	}
	p := msg[HeaderLen:]
	if flags&FlagRoots != 0 {
		if len(p) < 4 {
			return h, nil, fmt.Errorf("%w: roots flag without a trailer", ErrBadMessage)
		}
		n := uint64(binary.LittleEndian.Uint32(p[len(p)-4:]))
		if n < 4+minRootsEntry || n > uint64(len(p)) {
			return h, nil, fmt.Errorf("%w: roots trailer of %d bytes in a %d-byte payload", ErrBadMessage, n, len(p))
		}
		h.Roots = p[len(p)-int(n) : len(p)-4]
		p = p[:len(p)-int(n)]
	}
	switch h.Kind {
	case MsgData:
		if len(p) < 4 {
			return h, nil, fmt.Errorf("%w: data message without a batch count", ErrBadMessage)
		}
		n := uint64(binary.LittleEndian.Uint32(p))
		if n == 0 || n*minRecord > uint64(len(p)-4) {
			return h, nil, fmt.Errorf("%w: batch announces %d records in %d bytes", ErrBadMessage, n, len(p))
		}
		h.Tuples = int(n)
	case MsgEOS, MsgMark, MsgBarrier:
		if len(p) != 0 {
			return h, nil, fmt.Errorf("%w: %v message with %d payload bytes", ErrBadMessage, h.Kind, len(p))
		}
	default:
		return h, nil, fmt.Errorf("%w: unknown message kind %d", ErrBadMessage, msg[1])
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

// CtrlKind is the kind of a control message.
type CtrlKind uint8

const (
	CtrlHello CtrlKind = 1
	CtrlOpen  CtrlKind = 2
	CtrlGrant CtrlKind = 3
)

// CtrlEntry is one (task, bytes) pair of an open or grant.
type CtrlEntry struct {
	Task  uint32
	Bytes uint32
}

// Ctrl is a decoded control message.
type Ctrl struct {
	Kind    CtrlKind
	From    int
	Epoch   uint32
	Entries []CtrlEntry
}

// AppendCtrl encodes a control message.
func AppendCtrl(dst []byte, c Ctrl) []byte {
	dst = append(dst, HeaderVersion, byte(c.Kind))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(c.Entries)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(c.From))
	dst = binary.LittleEndian.AppendUint32(dst, c.Epoch)
	for _, e := range c.Entries {
		dst = binary.LittleEndian.AppendUint32(dst, e.Task)
		dst = binary.LittleEndian.AppendUint32(dst, e.Bytes)
	}
	return dst
}

// DecodeCtrl decodes a control message; Entries is appended to buf.
func DecodeCtrl(msg []byte, buf []CtrlEntry) (Ctrl, error) {
	var c Ctrl
	if len(msg) < ctrlHeaderLen {
		return c, fmt.Errorf("%w: control message of %d bytes", ErrBadMessage, len(msg))
	}
	if msg[0] != HeaderVersion {
		return c, fmt.Errorf("%w: control message version %d", ErrBadMessage, msg[0])
	}
	c.Kind = CtrlKind(msg[1])
	if c.Kind < CtrlHello || c.Kind > CtrlGrant {
		return c, fmt.Errorf("%w: unknown control kind %d", ErrBadMessage, msg[1])
	}
	n := int(binary.LittleEndian.Uint16(msg[2:]))
	c.From = int(binary.LittleEndian.Uint32(msg[4:]))
	c.Epoch = binary.LittleEndian.Uint32(msg[8:])
	if len(msg) != ctrlHeaderLen+8*n {
		return c, fmt.Errorf("%w: control message announces %d entries in %d bytes", ErrBadMessage, n, len(msg))
	}
	c.Entries = buf[:0]
	for i := 0; i < n; i++ {
		b := msg[ctrlHeaderLen+8*i:]
		c.Entries = append(c.Entries, CtrlEntry{Task: binary.LittleEndian.Uint32(b), Bytes: binary.LittleEndian.Uint32(b[4:])})
	}
	return c, nil
}
