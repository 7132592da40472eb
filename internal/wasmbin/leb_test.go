package wasmbin

import (
	"bytes"
	"math"
	"testing"
)

func TestReadU32(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		p    int
		want uint32
		next int
		err  error
	}{
		{"zero", []byte{0x00}, 0, 0, 1, nil},
		{"one byte max", []byte{0x7f}, 0, 0x7f, 1, nil},
		{"two bytes", []byte{0x80, 0x01}, 0, 0x80, 2, nil},
		{"max u32", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 0, math.MaxUint32, 5, nil},
		{"overlong zero (allowed up to 5 bytes)", []byte{0x80, 0x80, 0x80, 0x80, 0x00}, 0, 0, 5, nil},
		{"overlong one", []byte{0x81, 0x80, 0x00}, 0, 1, 3, nil},
		{"at an offset, trailing bytes kept", []byte{0xaa, 0xe5, 0x8e, 0x26, 0xbb}, 1, 624485, 4, nil},
		{"fifth byte overflow", []byte{0x80, 0x80, 0x80, 0x80, 0x10}, 0, 0, 5, ErrU32Range},
		{"fifth byte continues", []byte{0xff, 0xff, 0xff, 0xff, 0x8f, 0x00}, 0, 0, 5, ErrU32Range},
		{"six bytes", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 0, 0, 5, ErrU32Range},
		{"empty", nil, 0, 0, 0, ErrTruncated},
		{"offset at the end", []byte{0x01}, 1, 0, 1, ErrTruncated},
		{"truncated", []byte{0x80}, 0, 0, 1, ErrTruncated},
		{"truncated after four", []byte{0xff, 0xff, 0xff, 0xff}, 0, 0, 4, ErrTruncated},
	}
	for _, tc := range tests {
		v, next, err := ReadU32(tc.in, tc.p)
		if v != tc.want || next != tc.next || err != tc.err {
			t.Errorf("%s: ReadU32(% x, %d) = %d, %d, %v; want %d, %d, %v", tc.name, tc.in, tc.p, v, next, err, tc.want, tc.next, tc.err)
		}
	}
}

func TestU32RoundTrip(t *testing.T) {
	for _, v := range []uint32{0, 1, 0x7F, 0x80, 0x3FFF, 0x4000, 1 << 21, 1 << 28, math.MaxUint32} {
		b := AppendU32(nil, v)
		if len(b) != LenU32(v) {
			t.Errorf("LenU32(%d) = %d, encoding has %d bytes", v, LenU32(v), len(b))
		}
		got, p, err := ReadU32(b, 0)
		if err != nil || got != v || p != len(b) {
			t.Errorf("ReadU32(AppendU32(%d)) = %d, %d, %v", v, got, p, err)
		}
	}
	for _, b := range [][]byte{{0x80, 0x80, 0x80, 0x80, 0x10}, {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}, {0x80}} {
		if _, _, err := ReadU32(b, 0); err == nil {
			t.Errorf("ReadU32(% x) accepted", b)
		}
	}
	if _, err := SkipLEB(bytes.Repeat([]byte{0x80}, 11), 0); err == nil {
		t.Error("SkipLEB accepted 11 bytes")
	}
}

func TestSkipLEB(t *testing.T) {
	ten := append(bytes.Repeat([]byte{0x80}, 9), 0x01)
	tests := []struct {
		name string
		in   []byte
		p    int
		next int
		err  error
	}{
		{"one byte", []byte{0x7f, 0xff}, 0, 1, nil},
		{"at an offset", []byte{0xff, 0x80, 0x00, 0xff}, 1, 3, nil},
		{"ten bytes (a u64 or s64)", ten, 0, 10, nil},
		{"eleven bytes", bytes.Repeat([]byte{0x80}, 11), 0, 10, ErrLEBTooLong},
		{"empty", nil, 0, 0, ErrTruncated},
		{"truncated", []byte{0x80, 0x80}, 0, 2, ErrTruncated},
	}
	for _, tc := range tests {
		next, err := SkipLEB(tc.in, tc.p)
		if next != tc.next || err != tc.err {
			t.Errorf("%s: SkipLEB(% x, %d) = %d, %v; want %d, %v", tc.name, tc.in, tc.p, next, err, tc.next, tc.err)
		}
	}
}

