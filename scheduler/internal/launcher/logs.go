package launcher

import (
	"bufio"
	"io"
	"sync"
)

// maxLine caps one logged line; a longer one is split, so a child that
// never writes a newline cannot grow memory without bound.
const maxLine = 1 << 20

// readLines calls emit with each line of r, without its newline, until EOF
// or a read error. A final line without newline is emitted too.
func readLines(r io.Reader, emit func(string)) {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte // a line longer than the reader's buffer, so far
	for {
		chunk, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, chunk...)
			if len(long) >= maxLine {
				emit(string(long))
				long = long[:0]
			}
			continue
		}
		if n := len(chunk); n > 0 && chunk[n-1] == '\n' {
			chunk = chunk[:n-1]
		}
		if len(long) > 0 {
			chunk = append(long, chunk...)
			long = long[:0]
		}
		if len(chunk) > 0 || err == nil {
			emit(string(chunk))
		}
		if err != nil {
			return
		}
	}
}

// writeLine records one output line in the tail and the log file. The
// line and its newline go out in one write on an O_APPEND file, so lines
// of stdout, stderr and other writers never interleave inside a line.
func (p *proc) writeLine(line string) {
	// Under logMu, so that the tail keeps the log file's order.
	p.logMu.Lock()
	defer p.logMu.Unlock()
	p.out.add(line)
	if p.logFile != nil {
		// A full disk must not stop the child: its output then only reaches
		// the in-memory tail.
		_, _ = p.logFile.WriteString(line + "\n")
	}
}

func (p *proc) closeLog() {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	if p.logFile != nil {
		_ = p.logFile.Close()
		p.logFile = nil
	}
}

// ring keeps the last cap lines; safe for concurrent use.
type ring struct {
	mu    sync.Mutex
	lines []string
	next  int // index of the oldest line once full
	full  bool
}

func newRing(n int) *ring { return &ring{lines: make([]string, 0, n)} }

func (r *ring) add(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		r.lines = append(r.lines, line)
		r.full = len(r.lines) == cap(r.lines)
		return
	}
	r.lines[r.next] = line
	r.next = (r.next + 1) % len(r.lines)
}

// last returns up to n of the newest lines, oldest first; n <= 0 means all.
func (r *ring) last(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	all := make([]string, 0, len(r.lines))
	all = append(all, r.lines[r.next:]...)
	all = append(all, r.lines[:r.next]...)
	if n > 0 && n < len(all) {
		all = all[len(all)-n:]
	}
	return all
}
