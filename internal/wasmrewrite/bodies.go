package wasmrewrite

import (
	"errors"
	"fmt"
	"math"

	"github.com/ardea-dev/ardea/internal/wasmbin"
)

// rewriteBodies returns a copy of the module with each function body's
// instructions passed through fn, and the sum of fn's counts. fn gets the
// body (wasm up to the body's end), the offset of its first instruction
// and a buffer to append to; it returns the new instructions (locals are
// kept) or nil to keep the body as it is.
func rewriteBodies(wasm []byte, fn func(body []byte, p int, dst []byte) ([]byte, int, error)) ([]byte, int, error) {
	secs, err := splitSections(wasm)
	if err != nil {
		return nil, 0, err
	}
	var importedFuncs uint32
	codeSec := -1
	for i, s := range secs {
		switch s.ID {
		case secImport:
			var mi moduleInfo
			if err := mi.scanImports(wasm[s.Body:s.End]); err != nil {
				return nil, 0, fmt.Errorf("wasmrewrite: import section at offset %#x: %w", s.Start, err)
			}
			importedFuncs = mi.importedFuncs
		case secCode:
			codeSec = i
		}
	}
	if codeSec < 0 {
		return append([]byte(nil), wasm...), 0, nil
	}
	s := secs[codeSec]
	sec := wasm[:s.End]
	count, p, err := wasmbin.ReadU32(sec, s.Body)
	if err != nil {
		return nil, 0, fmt.Errorf("wasmrewrite: code section at offset %#x: function count: %w", s.Start, err)
	}
	// The count keeps its encoding: only what changes is re-encoded.
	code := append(make([]byte, 0, s.End-s.Body+s.End/16), wasm[s.Body:p]...)
	var buf []byte
	total, changed := 0, false
	for i := uint32(0); i < count; i++ {
		fnIdx := uint64(importedFuncs) + uint64(i)
		size, start, err := wasmbin.ReadU32(sec, p)
		if err == nil && uint64(size) > uint64(len(sec)-start) {
			err = wasmbin.ErrTruncated
		}
		if err != nil {
			return nil, 0, fmt.Errorf("wasmrewrite: function %d (code entry %d) at offset %#x: body size: %w", fnIdx, i, p, err)
		}
		end := start + int(size)
		ins, err := skipLocals(wasm[:end], start)
		if err != nil {
			return nil, 0, fmt.Errorf("wasmrewrite: function %d (code entry %d) at offset %#x: locals: %w", fnIdx, i, start, err)
		}
		newIns, k, err := fn(wasm[:end], ins, buf[:0])
		if err != nil {
			var be *bodyError
			off := start
			if errors.As(err, &be) {
				off = be.off
			}
			return nil, 0, fmt.Errorf("wasmrewrite: function %d (code entry %d): %w at offset %#x (body offset %d)",
				fnIdx, i, err, off, off-start)
		}
		if newIns == nil {
			code = append(code, wasm[p:end]...)
		} else {
			newSize := uint64(ins-start) + uint64(len(newIns))
			if newSize > math.MaxUint32 {
				return nil, 0, fmt.Errorf("wasmrewrite: function %d (code entry %d): rewritten body too large", fnIdx, i)
			}
			code = wasmbin.AppendU32(code, uint32(newSize))
			code = append(code, wasm[start:ins]...)
			code = append(code, newIns...)
			buf = newIns
			total += k
			changed = true
		}
		p = end
	}
	if p != s.End {
		return nil, 0, fmt.Errorf("wasmrewrite: code section at offset %#x: %d bytes after the last function body", s.Start, s.End-p)
	}
	if !changed {
		// Byte for byte, even where a size is not encoded in the fewest
		// bytes (appendSectionHeader would shorten it).
		return append([]byte(nil), wasm...), 0, nil
	}
	if uint64(len(code)) > math.MaxUint32 {
		return nil, 0, errors.New("wasmrewrite: code section too large")
	}
	out := make([]byte, 0, len(wasm)+len(code)-(s.End-s.Body))
	out = append(out, wasm[:s.Start]...)
	out = appendSectionHeader(out, secCode, len(code))
	out = append(out, code...)
	out = append(out, wasm[s.End:]...)
	return out, total, nil
}
