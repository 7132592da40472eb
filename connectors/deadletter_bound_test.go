package connectors

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ardea-dev/ardea/connectors/plugin"
)

// TestFileDeadLettersBounded: a file spout's dead letters are read by the
// daemon (`ardea dlq`), so the read never blocks (a FIFO is refused, not
// waited on) and is bounded (a file over plugin.MaxDeadLetterFileBytes is
// refused, naming the limit).
func TestFileDeadLettersBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO:", err)
	}
	if _, err := fileDeadLetters("lines", filepath.Join(dir, "in"), fifo, false); err == nil || !strings.Contains(err.Error(), "regular file") {
		t.Errorf("a FIFO: %v, want refused", err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, plugin.MaxDeadLetterFileBytes+1); err != nil {
		t.Fatal(err)
	}
	if _, err := fileDeadLetters("lines", filepath.Join(dir, "in"), big, false); err == nil || !strings.Contains(err.Error(), "MaxDeadLetterFileBytes") {
		t.Errorf("a file over the limit: %v, want refused naming the limit", err)
	}
}
