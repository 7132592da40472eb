package manifest

import (
	"fmt"

	"github.com/ardea-dev/ardea/internal/wasmbin"
)

// A module's sections, read without compiling it (package wasmbin).

// sections returns module's sections, or an error if it is not a module
// of version 1 or a section runs past its end.
func sections(module []byte) ([]wasmbin.Section, error) {
	if err := wasmbin.CheckHeader(module); err != nil {
		return nil, err
	}
	var out []wasmbin.Section
	for s, err := range wasmbin.Sections(module) {
		if err != nil {
			return nil, fmt.Errorf("malformed WebAssembly module: %w", err)
		}
		out = append(out, s)
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
		if s.ID == 10 {
			return int64(s.End - s.Body), nil
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
		name, rest, nok := s.CustomName(module)
		if !nok || string(name) != SectionName {
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
	out = append(out, module[:len(wasmbin.Header)]...)
	for _, s := range secs {
		if name, _, ok := s.CustomName(module); ok && string(name) == SectionName {
			continue
		}
		out = append(out, module[s.Start:s.End]...)
	}
	body := wasmbin.AppendU32(nil, uint32(len(SectionName)))
	body = append(body, SectionName...)
	body = append(body, data...)
	out = append(out, 0)
	out = wasmbin.AppendU32(out, uint32(len(body)))
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
		if s.ID != 7 {
			continue
		}
		if err := readExports(module[s.Body:s.End], ex); err != nil {
			return nil, fmt.Errorf("malformed export section: %w", err)
		}
	}
	return ex, nil
}

// readExports adds the entries of export section content c to ex.
func readExports(c []byte, ex map[string]byte) error {
	n, p, err := wasmbin.ReadU32(c, 0)
	for ; err == nil && n > 0; n-- {
		var name []byte
		if name, p, err = wasmbin.ReadName(c, p); err != nil {
			break
		}
		if p >= len(c) {
			return wasmbin.ErrTruncated
		}
		kind := c[p]
		if _, p, err = wasmbin.ReadU32(c, p+1); err == nil { // index
			ex[string(name)] = kind
		}
	}
	return err
}
