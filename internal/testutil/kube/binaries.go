package kube

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// Release is the Kubernetes release whose kube-apiserver and
// kube-controller-manager the harness runs: kubebin/go.mod requires
// k8s.io/kubernetes at it, and its staging modules at the matching v0.x.
// The main module's k8s.io/client-go, api and apimachinery are of the
// same release, so the client speaks the server's API exactly.
const Release = "v1.37.2"

// The two programs kubebin builds, by their package in k8s.io/kubernetes.
const (
	apiserverPkg         = "k8s.io/kubernetes/cmd/kube-apiserver"
	controllerManagerPkg = "k8s.io/kubernetes/cmd/kube-controller-manager"
)

// buildRecipe is every input of the build besides kubebin's go.mod and
// go.sum: changing it changes the cache key, so no stale binary built
// another way is reused. The -X flags give the binaries the version
// Kubernetes' own release build stamps (without them /version says
// v0.0.0-master); -s -w drop the symbol tables nobody debugs here.
var buildRecipe = []string{
	"-ldflags=-s -w" +
		" -X k8s.io/component-base/version.gitVersion=" + Release +
		" -X k8s.io/component-base/version.gitMajor=1" +
		" -X k8s.io/component-base/version.gitMinor=37" +
		" -X k8s.io/component-base/version.gitTreeState=clean",
}

// BinariesEnv names a directory holding prebuilt kube-apiserver and
// kube-controller-manager to use instead of building them (for a machine
// that has them from elsewhere; they must be of Release).
const BinariesEnv = "ARDEA_KUBE_BINARIES"

// Binaries returns the paths of kube-apiserver and
// kube-controller-manager of Release, building them the first time on a
// machine (minutes: see README.md) into the tests' persistent cache and
// reusing them after (milliseconds). It fails t if they cannot be built.
func Binaries(t testing.TB) (apiserver, controllerManager string) {
	t.Helper()
	dir, err := binariesDir(context.Background(), t.Logf)
	if err != nil {
		t.Fatalf("kube: the Kubernetes %s binaries: %v", Release, err)
	}
	return filepath.Join(dir, "kube-apiserver"), filepath.Join(dir, "kube-controller-manager")
}

// One process asks the cache once; a failure is not remembered, so a
// later test sees the error itself.
var (
	binMu  sync.Mutex
	binDir string
)

func binariesDir(ctx context.Context, logf func(string, ...any)) (string, error) {
	binMu.Lock()
	defer binMu.Unlock()
	if binDir != "" {
		return binDir, nil
	}
	d, err := BuildBinaries(ctx, logf)
	if err == nil {
		binDir = d
	}
	return d, err
}

// BuildBinaries makes sure the cache holds both binaries of Release and
// returns their directory (or $ARDEA_KUBE_BINARIES). The directory is
// named by a hash of kubebin's go.mod and go.sum and of the build flags,
// so another pinned release or recipe builds anew beside it. A file lock
// makes concurrent test binaries (go test runs packages in parallel)
// build once: the others wait and reuse the result. logf reports a
// build (it takes minutes); it may be nil.
func BuildBinaries(ctx context.Context, logf func(string, ...any)) (string, error) {
	if d := os.Getenv(BinariesEnv); d != "" {
		for _, name := range []string{"kube-apiserver", "kube-controller-manager"} {
			if _, err := os.Stat(filepath.Join(d, name)); err != nil {
				return "", fmt.Errorf("%s=%s: %w", BinariesEnv, d, err)
			}
		}
		return d, nil
	}
	src := testutil.RepoPath("internal/testutil/kube/kubebin")
	key, err := cacheKey(src)
	if err != nil {
		return "", err
	}
	root, err := testutil.CacheDir("kubebin")
	if err != nil {
		return "", fmt.Errorf("the cache dir: %w", err)
	}
	dir := filepath.Join(root, Release+"-"+key)
	if complete(dir) {
		return dir, nil
	}
	unlock, err := lockFile(ctx, dir+".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if complete(dir) { // built by another process while this one waited
		return dir, nil
	}
	if logf != nil {
		logf("kube: building kube-apiserver and kube-controller-manager %s into %s (once per machine; minutes on a cold Go build cache)", Release, dir)
	}
	start := time.Now()
	if err := build(ctx, src, dir); err != nil {
		return "", err
	}
	if logf != nil {
		logf("kube: built in %v", time.Since(start).Round(time.Second))
	}
	return dir, nil
}

// cacheKey hashes what decides the binaries' content besides the Go
// toolchain (whose differences do not change what the programs do).
func cacheKey(src string) (string, error) {
	h := sha256.New()
	for _, name := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return "", fmt.Errorf("the wrapper module: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", name, len(b))
		h.Write(b)
	}
	fmt.Fprintf(h, "%s/%s %q\n", runtime.GOOS, runtime.GOARCH, buildRecipe)
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// complete: both binaries are there. They are renamed in only once
// built whole, so a present file is a finished one.
func complete(dir string) bool {
	for _, name := range []string{"kube-apiserver", "kube-controller-manager"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// build runs one `go build` of both programs (they share most packages,
// so one invocation compiles each once) in kubebin, at the lowest CPU
// priority when nice exists: it competes with every other test package.
func build(ctx context.Context, src, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	args := append([]string{"build"}, buildRecipe...)
	args = append(args, "-o", tmp+string(filepath.Separator), apiserverPkg, controllerManagerPkg)
	argv := append([]string{"go"}, args...)
	if nice, err := exec.LookPath("nice"); err == nil {
		argv = append([]string{nice, "-n", "19"}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = src
	// GOWORK=off: kubebin is its own module, whatever workspace encloses
	// the checkout. -mod=readonly: go.sum is committed complete.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s (in %s): %v\n%s", strings.Join(argv, " "), src, err, lastLines(out.String(), 40))
	}
	for _, name := range []string{"kube-apiserver", "kube-controller-manager"} {
		if err := os.Rename(filepath.Join(tmp, name), filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// lastLines is the end of a long output, for an error message.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
