package manifest

import (
	"errors"
	"fmt"
)

// A module's sections, read without compiling it (the binary format's
// section layout: id u8, size u32 LEB128, body).

var wasmHeader = []byte("\x00asm\x01\x00\x00\x00")

type section struct {
	id         byte
	start, end int // the whole section, id byte included
	body       []byte
}

func sections(module []byte) ([]section, error) {
	if len(module) < 8 || string(module[:8]) != string(wasmHeader) {
		return nil, errors.New("not a WebAssembly module (no \\0asm version 1 header)")
	}
	var out []section
	off := 8
	for off < len(module) {
		start := off
		id := module[off]
		n, k := uleb32(module[off+1:])
		if k == 0 || uint64(off+1+k)+uint64(n) > uint64(len(module)) {
			return nil, fmt.Errorf("malformed WebAssembly module: section at byte %d runs past the end", start)
		}
		off += 1 + k
		out = append(out, section{id: id, start: start, end: off + int(n), body: module[off : off+int(n)]})
		off += int(n)
	}
	return out, nil
}

// CodeBytes is the size of a module's code section (what compiling costs).
func CodeBytes(module []byte) (int64, error) {
	secs, err := sections(module)
	if err != nil {
		return 0, err
	}
	for _, s := range secs {
		if s.id == 10 {
			return int64(len(s.body)), nil
		}
	}
	return 0, nil
}

// Section returns the body of the manifest's custom section, if the module
// has one. More than one is an error.
func Section(module []byte) ([]byte, bool, error) {
	secs, err := sections(module)
	if err != nil {
		return nil, false, err
	}
	var found []byte
	ok := false
	for _, s := range secs {
		if s.id != 0 {
			continue
		}
		name, rest, nok := wasmName(s.body)
		if !nok || name != SectionName {
			continue
		}
		if ok {
			return nil, false, fmt.Errorf("module has two %q custom sections", SectionName)
		}
		found, ok = rest, true
	}
	return found, ok, nil
}

// WithSection returns module with the custom section "ardea.manifest"
// holding data appended at its end. Every other byte is kept as it is; a
// previous manifest section is removed.
func WithSection(module, data []byte) ([]byte, error) {
	secs, err := sections(module)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(module)+len(data)+32)
	out = append(out, module[:8]...)
	for _, s := range secs {
		if s.id == 0 {
			if name, _, ok := wasmName(s.body); ok && name == SectionName {
				continue
			}
		}
		out = append(out, module[s.start:s.end]...)
	}
	body := appendULEB(nil, uint32(len(SectionName)))
	body = append(body, SectionName...)
	body = append(body, data...)
	out = append(out, 0)
	out = appendULEB(out, uint32(len(body)))
	return append(out, body...), nil
}

// Exports lists a module's exports by name with their kind (0 function, 1
// table, 2 memory, 3 global).
func Exports(module []byte) (map[string]byte, error) {
	secs, err := sections(module)
	if err != nil {
		return nil, err
	}
	ex := map[string]byte{}
	for _, s := range secs {
		if s.id != 7 {
			continue
		}
		b := s.body
		n, k := uleb32(b)
		if k == 0 {
			return nil, errors.New("malformed export section")
		}
		b = b[k:]
		for range n {
			name, rest, ok := wasmName(b)
			if !ok || len(rest) < 1 {
				return nil, errors.New("malformed export section")
			}
			kind := rest[0]
			_, k := uleb32(rest[1:])
			if k == 0 {
				return nil, errors.New("malformed export section")
			}
			ex[name] = kind
			b = rest[1+k:]
		}
	}
	return ex, nil
}

func uleb32(b []byte) (uint32, int) {
	var v uint32
	for i := 0; i < len(b) && i < 5; i++ {
		v |= uint32(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

func appendULEB(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func wasmName(b []byte) (string, []byte, bool) {
	n, k := uleb32(b)
	if k == 0 || uint64(k)+uint64(n) > uint64(len(b)) {
		return "", nil, false
	}
	return string(b[k : k+int(n)]), b[k+int(n):], true
}
