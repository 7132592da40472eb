//go:build unix

// Package brokerproc starts real brokers as local processes from the
// scripts in internal/testbroker (kafka/start.sh): the part of the test
// brokers that needs no test, apart from package testbroker (whose
// helpers take a testing.TB) so that the ardea binary (`ardea bench
// kafka`) starts a broker without linking package testing. It also holds
// the process helpers both packages share: free ports, log tails, the
// port-taken retry.
package brokerproc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
)

// StartTries bounds the starts of one broker; a start is only tried again
// when a chosen port was taken meanwhile (PortTaken).
const StartTries = 3

// PortTaken matches a broker log that says a port it was given was
// already bound: the start is worth another try on fresh ports.
var PortTaken = regexp.MustCompile(`(?i)address already in use|BindException`)

// Script locates <name>/start.sh in internal/testbroker, next to this
// package's source (the scripts run from the source tree).
func Script(name string) (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("testbroker: cannot locate %s/start.sh (runtime.Caller failed)", name)
	}
	script := filepath.Join(filepath.Dir(file), "..", name, "start.sh")
	if _, err := os.Stat(script); err != nil {
		return "", fmt.Errorf("testbroker: %w", err)
	}
	return filepath.Clean(script), nil
}

// CacheDir is where the scripts keep the brokers' jars:
// ${ARDEA_CACHE:-$HOME/.cache/ardea}.
func CacheDir() string {
	if c := os.Getenv("ARDEA_CACHE"); c != "" {
		return c
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "ardea")
}

// FreePorts returns n distinct ports free on 127.0.0.1 right now.
func FreePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// LogTail returns the last 80 lines of the log at path.
func LogTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "(no log)"
		}
		return err.Error()
	}
	return Tail(b, 80)
}

// Tail returns the last n lines of b.
func Tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
