package testutil

import (
	"bytes"
	"sync"
)

// SyncBuffer is a bytes.Buffer safe for concurrent writes and reads: a
// logger's output that a test reads while the code under test writes.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
