package process

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ardea-dev/ardea/internal/natsauth"
)

// TestContainerFromPod: a StatefulSet pod's ordinal is its container - 1,
// and its credential is its key in the Secret's directory.
func TestContainerFromPod(t *testing.T) {
	t.Setenv(natsauth.EnvCreds, "")
	t.Setenv(natsauth.EnvCredsData, "")
	creds := t.TempDir()
	t.Setenv(CredsDirEnv, creds)
	t.Setenv("TMPDIR", t.TempDir())
	t.Setenv(PodNameEnv, "ardea-acme-wc-0123456789-2")
	c, restarted, err := ContainerFromPod()
	if err != nil || c != 3 || restarted {
		t.Fatalf("container %d, restarted %v, %v; want 3, a first start", c, restarted, err)
	}
	if got, want := os.Getenv(natsauth.EnvCreds), filepath.Join(creds, "container-3"); got != want {
		t.Errorf("%s=%q, want %q", natsauth.EnvCreds, got, want)
	}
	// The host again in this pod (its marker), or in a new pod (the
	// Secret's started key): a restart. A credential given otherwise stays.
	t.Setenv(natsauth.EnvCreds, "/given.creds")
	if _, restarted, err := ContainerFromPod(); err != nil || !restarted || os.Getenv(natsauth.EnvCreds) != "/given.creds" {
		t.Errorf("again in its pod: restarted %v, %s=%q, %v", restarted, natsauth.EnvCreds, os.Getenv(natsauth.EnvCreds), err)
	}
	t.Setenv("TMPDIR", t.TempDir())
	if err := os.WriteFile(filepath.Join(creds, StartedKey(3)), []byte("1"), 0o400); err != nil {
		t.Fatal(err)
	}
	if _, restarted, err := ContainerFromPod(); err != nil || !restarted {
		t.Errorf("in a new pod: restarted %v, %v", restarted, err)
	}
	for _, bad := range []string{"", "wc", "wc-", "wc-x", "wc-+1"} {
		t.Setenv(PodNameEnv, bad)
		if _, _, err := ContainerFromPod(); err == nil {
			t.Errorf("pod name %q: no error", bad)
		}
	}
}
