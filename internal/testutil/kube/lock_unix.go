//go:build unix

package kube

import (
	"context"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on path (made if missing), waiting
// for another process's: the kernel drops it if the holder dies, so a
// killed build leaves no stale lock. ctx is not consulted while waiting:
// the holder is a build with its own end.
func lockFile(_ context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
