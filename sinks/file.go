package sinks

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
)

// file appends one JSON object per sample and line:
//
//	{"time":"...","topology":"wc","component":"count","task":3,"container":1,"name":"__execute-count","kind":"counter","value":1200,"delta":300}
//
// Exceptions are lines with "exception" set. One writer goroutine.
type file struct {
	f *os.File
	w *bufio.Writer
}

// newFile opens (appends to) the file.
func newFile(c fileConfig) (*file, error) {
	f, err := os.OpenFile(c.Path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600) // every tenant's series and exceptions: the operator's only
	if err != nil {
		return nil, fmt.Errorf("file sink: %w", err)
	}
	return &file{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

type fileLine struct {
	Time time.Time `json:"time"`
	*Sample
}

type fileException struct {
	Time      time.Time      `json:"time"`
	Exception *api.Exception `json:"exception"`
}

// Write appends the batch and flushes it.
func (s *file) Write(_ context.Context, b *Batch) error {
	enc := json.NewEncoder(s.w)
	for i := range b.Samples {
		if err := enc.Encode(fileLine{Time: b.Time, Sample: &b.Samples[i]}); err != nil {
			return fmt.Errorf("file sink: %w", err)
		}
	}
	for i := range b.Exceptions {
		if err := enc.Encode(fileException{Time: b.Time, Exception: &b.Exceptions[i]}); err != nil {
			return fmt.Errorf("file sink: %w", err)
		}
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("file sink: %w", err)
	}
	return nil
}

// Close flushes and closes the file.
func (s *file) Close() error {
	err := s.w.Flush()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}
