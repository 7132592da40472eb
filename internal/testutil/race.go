//go:build race

package testutil

// Race reports whether the test binary was built with the race detector:
// a test may feed less input there, where every memory access costs ten
// times more and the point is the interleavings, not the volume.
const Race = true
