package acker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"
)

func TestWireRoundTrip(t *testing.T) {
	b := NewBatch(3)
	if _, got, err := DecodeMessage(b.Bytes(), nil); err != nil || len(got) != 0 {
		t.Fatalf("empty message: %v %v", got, err)
	}
	want := []Entry{
		{Op: OpUpdate, Root: RootID{1, 0xdeadbeef}, Xor: 0x0123456789abcdef},
		{Op: OpFail, Root: RootID{0xffffffff, 1}, Xor: 0xffffffff},
		{Op: OpUpdate, Root: RootID{7, ^uint64(0)}, Xor: 0},
	}
	b.Update(want[0].Root, want[0].Xor)
	b.Fail(want[1].Root, 0xffffffff)
	b.Add(want[2])
	if b.Len() != 3 || len(b.Bytes()) != WireHeaderSize+3*WireEntrySize {
		t.Fatalf("len %d, %d bytes", b.Len(), len(b.Bytes()))
	}
	prefix := []Entry{{Op: OpFail, Root: RootID{9, 9}}}
	from, got, err := DecodeMessage(b.Bytes(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	if from != 3 || !slices.Equal(got[1:], want) || got[0] != prefix[0] {
		t.Fatalf("from %d entries %v, want 3 %v", from, got, want)
	}
	b.Reset()
	b.Add(Entry{Op: OpFail, Root: RootID{2, 2}, Xor: 1<<32 | 99}) // a fail's Xor is its task: 32 bits
	if _, got, err := DecodeMessage(b.Bytes(), nil); err != nil || len(got) != 1 || got[0].Xor != 99 {
		t.Fatalf("after Reset: %v %v", got, err)
	}
}

func TestWireRefuses(t *testing.T) {
	good := NewBatch(1)
	good.Update(RootID{1, 2}, 3)
	valid := good.Bytes()
	mod := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(valid)) }
	tests := []struct {
		name string
		msg  []byte
		want string
	}{
		{"empty", nil, "shorter than"},
		{"short header", valid[:11], "shorter than"},
		{"version", mod(func(b []byte) []byte { b[0] = 2; return b }), "version 2"},
		{"flags", mod(func(b []byte) []byte { b[1] = 1; return b }), "must be 0"},
		{"reserved", mod(func(b []byte) []byte { b[3] = 1; return b }), "must be 0"},
		{"container 0", mod(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[4:], 0); return b }), "container 0"},
		{"count too high", mod(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 2); return b }), "2 entries need 42 bytes, have 21"},
		{"huge count", mod(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 0xffffffff); return b }), "entries need"},
		{"trailing byte", append(bytes.Clone(valid), 0), "need 21 bytes, have 22"},
		{"op", mod(func(b []byte) []byte { b[12] = 3; return b }), "unknown op 3"},
		{"task 0", mod(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[13:], 0); return b }), "must be nonzero"},
		{"key 0", mod(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[17:], 0); return b }), "must be nonzero"},
		{"fail by a task beyond 32 bits", mod(func(b []byte) []byte { b[12] = byte(OpFail); b[29] = 1; return b }), "names task"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := []Entry{{Op: OpFail, Root: RootID{5, 5}}}
			_, got, err := DecodeMessage(tc.msg, dst)
			if !errors.Is(err, ErrBadMessage) || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
				t.Fatalf("error %v, want ErrBadMessage with %q", err, tc.want)
			}
			if len(got) != 1 {
				t.Fatalf("entries %v returned with an error", got)
			}
		})
	}
}

// FuzzDecodeMessage: DecodeMessage never panics, and whatever it accepts
// re-encodes to the same bytes.
func FuzzDecodeMessage(f *testing.F) {
	b := NewBatch(2)
	f.Add(b.Bytes())
	b.Update(RootID{1, 2}, 3)
	b.Fail(RootID{4, 5}, 0)
	f.Add(bytes.Clone(b.Bytes()))
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, msg []byte) {
		from, entries, err := DecodeMessage(msg, nil)
		if err != nil {
			if !errors.Is(err, ErrBadMessage) || len(entries) != 0 {
				t.Fatalf("error %v with %d entries", err, len(entries))
			}
			return
		}
		re := NewBatch(from)
		for _, e := range entries {
			re.Add(e)
		}
		if !bytes.Equal(re.Bytes(), msg) {
			t.Fatalf("round trip:\n got %x\nwant %x", re.Bytes(), msg)
		}
	})
}
