package settings

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/ardea-dev/ardea/connectors/plugin"
)

// MaxDeadLetterBytes bounds a bolt's dead-letter file: it is read whole
// (to write each tuple once, and by `ardea dlq`), so a longer one is
// neither read nor appended to.
const MaxDeadLetterBytes = plugin.MaxDeadLetterFileBytes

// OpenDeadLetters opens a dead-letter file with flags (never blocking:
// a FIFO or a device is refused, as is a file over MaxDeadLetterBytes)
// and reads it, at most MaxDeadLetterBytes. A missing file opened
// without os.O_CREATE is os.ErrNotExist.
func OpenDeadLetters(path string, flags int) (*os.File, []byte, error) {
	f, err := os.OpenFile(path, flags|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, nil, err
	}
	b, err := readBounded(f, path)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, b, nil
}

func readBounded(f *os.File, path string) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("dead-letter file %s: not a regular file (%s)", path, fi.Mode().Type())
	}
	if fi.Size() > MaxDeadLetterBytes {
		return nil, fmt.Errorf("dead-letter file %s: %d bytes, over its limit of %d bytes", path, fi.Size(), MaxDeadLetterBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxDeadLetterBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxDeadLetterBytes {
		return nil, fmt.Errorf("dead-letter file %s: over its limit of %d bytes", path, MaxDeadLetterBytes)
	}
	return b, nil
}

// ReadDeadLetters reads a dead-letter file (bounded as OpenDeadLetters);
// a missing one is empty.
func ReadDeadLetters(path string) ([]byte, error) {
	f, b, err := OpenDeadLetters(path, os.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f.Close()
	return b, nil
}
