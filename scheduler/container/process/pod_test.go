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
	t.Setenv(CredsDirEnv, "/ardea/nats")
	t.Setenv(PodNameEnv, "ardea-acme-wc-0123456789-2")
	c, err := ContainerFromPod()
	if err != nil || c != 3 {
		t.Fatalf("container %d, %v; want 3", c, err)
	}
	if got, want := os.Getenv(natsauth.EnvCreds), filepath.Join("/ardea/nats", "container-3"); got != want {
		t.Errorf("%s=%q, want %q", natsauth.EnvCreds, got, want)
	}
	// A credential given otherwise stays.
	t.Setenv(natsauth.EnvCreds, "/given.creds")
	if _, err := ContainerFromPod(); err != nil || os.Getenv(natsauth.EnvCreds) != "/given.creds" {
		t.Errorf("%s=%q, %v", natsauth.EnvCreds, os.Getenv(natsauth.EnvCreds), err)
	}
	for _, bad := range []string{"", "wc", "wc-", "wc-x", "wc-+1"} {
		t.Setenv(PodNameEnv, bad)
		if _, err := ContainerFromPod(); err == nil {
			t.Errorf("pod name %q: no error", bad)
		}
	}
}
