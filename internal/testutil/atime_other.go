//go:build !linux

package testutil

import (
	"io/fs"
	"time"
)

// accessTime is not read outside Linux: pruneCache goes by the write.
func accessTime(fs.FileInfo) (time.Time, bool) { return time.Time{}, false }
