package checkpoint

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"

	"github.com/ardea-dev/ardea/internal/names"
)

// Store keeps checkpoint snapshots: one blob per (topology, checkpoint id,
// task), written by the task when it is aligned, and the topology's last
// global checkpoint, recorded by the topology manager. Implementations:
// DirStore (a local directory) and JetStreamStore (a NATS JetStream object
// store).
//
// Every blob is stored in an envelope that names its topology, checkpoint
// and task and carries a CRC-32C, so Load and Global return ErrCorrupt for
// damaged, truncated or misplaced data and ErrNotFound for missing data;
// never an empty state in their place. Errors name the topology, checkpoint
// and task.
//
// Implementations are safe for concurrent use. SetGlobal, Delete and
// DeleteBefore are meant for the topology's one topology manager.
type Store interface {
	// Save stores task's snapshot of checkpoint id, replacing any earlier
	// one for the same key. The write is atomic: a later Load sees the old
	// blob or the new one, never a part. A Load of the same key running
	// while it is rewritten may fail on JetStreamStore (the object store
	// purges the old chunks under the reader); it never returns a mix. The
	// protocol does not do that: a task saves each checkpoint once, and
	// recovery reads the global checkpoint, which is not written again.
	Save(ctx context.Context, topology string, id uint64, task uint32, data []byte) error
	// Load returns task's snapshot of checkpoint id: ErrNotFound if none
	// was saved, ErrCorrupt if it does not check out.
	Load(ctx context.Context, topology string, id uint64, task uint32) ([]byte, error)
	// SetGlobal records id as the topology's last global checkpoint (stored
	// by every task): first a marker beside the checkpoint's snapshots (see
	// Globals), then the topology's marker. An id older than the recorded
	// one is refused (ErrInvalid); the same id again is a no-op.
	SetGlobal(ctx context.Context, topology string, id uint64) error
	// Global returns the last global checkpoint, 0 if none was recorded,
	// ErrCorrupt if the record does not check out.
	Global(ctx context.Context, topology string) (uint64, error)
	// Globals returns the topology's retained global checkpoints, newest
	// first: each checkpoint SetGlobal recorded (it leaves a marker of its
	// own beside the checkpoint's snapshots) and that was not deleted
	// since, and the last global checkpoint. Retention is the caller's:
	// DeleteBefore and Delete remove a checkpoint's marker with its
	// snapshots. A damaged marker is left out, and reported in an error
	// wrapping ErrCorrupt that comes with the list of the intact ones;
	// any other error comes with a nil list.
	Globals(ctx context.Context, topology string) ([]uint64, error)
	// Checkpoints returns the ids that have at least one snapshot,
	// ascending.
	Checkpoints(ctx context.Context, topology string) ([]uint64, error)
	// Delete removes every snapshot of checkpoint id (an abandoned one).
	// The last global checkpoint is refused (ErrInvalid).
	Delete(ctx context.Context, topology string, id uint64) error
	// DeleteBefore removes every snapshot of the checkpoints older than id.
	// id must not be newer than the last global checkpoint (ErrInvalid), so
	// the checkpoint to restore always survives.
	DeleteBefore(ctx context.Context, topology string, id uint64) error
}

// Errors of the stores; the returned errors wrap them.
var (
	ErrNotFound = errors.New("not found")
	ErrCorrupt  = errors.New("corrupt")
	ErrInvalid  = errors.New("invalid argument")
)

// where names a snapshot in errors.
func where(topology string, id uint64, task uint32) string {
	return fmt.Sprintf("checkpoint: topology %q checkpoint %d task %d", topology, id, task)
}

func checkTopology(topology string) error {
	if !names.Valid(topology) {
		return fmt.Errorf("checkpoint: topology name %.40q: must be 1-128 letters, digits, '_' or '-': %w", topology, ErrInvalid)
	}
	return nil
}

func checkKey(topology string, id uint64, task uint32) error {
	if err := checkTopology(topology); err != nil {
		return err
	}
	if id == 0 || task == 0 {
		return fmt.Errorf("%s: checkpoint ids and task ids start at 1: %w", where(topology, id, task), ErrInvalid)
	}
	return nil
}

