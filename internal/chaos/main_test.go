package chaos

import (
	"flag"
	"os"
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// TestMain gives the test run a config dir of its own: every `ardea local`
// the rows start saves its admin token as a CLI context there, not in the
// user's ~/.config/ardea/contexts.json.
// waitingTestsAtOnce is the package's -test.parallel unless the command
// line sets it.
const waitingTestsAtOnce = 6

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ardea-chaos-config")
	if err != nil {
		panic(err)
	}
	testutil.IsolateUserConfig(dir)
	// The node tests, the wedged daemon and the fault matrix (which runs
	// its rows two at a time itself) mostly wait: on locks to expire,
	// fences, paced input, processes to start (a node-kill run uses about
	// a third of a core). Side by side they take the time of the longest.
	flag.Parse()
	testutil.WaitingTestsAtOnce(waitingTestsAtOnce)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
