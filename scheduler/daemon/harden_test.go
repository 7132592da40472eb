package daemon_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/natsauth"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/settings"
)

// finiteSubmit is a paused word count whose generator ends after count
// tuples per task.
func finiteSubmit(t *testing.T, name string, count int) api.SubmitRequest {
	t.Helper()
	return api.SubmitRequest{Name: name, Deactivated: true,
		Spec:    wcSpec(t, name, 1, generatorSpout("1000", fmt.Sprint(count)), ""),
		Modules: wcModules(t)}
}

// TestHostProcessHardening runs a tenant's topology in real `ardea host`
// processes from a data dir an older version left world-readable:
//   - the daemon tightens the data dir (0755 -> 0700) and its old log
//     file (0644 -> 0600) at start;
//   - a secret in the daemon's environment is not in a host's
//     (/proc/<pid>/environ), while its NATS credential's variable is;
//   - the tenant's machine policy reaches a host in its environment
//     (settings.MachinePolicyEnv), not on its command line, which every
//     local user reads (/proc/<pid>/cmdline);
//   - once the topology is FINISHED, its hosts' creds files are gone and
//     a saved copy of one is refused at CONNECT (revoked at FINISHED, not
//     only at kill);
//   - after the run, nothing under the data dir has a group or other
//     permission bit.
func TestHostProcessHardening(t *testing.T) {
	outsideDaemon(t, "host processes' environment, files and limits")
	const secret = "ARDEA_TEST_DAEMON_SECRET"
	t.Setenv(secret, "do-not-leak-0xC0FFEE")
	const A, top = "acme", "fin"
	ctx := context.Background()
	data := filepath.Join(t.TempDir(), "data")
	oldLog := filepath.Join(data, "logs", "old_container-1.log")
	if err := os.MkdirAll(filepath.Dir(oldLog), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(oldLog, []byte("an older version's guest output\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{data, filepath.Dir(oldLog), oldLog} {
		if err := os.Chmod(p, map[bool]os.FileMode{true: 0o755, false: 0o644}[p != oldLog]); err != nil {
			t.Fatal(err)
		}
	}
	d := startDaemonWith(t, daemon.Options{DataDir: data})
	for p, want := range map[string]os.FileMode{data: 0o700, filepath.Dir(oldLog): 0o700, oldLog: 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s at start: %v %v, want mode %v", p, fi.Mode(), err, want)
		}
	}

	c := d.Client()
	c.Token = newToken(t, d, A, auth.ScopeDeploy)
	if _, err := c.Submit(ctx, finiteSubmit(t, top, 200)); err != nil {
		t.Fatal(err)
	}
	var st api.Status
	testutil.Eventually(t, "the paused topology's hosts running", func() (bool, string) {
		var err error
		if st, err = c.Status(ctx, top); err != nil {
			return false, err.Error()
		}
		ok := st.State == api.StatePaused && len(st.Containers) == 2
		for _, ct := range st.Containers {
			ok = ok && ct.PID != 0
		}
		return ok, fmt.Sprintf("%s %+v", st.State, st.Containers)
	})
	var saved [][]byte
	for _, ct := range st.Containers {
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", ct.PID))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(environ, []byte(secret)) {
			t.Errorf("container %d's environment holds the daemon's %s", ct.ID, secret)
		}
		var creds, policy string
		for _, kv := range strings.Split(string(environ), "\x00") {
			if v, ok := strings.CutPrefix(kv, natsauth.EnvCreds+"="); ok {
				creds = v
			}
			if v, ok := strings.CutPrefix(kv, settings.MachinePolicyEnv+"="); ok {
				policy = v
			}
		}
		// acme's policy: confined, its dead letters in its own stream.
		if !strings.Contains(policy, `"confined":true`) || !strings.Contains(policy, `"tenant":"`+A+`"`) ||
			!strings.Contains(policy, `"dead_letter_stream":"`+names.DeadLetterStream+`"`) {
			t.Errorf("container %d's environment: %s=%q, want acme's confined policy", ct.ID, settings.MachinePolicyEnv, policy)
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", ct.PID))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(cmdline, []byte("machine-policy")) || bytes.Contains(cmdline, []byte("confined")) || bytes.Contains(cmdline, []byte(names.DeadLetterStream)) {
			t.Errorf("container %d's command line holds its machine policy: %q", ct.ID, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
		raw, err := os.ReadFile(creds)
		if err != nil {
			t.Fatalf("container %d's creds file %q: %v", ct.ID, creds, err)
		}
		saved = append(saved, raw)
	}

	if _, err := c.Action(ctx, top, "activate", nil, nil); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, top+" FINISHED", func() (bool, string) {
		st, err := c.Status(ctx, top)
		if err != nil {
			return false, err.Error()
		}
		return st.State == api.StateFinished, string(st.State) + " " + st.Message
	})
	testutil.Eventually(t, "the finished topology's creds files removed", func() (bool, string) {
		left, _ := filepath.Glob(filepath.Join(data, "creds", A+"."+top+"_*"))
		return len(left) == 0, fmt.Sprint(left)
	})
	for i, raw := range saved {
		path := filepath.Join(t.TempDir(), "saved.creds")
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(d.NATSURL(), nats.UserCredentials(path), nats.NoReconnect(), nats.Timeout(30*time.Second))
		if nc != nil {
			nc.Close()
		}
		natsRefusedAtConnect(t, fmt.Sprintf("container %d's saved creds after FINISHED", i+1), err)
	}

	err := filepath.WalkDir(data, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking (NATS's temporary files)
			}
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return nil
		}
		if fi.Mode()&fs.ModeSymlink == 0 && fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v, want no group or other bits", path, fi.Mode())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestHostCredsRevokedAtFailed: a topology whose host keeps dying ends
// FAILED; its hosts' creds files are then gone and a saved copy of the
// credential is refused at CONNECT (revoked at FAILED, not only at kill).
func TestHostCredsRevokedAtFailed(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	t.Parallel() // a daemon of its own (tiers_test.go)
	const top = "dies"
	ctx := context.Background()
	data := t.TempDir()
	d := startDaemonWith(t, daemon.Options{DataDir: data, MaxRestarts: 1,
		Backoff: launcher.BackoffPolicy{Initial: time.Millisecond, Max: time.Millisecond}})
	c := d.Client()
	req, err := pausedSubmit(top)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	var saved []byte
	killed := map[int]bool{}
	testutil.Eventually(t, top+" FAILED after its host was killed again and again", func() (bool, string) {
		st, err := c.Status(ctx, top)
		if err != nil {
			return false, err.Error()
		}
		if st.State == api.StateFailed {
			return true, ""
		}
		for _, ct := range st.Containers {
			if ct.PID == 0 || killed[ct.PID] {
				continue
			}
			if saved == nil {
				raw, err := os.ReadFile(filepath.Join(data, "creds", top+"_container-1.creds"))
				if err != nil {
					return false, err.Error()
				}
				saved = raw
			}
			killed[ct.PID] = true
			_ = syscall.Kill(ct.PID, syscall.SIGKILL)
		}
		return false, fmt.Sprintf("%s %+v", st.State, st.Containers)
	})
	// The status says FAILED as soon as the state changes; the daemon
	// then stops the other containers and revokes the credentials.
	testutil.Eventually(t, "the failed topology's creds files removed", func() (bool, string) {
		left, _ := filepath.Glob(filepath.Join(data, "creds", top+"_*"))
		return len(left) == 0, fmt.Sprint(left)
	})
	path := filepath.Join(t.TempDir(), "saved.creds")
	if err := os.WriteFile(path, saved, 0o600); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(d.NATSURL(), nats.UserCredentials(path), nats.NoReconnect(), nats.Timeout(30*time.Second))
	if nc != nil {
		nc.Close()
	}
	natsRefusedAtConnect(t, "the failed topology's saved creds", err)
}