// Envelope, version 1 (integers little-endian):
//
//	off  0  [4]  magic "ARDC"
//	off  4  u8   version (1)
//	off  5  u8   kind: 1 task snapshot, 2 global marker
//	off  6  u16  topology name length n
//	off  8  u64  checkpoint id
//	off 16  u32  task id (0 in a global marker)
//	off 20  u32  CRC-32C (Castagnoli) of the whole envelope with this field 0
//	off 24  u64  data length
//	off 32  n    topology name
//	        data (a global marker has none)
const (
	envMagic    = "ARDC"
	envVersion  = 1
	envHeader   = 32
	kindSnap    = 1
	kindGlobal  = 2
	globalLabel = "global marker"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func seal(kind byte, topology string, id uint64, task uint32, data []byte) []byte {
	b := make([]byte, envHeader, envHeader+len(topology)+len(data))
	copy(b, envMagic)
	b[4] = envVersion
	b[5] = kind
	binary.LittleEndian.PutUint16(b[6:], uint16(len(topology)))
	binary.LittleEndian.PutUint64(b[8:], id)
	binary.LittleEndian.PutUint32(b[16:], task)
	binary.LittleEndian.PutUint64(b[24:], uint64(len(data)))
	b = append(b, topology...)
	b = append(b, data...)
	binary.LittleEndian.PutUint32(b[20:], crc32.Checksum(b, castagnoli))
	return b
}

// unseal checks an envelope against what it must hold and returns the data
// (aliasing b). The error says what is wrong but not where; callers add it.
func unseal(b []byte, kind byte, topology string, id uint64, task uint32) ([]byte, error) {
	if len(b) < envHeader {
		return nil, fmt.Errorf("%d bytes, shorter than the %d-byte header", len(b), envHeader)
	}
	if string(b[:4]) != envMagic {
		return nil, fmt.Errorf("magic %q, want %q", b[:4], envMagic)
	}
	if b[4] != envVersion {
		return nil, fmt.Errorf("envelope version %d, want %d", b[4], envVersion)
	}
	n := int(binary.LittleEndian.Uint16(b[6:]))
	size := binary.LittleEndian.Uint64(b[24:])
	if uint64(len(b)) != envHeader+uint64(n)+size {
		return nil, fmt.Errorf("%d bytes, header says %d (truncated or extended)", len(b), envHeader+uint64(n)+size)
	}
	want := binary.LittleEndian.Uint32(b[20:])
	crc := crc32.Update(0, castagnoli, b[:20])
	crc = crc32.Update(crc, castagnoli, []byte{0, 0, 0, 0})
	crc = crc32.Update(crc, castagnoli, b[24:])
	if crc != want {
		return nil, fmt.Errorf("CRC-32C %08x, recorded %08x", crc, want)
	}
	gotTopo := string(b[envHeader : envHeader+n])
	gotID := binary.LittleEndian.Uint64(b[8:])
	gotTask := binary.LittleEndian.Uint32(b[16:])
	if b[5] != kind || gotTopo != topology || gotID != id || gotTask != task {
		what := fmt.Sprintf("a snapshot of topology %q checkpoint %d task %d", gotTopo, gotID, gotTask)
		if b[5] == kindGlobal {
			what = fmt.Sprintf("the %s of topology %q", globalLabel, gotTopo)
		}
		return nil, fmt.Errorf("holds %s (kind %d)", what, b[5])
	}
	return b[envHeader+n:], nil
}

// openGlobal decodes a global marker: the id is in the header, data empty.
func openGlobal(b []byte, topology string) (uint64, error) {
	if len(b) < envHeader {
		return 0, fmt.Errorf("%d bytes, shorter than the %d-byte header", len(b), envHeader)
	}
	id := binary.LittleEndian.Uint64(b[8:])
	data, err := unseal(b, kindGlobal, topology, id, 0)
	if err != nil {
		return 0, err
	}
	if len(data) != 0 || id == 0 {
		return 0, fmt.Errorf("global marker with %d data bytes and checkpoint %d", len(data), id)
	}
	return id, nil
}

// openMarker decodes the global marker kept beside the snapshots of
// checkpoint id: it must name that checkpoint.
func openMarker(b []byte, topology string, id uint64) error {
	got, err := openGlobal(b, topology)
	if err != nil {
		return err
	}
	if got != id {
		return fmt.Errorf("holds the marker of checkpoint %d", got)
	}
	return nil
}

// markerName is the file or object name of a checkpoint's global marker,
// beside its snapshots.
const markerName = "GLOBAL"

// parseID reads a zero-padded checkpoint id (a directory or name part).
func parseID(s string) (uint64, bool) {
	if len(s) != 20 {
		return 0, false
	}
	id, err := strconv.ParseUint(s, 10, 64)
	return id, err == nil && id != 0
}

// withLast completes Globals: the checkpoints with an intact marker of
// their own (ids), the last global checkpoint (global's), newest first,
// and the damaged markers (bad) joined in an error wrapping ErrCorrupt.
func withLast(ids []uint64, last uint64, lastErr error, bad []error) ([]uint64, error) {
	switch {
	case errors.Is(lastErr, ErrCorrupt):
		bad = append(bad, lastErr)
	case lastErr != nil:
		return nil, lastErr
	case last != 0 && !slices.Contains(ids, last):
		ids = append(ids, last)
	}
	slices.SortFunc(ids, func(a, b uint64) int { return cmp.Compare(b, a) })
	return ids, errors.Join(bad...)
}
