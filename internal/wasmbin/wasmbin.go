// Package wasmbin reads the WebAssembly binary format: LEB128 numbers, the
// module header and the layout of sections. It is Ardea's own (internal):
// the manifest reader, the module rewriter and the daemon's language
// detection all read modules through it, so one decoder, tested and fuzzed
// once, decides what a module's bytes mean, and none of them needs a
// compiler to look inside a module.
package wasmbin

import (
	"errors"
	"fmt"
	"iter"
)

// Header is what a module of the binary format's version 1 starts with:
// the magic "\0asm" and the version as a little-endian u32.
const Header = "\x00asm\x01\x00\x00\x00"

// ErrNotModule is CheckHeader's error for bytes without the magic, which
// are not a WebAssembly module at all (as opposed to one of another
// version).
var ErrNotModule = errors.New("not a WebAssembly module (no \\0asm header)")

// CheckHeader checks that module starts with Header: ErrNotModule without
// the magic, an error naming the version for a version other than 1.
func CheckHeader(module []byte) error {
	if len(module) < len(Header) || string(module[:4]) != Header[:4] {
		return ErrNotModule
	}
	if v := module[4:len(Header)]; string(v) != Header[4:] {
		return fmt.Errorf("unsupported binary version % x (want 01 00 00 00)", v)
	}
	return nil
}

// Section locates one section in a module: an id byte, the content's size
// as a u32 LEB128, the content. Offsets are the module's, so that errors
// can point into the file and a section can be copied byte for byte.
type Section struct {
	ID    byte
	Start int // offset of the id byte
	Body  int // offset of the content (after the size)
	End   int // offset just past the content
}

// Sections yields the sections of module in order, after its header (which
// it does not check: see CheckHeader). A section whose size cannot be read
// or runs past the end of module ends the sequence with an error naming
// its offset; ids are not checked, which is up to the caller.
func Sections(module []byte) iter.Seq2[Section, error] {
	return func(yield func(Section, error) bool) {
		for p := len(Header); p < len(module); {
			start := p
			size, q, err := ReadU32(module, p+1)
			if err != nil {
				yield(Section{}, fmt.Errorf("section at offset %#x: size: %w", start, err))
				return
			}
			if uint64(size) > uint64(len(module)-q) {
				yield(Section{}, fmt.Errorf("section at offset %#x: size %d runs past the end of the module", start, size))
				return
			}
			p = q + int(size)
			if !yield(Section{ID: module[start], Start: start, Body: q, End: p}, nil) {
				return
			}
		}
	}
}

// CustomName splits the content of custom section s (of module) into its
// name and the bytes after it, which belong to whoever knows that name. ok
// is false for a section of another id, or a name that cannot be read.
func (s Section) CustomName(module []byte) (name, rest []byte, ok bool) {
	if s.ID != 0 {
		return nil, nil, false
	}
	name, p, err := ReadName(module[:s.End], s.Body)
	if err != nil {
		return nil, nil, false
	}
	return name, module[p:s.End], true
}
