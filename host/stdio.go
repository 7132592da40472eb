package host

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
)

const (
	maxLineBytes  = 16 << 10 // longer lines are split
	crashLines    = 40       // lines of a call kept for its crash report
	crashLineSize = 512
)

// lineWriter is a guest's stdout or stderr: it logs every complete line
// through slog (tagged with stream=stdout|stderr on top of the instance's
// topology/component/task) and keeps the first lines printed during the
// current call so a crash report can quote them (a Go guest prints its
// panic or "fatal error: out of memory" there, followed by its traceback).
type lineWriter struct {
	mu        sync.Mutex
	log       *slog.Logger
	stream    string
	level     slog.Level
	partial   []byte
	callSeq   atomic.Int64 // bumped at every call start, without mu
	headSeq   int64        // callSeq that head belongs to
	head      []string
	truncated bool
}

func newLineWriter(log *slog.Logger, stream string, level slog.Level) *lineWriter {
	return &lineWriter{log: log, stream: stream, level: level}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.partial = append(w.partial, p...)
			if len(w.partial) >= maxLineBytes {
				w.line(w.partial)
				w.partial = w.partial[:0]
			}
			break
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
	s := string(b)
	w.log.LogAttrs(context.Background(), w.level, s, slog.String("stream", w.stream))
	if seq := w.callSeq.Load(); seq != w.headSeq {
		w.headSeq, w.head, w.truncated = seq, w.head[:0], false
	}
	if len(w.head) == crashLines {
		w.truncated = true
		return
	}
	if len(s) > crashLineSize {
		s = s[:crashLineSize] + "..."
	}
	w.head = append(w.head, s)
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
