package wasmbin

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestCheckHeader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // "" for no error
	}{
		{"version 1", Header, ""},
		{"with sections", Header + "\x00\x00", ""},
		{"empty", "", ErrNotModule.Error()},
		{"magic only", "\x00asm", ErrNotModule.Error()},
		{"not wasm", "hello world", ErrNotModule.Error()},
		{"version 2", "\x00asm\x02\x00\x00\x00", "unsupported binary version 02 00 00 00 (want 01 00 00 00)"},
	}
	for _, tc := range tests {
		err := CheckHeader([]byte(tc.in))
		if got := errString(err); got != tc.want {
			t.Errorf("%s: CheckHeader = %q, want %q", tc.name, got, tc.want)
		}
		if notModule := tc.want == ErrNotModule.Error(); errors.Is(err, ErrNotModule) != notModule {
			t.Errorf("%s: errors.Is(%v, ErrNotModule) = %v", tc.name, err, !notModule)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// sec is a section with the given id and content, its size encoded
// minimally.
func sec(id byte, content string) string {
	return string(AppendU32([]byte{id}, uint32(len(content)))) + content
}

func TestSections(t *testing.T) {
	custom := sec(0, "\x04name\x01\x02")
	tests := []struct {
		name   string
		module string
		want   []Section
		err    string // what the error contains; "" for none
		is     error  // what the error wraps, if anything
	}{
		{"header only", Header, nil, "", nil},
		{"shorter than a header", "\x00as", nil, "", nil},
		{"one section", Header + sec(1, "\x00"), []Section{{1, 8, 10, 11}}, "", nil},
		{"empty section", Header + sec(12, ""), []Section{{12, 8, 10, 10}}, "", nil},
		{"two sections", Header + custom + sec(10, "\x00"),
			[]Section{{0, 8, 10, 17}, {10, 17, 19, 20}}, "", nil},
		{"non-minimal size", Header + "\x01\x81\x80\x00\x00", []Section{{1, 8, 12, 13}}, "", nil},
		{"any id", Header + sec(0xff, ""), []Section{{0xff, 8, 10, 10}}, "", nil},
		{"id without a size", Header + "\x01", nil, "section at offset 0x8: size: truncated", ErrTruncated},
		{"truncated size", Header + "\x01\x80", nil, "section at offset 0x8: size: truncated", ErrTruncated},
		{"size beyond 32 bits", Header + "\x01\xff\xff\xff\xff\x1f", nil,
			"section at offset 0x8: size: LEB128 number does not fit in 32 bits", ErrU32Range},
		{"size runs past the end", Header + "\x00\x7f\x01", nil,
			"section at offset 0x8: size 127 runs past the end of the module", nil},
		{"max size", Header + "\x00\xff\xff\xff\xff\x0f", nil,
			"section at offset 0x8: size 4294967295 runs past the end of the module", nil},
		{"one byte short", Header + custom[:len(custom)-1], nil, "size 7 runs past the end", nil},
		{"after a good section", Header + custom + "\x0a\x02\x00", []Section{{0, 8, 10, 17}},
			"section at offset 0x11: size 2 runs past the end of the module", nil},
	}
	for _, tc := range tests {
		var got []Section
		var err error
		for s, e := range Sections([]byte(tc.module)) {
			if err != nil {
				t.Fatalf("%s: a section after the error", tc.name)
			}
			if e != nil {
				err = e
				continue
			}
			got = append(got, s)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: sections %+v, want %+v", tc.name, got, tc.want)
		}
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: error %v does not wrap %v", tc.name, err, tc.is)
		}
	}
}

func TestSectionsStop(t *testing.T) {
	module := []byte(Header + sec(1, "") + sec(2, "") + "\x03\x7f")
	n := 0
	for range Sections(module) {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("%d sections after break", n)
	}
}

func TestCustomName(t *testing.T) {
	module := []byte(Header + sec(0, "\x09producers\x01\x02") + sec(0, "\x05ab") + sec(0, "") + sec(7, "\x00"))
	type result struct {
		name, rest string
		ok         bool
	}
	want := []result{{"producers", "\x01\x02", true}, {"", "", false}, {"", "", false}, {"", "", false}}
	var got []result
	for s, err := range Sections(module) {
		if err != nil {
			t.Fatal(err)
		}
		name, rest, ok := s.CustomName(module)
		got = append(got, result{string(name), string(rest), ok})
	}
	if !slices.Equal(got, want) {
		t.Fatalf("CustomName: %+v, want %+v", got, want)
	}
	// The name must end within its section, not within the module.
	module = []byte(Header + sec(0, "\x04ab") + sec(1, "cd"))
	for s := range Sections(module) {
		if _, _, ok := s.CustomName(module); ok {
			t.Fatalf("CustomName read a name past the end of section %+v", s)
		}
	}
}
