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

// ContainerFromPod is the container of the pod named in PodNameEnv (its
// StatefulSet ordinal + 1); with CredsDirEnv set and no credential in the
// environment yet, it points natsauth.EnvCreds at the container's file.
func ContainerFromPod() (int, error) {
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
	c := ord + 1
	if dir := os.Getenv(CredsDirEnv); dir != "" && os.Getenv(natsauth.EnvCreds) == "" && os.Getenv(natsauth.EnvCredsData) == "" {
		if err := os.Setenv(natsauth.EnvCreds, filepath.Join(dir, CredsKey(c))); err != nil {
			return 0, fmt.Errorf("%s: %w", natsauth.EnvCreds, err)
		}
	}
	return c, nil
}
