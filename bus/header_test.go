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
		kind     MsgKind
		dst, src uint32
		sentAt   int64
		payload  []byte
		tuples   int
	}{
		{MsgData, 3, 7, 1_700_000_000_123_456_789, batch, 2},
		{MsgEOS, 1, 2, 0, nil, 0},
		{MsgEOS, 0xFFFFFFFE, 0xFFFFFFFD, -5, nil, 0},
		{MsgMark, 4, 9, 1_796_237_881_235_120_095, nil, 0},
		{MsgBarrier, 4, 9, 77, nil, 0},
	} {
		msg := append(AppendHeader(nil, c.kind, c.dst, c.src, c.sentAt), c.payload...)
		h, p, err := DecodeHeader(msg)
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

// withRoots appends a roots trailer to a data message and sets FlagRoots.
func withRoots(msg, entries []byte) []byte {
	msg = append(append([]byte(nil), msg...), entries...)
	msg = binary.LittleEndian.AppendUint32(msg, uint32(len(entries)+4))
	binary.LittleEndian.PutUint16(msg[2:], FlagRoots)
	return msg
}

func TestHeaderRoots(t *testing.T) {
	batch := abiBatch(values("a", 1), values("bb", 2))
	roots := appendRootsEntry(nil, 0x1111, []acker.RootID{{SpoutTask: 3, Key: 9}})
	roots = appendRootsEntry(roots, 0x2222, []acker.RootID{{SpoutTask: 3, Key: 9}, {SpoutTask: 4, Key: 10}})
	msg := withRoots(append(AppendHeader(nil, MsgData, 5, 6, 7), batch...), roots)
	h, p, err := DecodeHeader(msg)
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
	good := append(AppendHeader(nil, MsgData, 3, 4, 99), abiBatch(values("a", 1))...)
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for name, msg := range map[string][]byte{
		"empty":          nil,
		"short header":   good[:HeaderLen-1],
		"version":        mut(func(b []byte) []byte { b[0] = 2; return b }),
		"flags":          mut(func(b []byte) []byte { b[2] = 2; return b }),
		"roots on eos":   withRoots(AppendHeader(nil, MsgEOS, 1, 2, 0), appendRootsEntry(nil, 1, []acker.RootID{{SpoutTask: 1, Key: 1}})),
		"roots too long": mut(func(b []byte) []byte { return binary.LittleEndian.AppendUint32(withRoots(b, nil)[:len(b)], 1<<20) }),
		"roots too short": mut(func(b []byte) []byte {
			return withRoots(b, nil) // trailer of 4 bytes: no entry
		}),
		"kind 0":          mut(func(b []byte) []byte { b[1] = 0; return b }),
		"kind 3":          mut(func(b []byte) []byte { b[1] = 3; return b }),
		"dst 0":           mut(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[4:], 0); return b }),
		"src 0":           mut(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 0); return b }),
		"no batch count":  good[:HeaderLen+2],
		"zero records":    mut(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[HeaderLen:], 0); return b[:HeaderLen+4] }),
		"huge count":      mut(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[HeaderLen:], 0xFFFFFFFF); return b }),
		"eos payload":     append(AppendHeader(nil, MsgEOS, 1, 2, 0), 1),
		"mark payload":    append(AppendHeader(nil, MsgMark, 1, 2, 42), 1),
		"barrier payload": append(AppendHeader(nil, MsgBarrier, 1, 2, 42), 1),
		"kind 5":          mut(func(b []byte) []byte { b[1] = 5; return b[:HeaderLen] }),
	} {
		if _, _, err := DecodeHeader(msg); !errors.Is(err, ErrBadMessage) {
			t.Errorf("%s: error %v, want ErrBadMessage", name, err)
		}
	}
}

func FuzzDecodeHeader(f *testing.F) {
	f.Add(append(AppendHeader(nil, MsgData, 3, 4, 99), abiBatch(values("a", 1), values("b", 2))...))
	f.Add(AppendHeader(nil, MsgEOS, 1, 2, 3))
	f.Add(AppendHeader(nil, MsgMark, 1, 2, 3))
	f.Add([]byte{1, 1, 0, 0})
	f.Add(make([]byte, HeaderLen+4))
	f.Add(withRoots(append(AppendHeader(nil, MsgData, 3, 4, 99), abiBatch(values("a", 1))...), appendRootsEntry(nil, 7, []acker.RootID{{SpoutTask: 1, Key: 2}})))
	f.Fuzz(func(t *testing.T, msg []byte) {
		h, p, err := DecodeHeader(msg)
		if err != nil {
			if !errors.Is(err, ErrBadMessage) {
				t.Fatalf("error %v does not wrap ErrBadMessage", err)
			}
			return
		}
		// A decoded message re-encodes to the same bytes.
		again := append(AppendHeader(nil, h.Kind, h.Dst, h.Src, h.SentAt), p...)
		if h.Roots != nil {
			again = withRoots(again, h.Roots)
		}
		if !bytes.Equal(again, msg) {
			t.Fatalf("re-encoded %x, want %x", again, msg)
		}
		if h.Kind == MsgData {
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
	for _, c := range []Ctrl{
		{Kind: CtrlHello, From: 3, Epoch: 7},
		{Kind: CtrlOpen, From: 1, Epoch: 0xdeadbeef, Entries: []CtrlEntry{{4, 1 << 20}, {9, 1 << 20}}},
		{Kind: CtrlGrant, From: 2, Epoch: 1, Entries: []CtrlEntry{{5, 123}}},
	} {
		msg := AppendCtrl(nil, c)
		got, err := DecodeCtrl(msg, nil)
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
		if _, err := DecodeCtrl(msg, nil); !errors.Is(err, ErrBadMessage) {
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
