package process

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ardea-dev/ardea/internal/natsauth"
)

// A host in a pod of the Kubernetes scheduler (scheduler: kubernetes):
// every pod of a topology's StatefulSet runs the same command line, so a
// host learns its container from its pod's name, and picks its NATS
// credential out of the topology's Secret by that number.
const (
	// PodNameEnv holds the pod's name (the downward API's metadata.name):
	// <statefulset>-<ordinal>, container ordinal+1.
	PodNameEnv = "ARDEA_POD_NAME"
	// CredsDirEnv is the directory of the topology's Secret: one creds
	// file per container, named CredsKey(container).
	CredsDirEnv = "ARDEA_NATS_CREDS_DIR"
)

// CredsKey is container c's key in its topology's Secret (and its file
// in CredsDirEnv).
func CredsKey(c int) string { return "container-" + strconv.Itoa(c) }

// StartedKey is the key of the topology's Secret that says container c
// ran in an earlier pod: the runtime sets it once the container's first
// pod runs.
func StartedKey(c int) string { return "started-" + strconv.Itoa(c) }

// startedMarker, in the pod's TMPDIR (an emptyDir: it outlives a
// container's restart in its pod, not the pod), says the host ran
// before in this pod.
const startedMarker = "ardea-host-started"

// ContainerFromPod is the container of the pod named in PodNameEnv (its
// StatefulSet ordinal + 1); with CredsDirEnv set and no credential in the
// environment yet, it points natsauth.EnvCreds at the container's file.
// restarted says the container ran before: in an earlier pod (the
// Secret's StartedKey) or in this one (a marker it leaves in TMPDIR); the
// host then starts as after the launcher's restart (Options.Restarts).
func ContainerFromPod() (c int, restarted bool, err error) {
	c, err = podContainer()
	if err != nil {
		return 0, false, err
	}
	dir := os.Getenv(CredsDirEnv)
	if dir != "" && os.Getenv(natsauth.EnvCreds) == "" && os.Getenv(natsauth.EnvCredsData) == "" {
		if err := os.Setenv(natsauth.EnvCreds, filepath.Join(dir, CredsKey(c))); err != nil {
			return 0, false, fmt.Errorf("%s: %w", natsauth.EnvCreds, err)
		}
	}
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, StartedKey(c))); err == nil {
			restarted = true
		}
	}
	marker := filepath.Join(os.TempDir(), startedMarker)
	if _, err := os.Stat(marker); err == nil {
		restarted = true
	} else if err := os.WriteFile(marker, nil, 0o600); err != nil {
		return 0, false, fmt.Errorf("the pod's start marker: %w", err)
	}
	return c, restarted, nil
}

// podContainer is the container of the pod named in PodNameEnv.
func podContainer() (int, error) {
	pod := os.Getenv(PodNameEnv)
	i := strings.LastIndexByte(pod, '-')
	if i < 0 {
		return 0, fmt.Errorf("%s=%q: want a StatefulSet pod's name, NAME-ORDINAL", PodNameEnv, pod)
	}
	digits := pod[i+1:]
	ord, err := strconv.Atoi(digits)
	if err != nil || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, fmt.Errorf("%s=%q: want a StatefulSet pod's name, NAME-ORDINAL", PodNameEnv, pod)
	}
	return ord + 1, nil
}
