package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

func TestUnder(t *testing.T) {
	for _, c := range []struct {
		path, root string
		want       bool
	}{
		{"/tmp/x/config", "/tmp/x/config", true},
		{"/tmp/x/config/ardea/contexts.json", "/tmp/x/config", true},
		{"/tmp/x/config/../y", "/tmp/x/config", false},
		{"/tmp/x/configs/ardea", "/tmp/x/config", false},
		{"/root/.config/ardea/contexts.json", "/tmp/x/config", false},
		{"/tmp/x/config/..foo", "/tmp/x/config", true},
	} {
		if got := under(c.path, c.root); got != c.want {
			t.Errorf("under(%q, %q) = %v, want %v", c.path, c.root, got, c.want)
		}
	}
}

// TestIsolateUserConfig: after it, the config dir (where the CLI keeps
// contexts.json) is the temp dir's, and a path in the real one is caught.
func TestIsolateUserConfig(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "") // restored after the test
	configMu.Lock()
	old := configRoot
	configMu.Unlock()
	t.Cleanup(func() {
		configMu.Lock()
		configRoot = old
		configMu.Unlock()
	})
	dir := t.TempDir()
	root := IsolateUserConfig(dir)
	if root != filepath.Join(dir, "config") {
		t.Fatalf("IsolateUserConfig = %s, want %s", root, filepath.Join(dir, "config"))
	}
	got, err := os.UserConfigDir()
	if err != nil || got != root {
		t.Fatalf("os.UserConfigDir() = %q, %v; want %s", got, err, root)
	}
	CheckUserConfigIsolated(t, filepath.Join(root, "ardea", "contexts.json"))
	if msg := run(t, func(tb testing.TB) { CheckUserConfigIsolated(tb, "/root/.config/ardea/contexts.json") }); msg == "" {
		t.Error("a contexts file in the real config passed the check")
	}
	configMu.Lock()
	configRoot = ""
	configMu.Unlock()
	if msg := run(t, func(tb testing.TB) { CheckUserConfigIsolated(tb, "") }); msg == "" {
		t.Error("a package with no IsolateUserConfig passed the check")
	}
}
