package ui

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestClientLogic runs the UI's JavaScript unit tests (web/lib.test.mjs)
// with Node's built-in test runner.
func TestClientLogic(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("ARDEA_REQUIRE_TOOLCHAINS") == "1" {
			t.Fatal("node is not installed; .ci/run installs it")
		}
		t.Skip("node is not installed")
	}
	out, err := exec.Command(node, "--test", "web/").CombinedOutput()
	if err != nil {
		t.Fatalf("node --test web/: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "# fail 0") {
		t.Fatalf("node --test web/:\n%s", out)
	}
}

// TestAssetsEmbedded checks that the page and every module it imports are
// in the binary.
func TestAssetsEmbedded(t *testing.T) {
	for _, name := range []string{"web/index.html", "web/app.js", "web/lib.js", "web/style.css"} {
		if _, err := webFS.ReadFile(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := webFS.ReadFile("web/lib.test.mjs"); err == nil {
		t.Error("the tests are embedded too")
	}
}
