package sinks

import (
	"sync"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
)

// maxExceptionText caps a message (a trap's text carries the wasm stack).
const maxExceptionText = 4 << 10

// maxPending caps distinct exceptions held between collections.
const maxPending = 256

// ExceptionLog collects a container's exceptions between collections,
// deduplicated by component, task and message. Safe for concurrent use.
type ExceptionLog struct {
	Topology  string
	Container int

	mu      sync.Mutex
	pending map[excKey]*api.Exception
	order   []excKey
	dropped int64
}

// Record notes one exception of a task now.
func (l *ExceptionLog) Record(component string, task int, message string) {
	if len(message) > maxExceptionText {
		message = message[:maxExceptionText] + "..."
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending == nil {
		l.pending = map[excKey]*api.Exception{}
	}
	k := excKey{component, task, message}
	if e := l.pending[k]; e != nil {
		e.Count++
		e.Last = now
		return
	}
	if len(l.pending) >= maxPending {
		l.dropped++
		return
	}
	l.pending[k] = &api.Exception{Topology: l.Topology, Component: component, Task: task, Container: l.Container,
		Message: message, Count: 1, First: now, Last: now}
	l.order = append(l.order, k)
}

// Drain returns what was recorded since the previous Drain, oldest first.
func (l *ExceptionLog) Drain() []api.Exception {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]api.Exception, 0, len(l.order))
	for _, k := range l.order {
		out = append(out, *l.pending[k])
	}
	l.pending, l.order = nil, nil
	return out
}
