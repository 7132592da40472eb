package host

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

const (
	crashLines    = 40 // lines of a call kept for its crash report
	crashLineSize = 512
)

// logGate is where an instance's guest output goes to its logger: log
// calls, stdout and stderr lines. It lets through at most max bytes of
// messages per one-second window and drops the rest, counting them; after
// a window that dropped lines, one warning says how many (at the next line,
// at the end of a call, or when the instance closes).
type logGate struct {
	ctx   context.Context // the instance's: values for the handler, never cancelled
	log   *slog.Logger
	max   int64
	clock func() int64 // monotonic ns

	mu           sync.Mutex
	window       int64 // start of the current window (0: none yet)
	used         int64 // bytes written in it
	lines, bytes int64 // dropped in it, not yet reported
	dropped      bool  // the window dropped lines
	pending      atomic.Bool
	droppedLines atomic.Int64 // since the instance started (Usage)
	droppedBytes atomic.Int64
}

func newLogGate(ctx context.Context, log *slog.Logger, maxPerSecond int64, clock func() int64) *logGate {
	return &logGate{ctx: ctx, log: log, max: maxPerSecond, clock: clock}
}

// write logs msg at lvl, tagged with stream, unless the window's budget is
// spent.
func (g *logGate) write(lvl slog.Level, msg []byte, stream string) {
	if g.admit(len(msg)) {
		g.log.LogAttrs(g.ctx, lvl, string(msg), slog.String("stream", stream))
	}
}

// writeCut logs the first bytes of a line longer than maxLine, with a
// marker saying so, the whole at most maxLine bytes.
func (g *logGate) writeCut(lvl slog.Level, msg []byte, stream string, maxLine int) {
	mark := fmt.Sprintf(" ...[line of %d bytes cut at log.max.line.bytes = %d]", len(msg), maxLine)
	keep := max(maxLine-len(mark), 0)
	for keep > 0 && keep < len(msg) && !utf8.RuneStart(msg[keep]) {
		keep-- // do not split a character
	}
	if g.admit(keep + len(mark)) {
		g.log.LogAttrs(g.ctx, lvl, string(msg[:keep])+mark,
			slog.String("stream", stream), slog.Int("bytes", len(msg)))
	}
}

// admit charges n bytes to the current window, or counts a dropped line.
func (g *logGate) admit(n int) bool {
	now := g.clock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.window == 0 || now-g.window >= int64(time.Second) {
		g.reportLocked()
		g.window, g.used = now, 0
	}
	if g.used+int64(n) > g.max {
		g.lines++
		g.bytes += int64(n)
		g.dropped = true
		g.pending.Store(true)
		g.droppedLines.Add(1)
		g.droppedBytes.Add(int64(n))
		return false
	}
	g.used += int64(n)
	return true
}

// report logs the drops of a window that is over (or, with final, of the
// current one too: the instance is closing).
func (g *logGate) report(final bool) {
	now := g.clock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if final || now-g.window >= int64(time.Second) {
		g.reportLocked()
	}
}

func (g *logGate) reportLocked() {
	if !g.dropped {
		return
	}
	g.log.LogAttrs(g.ctx, slog.LevelWarn,
		fmt.Sprintf("dropped %d guest log lines (%d bytes) in one second, over the limit log.max.bytes.per.second = %d",
			g.lines, g.bytes, g.max),
		slog.String("stream", "log"), slog.Int64("dropped_lines", g.lines), slog.Int64("dropped_bytes", g.bytes))
	g.lines, g.bytes, g.dropped = 0, 0, false
	g.pending.Store(false)
}

// lineWriter is a guest's stdout or stderr: it logs every complete line
// through slog (tagged with stream=stdout|stderr on top of the instance's
// topology/component/task) and keeps the first lines printed during the
// current call so a crash report can quote them (a Go guest prints its
// panic or "fatal error: out of memory" there, followed by its traceback).
type lineWriter struct {
	mu        sync.Mutex
	out       *logGate
	stream    string
	level     slog.Level
	maxLine   int // longer lines are split (log.max.line.bytes)
	partial   []byte
	callSeq   atomic.Int64 // bumped at every call start, without mu
	headSeq   int64        // callSeq that head belongs to
	head      []string
	truncated bool
}

func newLineWriter(out *logGate, stream string, level slog.Level, maxLine int) *lineWriter {
	return &lineWriter{out: out, stream: stream, level: level, maxLine: maxLine}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			for len(p) > 0 { // split a long line into pieces of maxLine bytes
				take := min(len(p), w.maxLine-len(w.partial))
				w.partial = append(w.partial, p[:take]...)
				p = p[take:]
				if len(w.partial) >= w.maxLine {
					w.line(w.partial)
					w.partial = w.partial[:0]
				}
			}
			break
		}
		for i > w.maxLine-len(w.partial) { // a long line: pieces of maxLine bytes
			take := w.maxLine - len(w.partial)
			w.partial = append(w.partial, p[:take]...)
			w.line(w.partial)
			w.partial = w.partial[:0]
			p, i = p[take:], i-take
		}
		if len(w.partial) > 0 {
			w.partial = append(w.partial, p[:i]...)
			w.line(w.partial)
			w.partial = w.partial[:0]
		} else {
			w.line(p[:i])
		}
		p = p[i+1:]
	}
	return n, nil
}

func (w *lineWriter) line(b []byte) {
	b = bytes.TrimRight(b, "\r")
	if len(b) == 0 {
		return
	}
	w.out.write(w.level, b, w.stream)
	if seq := w.callSeq.Load(); seq != w.headSeq {
		w.headSeq, w.head, w.truncated = seq, w.head[:0], false
	}
	if len(w.head) == crashLines {
		w.truncated = true
		return
	}
	if len(b) > crashLineSize {
		w.head = append(w.head, string(b[:crashLineSize])+"...")
		return
	}
	w.head = append(w.head, string(b))
}

// flush logs a pending partial line.
func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.partial) > 0 {
		w.line(w.partial)
		w.partial = w.partial[:0]
	}
}

// begin starts a new call: later lines form a new crash head.
func (w *lineWriter) begin() { w.callSeq.Add(1) }

// crashHead returns the first lines printed during the current call, each
// on its own tab-indented line ("" if none).
func (w *lineWriter) crashHead() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.partial) > 0 {
		w.line(w.partial)
		w.partial = w.partial[:0]
	}
	if w.headSeq != w.callSeq.Load() {
		return ""
	}
	var sb strings.Builder
	for _, l := range w.head {
		sb.WriteString("\n\t")
		sb.WriteString(l)
	}
	if w.truncated {
		sb.WriteString("\n\t...")
	}
	return sb.String()
}
