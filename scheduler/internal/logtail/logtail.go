// Package logtail reads the end of a container's log file (one line per
// record, the hosts' JSON lines and whatever else the process wrote), a
// page at a time: the daemon's logs API reads a local container's log
// with it, and a cluster's node reads one for a topology manager on
// another node (scheduler/internal/placement's OpLogs).
package logtail

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"slices"
)

// chunk is how much of a log file Tail reads per step, from the end
// backwards.
const chunk = 64 << 10

// Filter selects log lines: every line, or the JSON lines of Component
// only if it is set (and of its task Task if that is not 0).
type Filter struct {
	Component string `json:"component,omitempty"`
	Task      uint32 `json:"task,omitempty"`
}

// Keep reports whether f selects line.
func (f Filter) Keep(line string) bool {
	if f.Component == "" {
		return true
	}
	var rec map[string]any
	if json.Unmarshal([]byte(line), &rec) != nil {
		return false
	}
	if rec["component"] != f.Component {
		return false
	}
	if f.Task == 0 {
		return true
	}
	n, ok := rec["task"].(float64)
	return ok && uint32(n) == f.Task
}

// Page is a part of a log file's tail.
type Page struct {
	// Lines are the selected lines, oldest first.
	Lines []string `json:"lines,omitempty"`
	// Start is the offset where the page's reading stopped: the oldest
	// line's start, or the end of a line left out for the size limit.
	// The next, earlier page ends there; 0 when the file's beginning
	// was reached.
	Start int64 `json:"start"`
	// Cut: the page's only line was longer than the size limit and is
	// cut to it.
	Cut bool `json:"cut,omitempty"`
}

// Tail returns the last n lines that f selects among those that end
// before offset end (end < 0: the file's end), oldest first, no more
// than maxBytes bytes of them (not counting their newlines; maxBytes <=
// 0: no limit): a line that would go beyond the limit is left for the
// next page, unless it is the first, which is cut to the limit. It reads
// the file backwards in chunks and stops once it has n lines, so the
// tail of a long log costs the tail, not the file. A last line without a
// newline counts as a line; empty lines are skipped.
func Tail(path string, end int64, n, maxBytes int, f Filter) (Page, error) {
	file, err := os.Open(path)
	if err != nil {
		return Page{}, err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return Page{}, err
	}
	if end < 0 || end > st.Size() {
		end = st.Size()
	}
	var page Page
	var out []string // newest first
	used := 0
	pos := end    // data is the file's bytes from pos
	cursor := end // the lines from cursor to end are dealt with
	var data []byte
	buf := make([]byte, chunk)
	full := false // n lines, or the size limit reached
	for !full && len(out) < n && cursor > 0 {
		if pos > 0 {
			k := min(int64(len(buf)), pos)
			pos -= k
			if _, err := file.ReadAt(buf[:k], pos); err != nil && err != io.EOF {
				return Page{}, err
			}
			data = append(slices.Clone(buf[:k]), data...)
		}
		for len(out) < n {
			i := bytes.LastIndexByte(data, '\n')
			if i < 0 && pos > 0 {
				break // the line starts in an earlier chunk
			}
			line := string(data[i+1:])
			if line != "" && f.Keep(line) {
				if maxBytes > 0 && used+len(line) > maxBytes {
					if len(out) > 0 {
						full = true
						break
					}
					line, page.Cut = line[:maxBytes], true
				}
				out = append(out, line)
				used += len(line)
			}
			cursor = pos + int64(i) + 1
			if i < 0 {
				data = nil
				cursor = 0
				break
			}
			data = data[:i]
			if page.Cut {
				full = true
				break
			}
		}
	}
	slices.Reverse(out)
	page.Lines, page.Start = out, cursor
	return page, nil
}