func TestSigned(t *testing.T) {
	for _, tc := range []struct {
		v   int32
		enc []byte
	}{
		{0, []byte{0x00}}, {1, []byte{0x01}}, {-1, []byte{0x7f}}, {63, []byte{0x3f}},
		{64, []byte{0xc0, 0x00}}, {-64, []byte{0x40}}, {-65, []byte{0xbf, 0x7f}},
		{8191, []byte{0xff, 0x3f}}, {8192, []byte{0x80, 0xc0, 0x00}},
		{math.MaxInt32, []byte{0xff, 0xff, 0xff, 0xff, 0x07}},
		{math.MinInt32, []byte{0x80, 0x80, 0x80, 0x80, 0x78}},
	} {
		if b := AppendS32(nil, tc.v); !bytes.Equal(b, tc.enc) {
			t.Errorf("AppendS32(%d) = % x, want % x", tc.v, b, tc.enc)
		}
		if got, ok := DecodeS32(tc.enc); !ok || got != tc.v {
			t.Errorf("DecodeS32(% x) = %d, %v, want %d", tc.enc, got, ok, tc.v)
		}
		if got, ok := DecodeS64(tc.enc); !ok || got != int64(tc.v) {
			t.Errorf("DecodeS64(% x) = %d, %v, want %d", tc.enc, got, ok, tc.v)
		}
	}
	for _, b := range [][]byte{
		{},                                   // empty
		{0x80},                               // truncated
		{0x01, 0x00},                         // trailing byte
		{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, // six bytes
		{0x80, 0x80, 0x80, 0x80, 0x08},       // 2^31: out of range
		{0xff, 0xff, 0xff, 0xff, 0x77},       // MinInt32 - 1: out of range
	} {
		if v, ok := DecodeS32(b); ok {
			t.Errorf("DecodeS32(% x) = %d, accepted", b, v)
		}
	}
	if v, ok := DecodeS32([]byte{0x81, 0x80, 0x00}); !ok || v != 1 {
		t.Errorf("DecodeS32 of 1 in three bytes = %d, %v", v, ok)
	}
	for _, tc := range []struct {
		enc []byte
		v   int64
		ok  bool
	}{
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00}, math.MaxInt64, true},
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f}, math.MinInt64, true},
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x08}, 1 << 31, true},
		{append(bytes.Repeat([]byte{0x80}, 10), 0x00), 0, false}, // eleven bytes
		{[]byte{0x80, 0x80}, 0, false},                           // truncated
	} {
		if v, ok := DecodeS64(tc.enc); v != tc.v || ok != tc.ok {
			t.Errorf("DecodeS64(% x) = %d, %v, want %d, %v", tc.enc, v, ok, tc.v, tc.ok)
		}
	}
}

func TestReadName(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		p    int
		want string
		next int
		err  error
	}{
		{"name", []byte("\x03abcd"), 0, "abc", 4, nil},
		{"empty", []byte{0x00}, 0, "", 1, nil},
		{"at an offset", []byte("xx\x02hi"), 2, "hi", 5, nil},
		{"runs past the end", []byte("\x05abc"), 0, "", 1, ErrTruncated},
		{"length truncated", []byte{0x80}, 0, "", 1, ErrTruncated},
		{"length too large", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 0, "", 5, ErrTruncated},
	}
	for _, tc := range tests {
		got, next, err := ReadName(tc.in, tc.p)
		if string(got) != tc.want || next != tc.next || err != tc.err {
			t.Errorf("%s: ReadName(% x, %d) = %q, %d, %v; want %q, %d, %v", tc.name, tc.in, tc.p, got, next, err, tc.want, tc.next, tc.err)
		}
	}
}
