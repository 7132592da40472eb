//go:build unix

package connectors

import (
	"os"
	"testing"

	"github.com/ardea-dev/ardea/internal/testbroker"
)

// TestMain stops the Pulsar broker the package's tests share
// (testbroker.SharedPulsar: each test uses topics of its own).
func TestMain(m *testing.M) {
	code := m.Run()
	testbroker.StopSharedPulsar()
	os.Exit(code)
}
