package bus

import (
	"encoding/binary"
	"time"

	"github.com/ardea-dev/ardea/internal/acker"
)

// recordHeader is the ABI v1 record prefix: u32 len, u16 input index,
// u32 source task, u64 tuple id.
const recordHeader = 4 + 2 + 4 + 8

// pendingBatch is one batch under construction for one destination task. Its
// buffer is the whole data message: headerLen bytes of header (written when
// the batch is sent) followed by the ABI v1 batch, encoded exactly as
// tuple.BatchWriter does (the tests check the bytes). Keeping the header in
// front lets both paths send the buffer as is: a remote send publishes it, a
// local send hands buf[headerLen:] to the inbox. Neither copies.
//
// A pendingBatch belongs to one Outbox until it is sent; a locally delivered
// one then belongs to the Delivery until Inbox.Release recycles it.
type pendingBatch struct {
	buf   []byte
	count int
	first time.Time // when the first record was appended (linger, SentAt)
	// roots is the roots trailer's entries (at least once); a remote send
	// appends it to buf (trailed) once, even if the send is retried.
	roots   []byte
	trailed bool
}

func (b *pendingBatch) reset() {
	b.buf = append(b.buf[:0], make([]byte, headerLen+4)...)
	b.count = 0
	b.first = time.Time{}
	b.roots = b.roots[:0]
	b.trailed = false
}

// add appends one record whose values block is already encoded; a tracked
// record (tupleID != 0) also gets its roots trailer entry.
func (b *pendingBatch) add(input uint16, src uint32, tupleID uint64, values []byte, roots []acker.RootID) {
	if tupleID != 0 {
		b.roots = appendRootsEntry(b.roots, tupleID, roots)
	}
	b.buf = binary.LittleEndian.AppendUint32(b.buf, uint32(recordHeader-4+len(values)))
	b.buf = binary.LittleEndian.AppendUint16(b.buf, input)
	b.buf = binary.LittleEndian.AppendUint32(b.buf, src)
	b.buf = binary.LittleEndian.AppendUint64(b.buf, tupleID)
	b.buf = append(b.buf, values...)
	b.count++
	binary.LittleEndian.PutUint32(b.buf[headerLen:], uint32(b.count))
}

// batch is the ABI v1 batch (aliases buf).
func (b *pendingBatch) batch() []byte { return b.buf[headerLen:] }
