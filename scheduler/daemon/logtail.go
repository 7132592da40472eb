package daemon

import (
	"bytes"
	"io"
	"os"
	"slices"
)

// tailChunk is how much of a log file tailLines reads per step, from the
// end backwards.
const tailChunk = 64 << 10

// tailLines returns the last n lines of the file at path for which keep
// holds, oldest first. It reads the file backwards in chunks and stops once
// it has n lines, so asking for the tail of a long log costs the tail, not
// the file. A last line without a newline counts as a line.
func tailLines(path string, n int, keep func(string) bool) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	var out []string // newest first
	pos := st.Size()
	var rest []byte // the start of a line whose beginning is not read yet
	buf := make([]byte, tailChunk)
	for pos > 0 && len(out) < n {
		k := int64(len(buf))
		if pos < k {
			k = pos
		}
		pos -= k
		if _, err := f.ReadAt(buf[:k], pos); err != nil && err != io.EOF {
			return nil, err
		}
		data := append(slices.Clone(buf[:k]), rest...)
		rest = nil
		for len(out) < n {
			i := bytes.LastIndexByte(data, '\n')
			if i < 0 {
				rest = data
				break
			}
			if line := string(data[i+1:]); line != "" && keep(line) {
				out = append(out, line)
			}
			data = data[:i]
		}
	}
	if len(out) < n && pos == 0 && len(rest) > 0 && keep(string(rest)) {
		out = append(out, string(rest))
	}
	slices.Reverse(out)
	return out, nil
}
