package wasmbin

import (
	"bytes"
	"testing"
)

// FuzzSections: for any input, Sections must not panic, and the sections
// it yields tile the module from the end of the header: each starts where
// the previous one ended, its content after its size, within the module.
// Without an error the last one ends at the end of the module; an error
// comes last. CustomName must not panic and keeps to its section.
//
// Run with: go test -run '^$' -fuzz FuzzSections ./internal/wasmbin
func FuzzSections(f *testing.F) {
	f.Add([]byte(Header))
	f.Add([]byte(Header + sec(0, "\x09producers\x01\x08language\x01\x02Go\x00") + sec(1, "\x00")))
	f.Add([]byte(Header + sec(10, "\x01\x02\x00\x0b") + "\x00\x7f\x01"))
	f.Add([]byte(Header + "\x01\xff\xff\xff\xff\x1f"))
	f.Add([]byte(Header + "\x00\x81\x80\x80\x80\x00\x00"))
	f.Fuzz(func(t *testing.T, module []byte) {
		orig := bytes.Clone(module)
		end, failed := len(Header), false
		for s, err := range Sections(module) {
			if failed {
				t.Fatal("a section after the error")
			}
			if err != nil {
				failed = true
				continue
			}
			if s.Start != end || s.ID != module[s.Start] || s.Body <= s.Start+1 || s.Body > s.Start+6 || s.End < s.Body || s.End > len(module) {
				t.Fatalf("section %+v after offset %d in %d bytes", s, end, len(module))
			}
			size, p, err := ReadU32(module, s.Start+1)
			if err != nil || p != s.Body || int(size) != s.End-s.Body {
				t.Fatalf("section %+v: size %d ends at %d (%v)", s, size, p, err)
			}
			end = s.End
			name, rest, ok := s.CustomName(module)
			if ok && (s.ID != 0 || len(name)+len(rest) >= s.End-s.Body) {
				t.Fatalf("section %+v: name %q and %d bytes", s, name, len(rest))
			}
		}
		if !failed && len(module) > len(Header) && end != len(module) {
			t.Fatalf("sections end at %d of %d bytes, no error", end, len(module))
		}
		if !bytes.Equal(module, orig) {
			t.Fatal("Sections modified its input")
		}
	})
}

// FuzzLEB: for any input, the decoders must not panic; what ReadU32
// accepts, SkipLEB steps over to the same offset and AppendU32 encodes
// back to the same value in at most as many bytes (LenU32 of them);
// DecodeS32 and DecodeS64 agree, and AppendS32 round-trips.
//
// Run with: go test -run '^$' -fuzz FuzzLEB ./internal/wasmbin
func FuzzLEB(f *testing.F) {
	for _, b := range [][]byte{
		{0x00}, {0x7f}, {0x80, 0x01}, {0xff, 0xff, 0xff, 0xff, 0x0f}, {0x80, 0x80, 0x80, 0x80, 0x10},
		{0x80, 0x80, 0x80, 0x80, 0x78}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00},
		bytes.Repeat([]byte{0x80}, 11), {0x03, 'a', 'b', 'c'},
	} {
		f.Add(b, 0)
	}
	f.Fuzz(func(t *testing.T, b []byte, p int) {
		if p < 0 || p > len(b) {
			return
		}
		v, next, err := ReadU32(b, p)
		skip, serr := SkipLEB(b, p)
		if err == nil {
			if serr != nil || skip != next || next-p > 5 {
				t.Fatalf("ReadU32 ends at %d, SkipLEB at %d (%v)", next, skip, serr)
			}
			enc := AppendU32(nil, v)
			if len(enc) != LenU32(v) || len(enc) > next-p {
				t.Fatalf("%d: encoding % x (LenU32 %d) from % x", v, enc, LenU32(v), b[p:next])
			}
			if w, n, err := ReadU32(enc, 0); w != v || n != len(enc) || err != nil {
				t.Fatalf("% x decodes as %d, %d, %v, want %d", enc, w, n, err, v)
			}
		}
		if name, np, err := ReadName(b, p); err == nil && (np > len(b) || np-len(name) != next) {
			t.Fatalf("name %q ends at %d, its length at %d", name, np, next)
		}
		s64, ok64 := DecodeS64(b[p:])
		s32, ok32 := DecodeS32(b[p:])
		if ok32 && (!ok64 || int64(s32) != s64) {
			t.Fatalf("DecodeS32(% x) = %d, DecodeS64 = %d, %v", b[p:], s32, s64, ok64)
		}
		if ok32 {
			enc := AppendS32(nil, s32)
			if w, ok := DecodeS32(enc); !ok || w != s32 || len(enc) > len(b)-p {
				t.Fatalf("AppendS32(%d) = % x, decodes as %d, %v", s32, enc, w, ok)
			}
		}
	})
}
