//go:build !unix

package kube

import (
	"context"
	"fmt"
	"runtime"
)

// lockFile: the harness runs on Linux only (Start skips elsewhere).
func lockFile(context.Context, string) (func(), error) {
	return nil, fmt.Errorf("building the kube binaries needs a Unix file lock, not on %s", runtime.GOOS)
}
