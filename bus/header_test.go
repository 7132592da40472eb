package bus

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/ardea-dev/ardea/internal/acker"
	"github.com/ardea-dev/ardea/internal/tuple"
)

func abiBatch(recs ...[]byte) []byte {
	var w tuple.BatchWriter
	w.Reset()
	for i, v := range recs {
		w.Append(uint16(i), 7, 0, v)
	}
	return append([]byte(nil), w.Buf...)
}

func TestHeaderRoundTrip(t *testing.T) {
	batch := abiBatch(values("a", 1), values("bb", 2))
	for _, c := range []struct {
		kind     msgKind
		dst, src uint32
		sentAt   int64
		payload  []byte
		tuples   int
	}{
		{msgData, 3, 7, 1_700_000_000_123_456_789, batch, 2},
		{msgEOS, 1, 2, 0, nil, 0},
		{msgEOS, 0xFFFFFFFE, 0xFFFFFFFD, -5, nil, 0},
		{msgMark, 4, 9, 1_796_237_881_235_120_095, nil, 0},
		{msgBarrier, 4, 9, 77, nil, 0},
	} {
		msg := append(appendHeader(nil, c.kind, c.dst, c.src, c.sentAt), c.payload...)
		h, p, err := decodeHeader(msg)
		if err != nil {
			t.Fatalf("%v: %v", c.kind, err)
		}
		if h.Roots != nil || h.Kind != c.kind || h.Dst != c.dst || h.Src != c.src || h.SentAt != c.sentAt || h.Tuples != c.tuples {
			t.Errorf("decoded %+v", h)
		}
		if !bytes.Equal(p, c.payload) {
			t.Errorf("%v: payload %x, want %x", c.kind, p, c.payload)
		}
	}
}

// withRoots appends a roots trailer to a data message and sets flagRoots.
func withRoots(msg, entries []byte) []byte {
	msg = append(append([]byte(nil), msg...), entries...)
	msg = binary.LittleEndian.AppendUint32(msg, uint32(len(entries)+4))
	binary.LittleEndian.PutUint16(msg[2:], flagRoots)
	return msg
}

func TestHeaderRoots(t *testing.T) {
	batch := abiBatch(values("a", 1), values("bb", 2))
	roots := appendRootsEntry(nil, 0x1111, []acker.RootID{{SpoutTask: 3, Key: 9}})
	roots = appendRootsEntry(roots, 0x2222, []acker.RootID{{SpoutTask: 3, Key: 9}, {SpoutTask: 4, Key: 10}})
	msg := withRoots(append(appendHeader(nil, msgData, 5, 6, 7), batch...), roots)
	h, p, err := decodeHeader(msg)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p, batch) || !bytes.Equal(h.Roots, roots) || h.Tuples != 2 {
		t.Fatalf("batch %x roots %x tuples %d", p, h.Roots, h.Tuples)
	}
	a := acker.NewAnchors(nil)
	if _, err := registerRoots(a, h.Roots, nil); err != nil {
		t.Fatal(err)
	}
	if !a.InFlight(0x1111) || !a.InFlight(0x2222) || a.Len() != 2 {
		t.Fatalf("anchors hold %d inputs", a.Len())
	}
	for name, tr := range map[string][]byte{
		"no roots":  appendRootsEntry(nil, 1, nil),
		"truncated": roots[:len(roots)-3],
		"short":     roots[:5],
	} {
		if _, err := registerRoots(acker.NewAnchors(nil), tr, nil); err == nil {
			t.Errorf("%s: registered a malformed trailer", name)
		}
	}
}

func TestHeaderErrors(t *testing.T) {
	good := append(appendHeader(nil, msgData, 3, 4, 99), abiBatch(values("a", 1))...)
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for name, msg := range map[string][]byte{
		"empty":          nil,
		"short header":   good[:headerLen-1],
		"version":        mut(func(b []byte) []byte { b[0] = 2; return b }),
		"flags":          mut(func(b []byte) []byte { b[2] = 2; return b }),
		"roots on eos":   withRoots(appendHeader(nil, msgEOS, 1, 2, 0), appendRootsEntry(nil, 1, []acker.RootID{{SpoutTask: 1, Key: 1}})),
		"roots too long": mut(func(b []byte) []byte { return binary.LittleEndian.AppendUint32(withRoots(b, nil)[:len(b)], 1<<20) }),
		"roots too short": mut(func(b []byte) []byte {
			return withRoots(b, nil) // trailer of 4 bytes: no entry
		}),
		"kind 0":          mut(func(b []byte) []byte { b[1] = 0; return b }),
		"kind 3":          mut(func(b []byte) []byte { b[1] = 3; return b }),
		"dst 0":           mut(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[4:], 0); return b }),
		"src 0":           mut(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 0); return b }),
		"no batch count":  good[:headerLen+2],
		"zero records":    mut(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[headerLen:], 0); return b[:headerLen+4] }),
		"huge count":      mut(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[headerLen:], 0xFFFFFFFF); return b }),
		"eos payload":     append(appendHeader(nil, msgEOS, 1, 2, 0), 1),
		"mark payload":    append(appendHeader(nil, msgMark, 1, 2, 42), 1),
		"barrier payload": append(appendHeader(nil, msgBarrier, 1, 2, 42), 1),
		"kind 5":          mut(func(b []byte) []byte { b[1] = 5; return b[:headerLen] }),
	} {
		if _, _, err := decodeHeader(msg); !errors.Is(err, errBadMessage) {
			t.Errorf("%s: error %v, want ErrBadMessage", name, err)
		}
	}
}

