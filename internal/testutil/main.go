package testutil

import (
	"fmt"
	"os"
	"testing"
)

// MainWithDir is a TestMain for tests that share a directory (a wazero
// compilation cache, so that each module is compiled once per package):
// it makes a temporary directory named after pattern, hands it to set,
// runs the tests, removes the directory and exits with the tests' status.
func MainWithDir(m *testing.M, pattern string, set func(dir string)) {
	d, err := os.MkdirTemp("", pattern)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	set(d)
	code := m.Run()
	_ = os.RemoveAll(d)
	os.Exit(code)
}
