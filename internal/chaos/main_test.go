package chaos

import (
	"os"
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// TestMain gives the test run a config dir of its own: every `ardea local`
// the rows start saves its admin token as a CLI context there, not in the
// user's ~/.config/ardea/contexts.json.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ardea-chaos-config")
	if err != nil {
		panic(err)
	}
	testutil.IsolateUserConfig(dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