func FuzzDecodeHeader(f *testing.F) {
	f.Add(append(appendHeader(nil, msgData, 3, 4, 99), abiBatch(values("a", 1), values("b", 2))...))
	f.Add(appendHeader(nil, msgEOS, 1, 2, 3))
	f.Add(appendHeader(nil, msgMark, 1, 2, 3))
	f.Add([]byte{1, 1, 0, 0})
	f.Add(make([]byte, headerLen+4))
	f.Add(withRoots(append(appendHeader(nil, msgData, 3, 4, 99), abiBatch(values("a", 1))...), appendRootsEntry(nil, 7, []acker.RootID{{SpoutTask: 1, Key: 2}})))
	f.Fuzz(func(t *testing.T, msg []byte) {
		h, p, err := decodeHeader(msg)
		if err != nil {
			if !errors.Is(err, errBadMessage) {
				t.Fatalf("error %v does not wrap ErrBadMessage", err)
			}
			return
		}
		// A decoded message re-encodes to the same bytes.
		again := append(appendHeader(nil, h.Kind, h.Dst, h.Src, h.SentAt), p...)
		if h.Roots != nil {
			again = withRoots(again, h.Roots)
		}
		if !bytes.Equal(again, msg) {
			t.Fatalf("re-encoded %x, want %x", again, msg)
		}
		if h.Kind == msgData {
			r, err := tuple.NewBatchReader(p)
			if err != nil || r.Count() != h.Tuples {
				t.Fatalf("batch reader: %v, count %d vs %d", err, r.Count(), h.Tuples)
			}
			// Walking the records never panics (errors are fine).
			for {
				_, ok, err := r.Next()
				if !ok || err != nil {
					break
				}
			}
		}
	})
}

func TestCtrlRoundTrip(t *testing.T) {
	for _, c := range []ctrl{
		{Kind: ctrlHello, From: 3, Epoch: 7},
		{Kind: ctrlOpen, From: 1, Epoch: 0xdeadbeef, Entries: []ctrlEntry{{4, 1 << 20}, {9, 1 << 20}}},
		{Kind: ctrlGrant, From: 2, Epoch: 1, Entries: []ctrlEntry{{5, 123}}},
	} {
		msg := appendCtrl(nil, c)
		got, err := decodeCtrl(msg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.Kind != c.Kind || got.From != c.From || got.Epoch != c.Epoch || len(got.Entries) != len(c.Entries) {
			t.Fatalf("got %+v, want %+v", got, c)
		}
		for i := range c.Entries {
			if got.Entries[i] != c.Entries[i] {
				t.Fatalf("entry %d: %+v", i, got.Entries[i])
			}
		}
	}
	for name, msg := range map[string][]byte{
		"short":    {1, 1, 0},
		"version":  {2, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0},
		"kind":     {1, 4, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0},
		"count":    {1, 3, 2, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0},
		"no epoch": {1, 1, 0, 0, 1, 0, 0, 0},
	} {
		if _, err := decodeCtrl(msg, nil); !errors.Is(err, errBadMessage) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestPendingBatchMatchesBatchWriter checks that the bus's in-place batch
// encodes exactly what tuple.BatchWriter does (the ABI v1 batch).
func TestPendingBatchMatchesBatchWriter(t *testing.T) {
	var w tuple.BatchWriter
	w.Reset()
	b := &pendingBatch{}
	b.reset()
	for i := range 50 {
		v := values(string(make([]byte, i)), int64(i))
		w.Append(uint16(i%3), 42, 0, v)
		b.add(uint16(i%3), 42, 0, v, nil)
	}
	if !bytes.Equal(b.batch(), w.Buf) || b.count != w.Count {
		t.Fatal("pendingBatch and tuple.BatchWriter disagree")
	}
	b.reset()
	w.Reset()
	if !bytes.Equal(b.batch(), w.Buf) {
		t.Fatal("empty batches disagree")
	}
}
