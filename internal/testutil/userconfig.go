package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	configMu   sync.Mutex
	configRoot string // what IsolateUserConfig set; "" before
)

// IsolateUserConfig points XDG_CONFIG_HOME at dir/config, for this process
// and every process it starts (an `ardea local` or `ardea demo` saves its
// admin token as a CLI context in the user's config dir, contexts.json), so
// that a test run never reads or writes the user's real config. Call it in
// TestMain before m.Run with a temporary dir the TestMain removes. HOME is
// left alone: the Go build cache and the toolchains' caches stay the
// user's. It panics unless os.UserConfigDir then resolves under dir: a
// TestMain that could leak into the real file fails before any test runs.
func IsolateUserConfig(dir string) string {
	abs, err := filepath.Abs(filepath.Join(dir, "config"))
	if err != nil {
		panic(fmt.Sprintf("IsolateUserConfig: %v", err))
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		panic(fmt.Sprintf("IsolateUserConfig: %v", err))
	}
	if err := os.Setenv("XDG_CONFIG_HOME", abs); err != nil {
		panic(fmt.Sprintf("IsolateUserConfig: %v", err))
	}
	got, err := os.UserConfigDir()
	if err != nil || !under(got, abs) {
		panic(fmt.Sprintf("IsolateUserConfig: the user config dir resolves to %q (%v), not under %s", got, err, abs))
	}
	configMu.Lock()
	configRoot = abs
	configMu.Unlock()
	return abs
}

// CheckUserConfigIsolated fails t unless IsolateUserConfig has run in this
// process and path (a file a test or a process it started reports it wrote
// in the user's config, such as the contexts file `ardea local` prints)
// and os.UserConfigDir are under its dir.
func CheckUserConfigIsolated(t testing.TB, path string) {
	t.Helper()
	configMu.Lock()
	root := configRoot
	configMu.Unlock()
	if root == "" {
		t.Fatalf("the user config is not isolated: the package's TestMain must call testutil.IsolateUserConfig")
	}
	if dir, err := os.UserConfigDir(); err != nil || !under(dir, root) {
		t.Fatalf("the user config dir resolves to %q (%v), not under the tests' %s", dir, err, root)
	}
	if path != "" && !under(path, root) {
		t.Fatalf("%s is outside the tests' config dir %s: a test wrote into the user's config", path, root)
	}
}

// under reports whether path is root or inside it.
func under(path, root string) bool {
	rel, err := filepath.Rel(root, filepath.Clean(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
