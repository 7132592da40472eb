package testutil

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"
)

// CacheEnv names the directory of the tests' persistent caches
// (CompileCache); without it they are in os.UserCacheDir()/ardea-test.
const CacheEnv = "ARDEA_TEST_CACHE"

var (
	cacheOnce sync.Once
	cacheRoot string
)

// testCacheRoot is $ARDEA_TEST_CACHE, else the user's cache dir +
// /ardea-test, else one under the temp dir when there is no user cache
// dir (no HOME): computed once, before any test moves HOME.
func testCacheRoot() string {
	cacheOnce.Do(func() {
		cacheRoot = os.Getenv(CacheEnv)
		if cacheRoot == "" {
			if d, err := os.UserCacheDir(); err == nil {
				cacheRoot = filepath.Join(d, "ardea-test")
			} else {
				cacheRoot = filepath.Join(os.TempDir(), fmt.Sprintf("ardea-test-%d", os.Getuid()))
			}
		}
		if abs, err := filepath.Abs(cacheRoot); err == nil {
			cacheRoot = abs
		}
		pruneCache(cacheRoot, time.Now().Add(-cacheUnused))
	})
	return cacheRoot
}

// cacheUnused is how long an entry of the tests' caches may go unread
// before a test binary removes it: modules a test rewrites (an
// instrumenter being changed) and older wazero versions leave entries no
// run reads again.
const cacheUnused = 14 * 24 * time.Hour

// pruneCache removes the files under root neither read (atime, which
// Linux's relatime updates about daily; elsewhere only the write counts)
// nor written since before (and the temporary files of a writer that
// died). A file another test binary still has open stays readable; one
// it looks for after is compiled again.
func pruneCache(root string, before time.Time) {
	_ = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			return nil
		}
		used := fi.ModTime()
		if at, ok := accessTime(fi); ok && at.After(used) {
			used = at
		}
		if used.Before(before) {
			_ = os.Remove(path)
		}
		return nil
	})
}

// wazeroVersion is the version of wazero go.mod requires: a test binary
// carries no module information, so wazero files its entries under the
// version "dev" whatever it is (and would take another version's code for
// its own); the caches are kept apart by this instead. "" when go.mod
// cannot be read or replaces wazero (a local copy changes without its
// version): the caches are then the process's own.
var wazeroVersion = sync.OnceValue(func() string {
	b, err := os.ReadFile(RepoPath("go.mod"))
	if err != nil {
		return ""
	}
	return wazeroVersionIn(b)
})

// wazeroVersionIn reads wazeroVersion from a go.mod.
func wazeroVersionIn(gomod []byte) string {
	if wazeroReplaced.Match(gomod) {
		return ""
	}
	m := wazeroRequired.FindSubmatch(gomod)
	if m == nil {
		return ""
	}
	return string(m[1])
}

var (
	wazeroRequired = regexp.MustCompile(`(?m)^\s*(?:require\s+)?github\.com/tetratelabs/wazero\s+(v[^\s/]+)\s*(?://.*)?$`)
	wazeroReplaced = regexp.MustCompile(`(?m)^\s*(?:replace\s+)?github\.com/tetratelabs/wazero(?:\s+v\S+)?\s*=>`)
)

// CompileCache is the wazero compilation cache of every test that runs
// committed modules (a host.Config.CacheDir or a dir for
// wazero.NewCompilationCacheWithDir): one directory for every package and
// every run, so each module is compiled once per machine rather than once
// per package and run. wazero keys each entry by the module's hash and
// the CPU (the directory by wazero's version, from go.mod), and writes it
// to a temporary file renamed into place, so concurrent test binaries
// share it safely. The first run on a machine (a cold cache) compiles
// everything and is slower. It panics if the directory cannot be made.
//
// Modules a test generates or builds anew each run belong in a cache of
// the test's own: they would only grow this one.
func CompileCache() string {
	return sharedDir("wazero")
}

// sharedDir makes and returns the tests' cache root + name + the wazero
// version, or a directory of the process's own when the version is not
// known (it is left behind: only a go.mod replacing wazero leads there).
func sharedDir(name string) string {
	var d string
	if v := wazeroVersion(); v == "" {
		p, err := privateDir()
		if err != nil {
			panic(fmt.Sprintf("testutil: the tests' compilation cache: %v", err))
		}
		d = filepath.Join(p, name)
	} else {
		d = filepath.Join(testCacheRoot(), name, v)
	}
	if err := os.MkdirAll(d, 0o700); err != nil {
		panic(fmt.Sprintf("testutil: the tests' compilation cache: %v", err))
	}
	return d
}

var privateDir = sync.OnceValues(func() (string, error) { return os.MkdirTemp("", "ardea-test-cache-") })

// LinkCompileCache makes dir (made if missing) an ardea cache dir (a
// daemon.RunOptions.CacheDir or --cache-dir) whose compiled code is the
// tests' shared one: its wazero and manifest folders are links to
// CompileCache and a sibling of it. What else an ardea cache dir holds,
// the modules built from component folders (written in place and named by
// their folder, not their content), stays in dir, the caller's own. It
// returns dir, and panics if the links cannot be made.
func LinkCompileCache(dir string) string {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		panic(fmt.Sprintf("testutil: cache dir: %v", err))
	}
	for name, target := range map[string]string{"wazero": CompileCache(), "manifest": sharedDir("manifest")} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil && !os.IsExist(err) {
			panic(fmt.Sprintf("testutil: cache dir: %v", err))
		}
	}
	return dir
}

// RunCacheDir is a new ardea cache dir of t's (LinkCompileCache on a
// directory removed when t ends).
func RunCacheDir(t testing.TB) string {
	t.Helper()
	return LinkCompileCache(t.TempDir())
}

// CacheDir makes (if missing) and returns the folder name of the tests'
// persistent cache root ($ARDEA_TEST_CACHE, else the user's cache dir +
// /ardea-test): for a cache whose entries name what they were made from
// themselves (the kube harness keys its binaries by their module's
// go.sum), unlike CompileCache, which is kept apart by wazero's version.
// Entries unused for two weeks are pruned like every other.
func CacheDir(name string) (string, error) {
	d := filepath.Join(testCacheRoot(), name)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", err
	}
	return d, nil
}
