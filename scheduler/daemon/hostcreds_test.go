package daemon_test

// TestHostCredsFileIsolation proves NATS isolation with the credential the
// daemon actually wrote for a real `ardea host` process, not one minted in
// the test (internal/natsauth's tests do that). Tenants acme and globex
// each run a topology named wc. Acme's host's creds file is 0600 in a 0700
// dir, is the file named in the process's environment, and neither it
// nor its seed or JWT is on the command line. A raw nats.go client with
// that file may subscribe to acme's wc subjects (it sees the host's
// traffic) and read acme's bucket info. The server refuses it, each time
// by its "Permissions Violation" answer and never by a timeout,
// subscriptions to >, ardea.>, globex's wc subjects, $SYS.> and _INBOX.>;
// publishing into globex's data and control subjects; globex's JetStream
// API (stream info, create, purge, delete, direct get, stream names); and
// managing acme's own buckets. Once acme's wc is killed through the API,
// the open connection is dropped as revoked, the file is gone, a saved
// copy of it is refused at CONNECT, and globex's file still connects. A
// client with no credential is refused at CONNECT.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/natsauth"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

func TestHostCredsFileIsolation(t *testing.T) {
	outsideDaemon(t, "what host processes can read and connect with")
	t.Parallel() // a daemon of its own (tiers_test.go)
	const A, B, top = "acme", "globex", "wc"
	ctx := context.Background()
	data := t.TempDir()
	d := startDaemonWith(t, daemon.Options{DataDir: data})

	// Each tenant submits an endless word count (generator, wasm bolts)
	// with its deploy token, and waits for it to run in host processes.
	clients := map[string]*api.Client{}
	running := map[string]api.Status{}
	for _, tn := range []string{A, B} {
		c := d.Client()
		c.Token = newToken(t, d, tn, auth.ScopeDeploy)
		req, err := pausedSubmit(top)
		if err != nil {
			t.Fatal(err)
		}
		req.Deactivated = false
		if _, err := c.Submit(ctx, req); err != nil {
			t.Fatalf("%s submits %s: %v", tn, top, err)
		}
		clients[tn] = c
	}
	for _, tn := range []string{A, B} {
		testutil.Eventually(t, tn+"'s "+top+" running in its processes", func() (bool, string) {
			st, err := clients[tn].Status(ctx, top)
			if err != nil {
				return false, err.Error()
			}
			ok := st.State == api.StateRunning && len(st.Containers) > 0
			for _, c := range st.Containers {
				ok = ok && c.PID != 0
			}
			running[tn] = st
			return ok, fmt.Sprintf("%s %s %+v", st.State, st.Message, st.Containers)
		})
	}
	credsFile := func(tn string) string {
		return filepath.Join(data, "creds", tn+"."+top+"_container-"+strconv.Itoa(running[tn].Containers[0].ID)+".creds")
	}

	// The file: the owner's only, handed over by the environment.
	path, pid := credsFile(A), running[A].Containers[0].PID
	for p, want := range map[string]os.FileMode{filepath.Dir(path): 0o700, path: 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: %v (%v), want mode %v", p, fi, err, want)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := natsauth.ParseCreds(raw, "")
	if err != nil {
		t.Fatal(err)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(cmdline, []byte("\x00--tenant\x00"+A+"\x00--topology\x00"+top+"\x00")) {
		t.Fatalf("process %d is not %s's %s host: %q", pid, A, top, cmdline)
	}
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(environ, []byte("\x00"+natsauth.EnvCreds+"="+path+"\x00")) {
		t.Errorf("the host's environment does not name %s", path)
	}
	for what, secret := range map[string]string{"seed": cr.Seed, "JWT": cr.JWT, "creds path": path} {
		if bytes.Contains(cmdline, []byte(secret)) {
			t.Errorf("the host's command line holds its credential's %s", what)
		}
	}
	if bytes.Contains(environ, []byte(cr.Seed)) {
		t.Error("the host's environment holds its credential's seed")
	}

	// A raw client with the file, as a process that stole it would be.
	var revoked atomic.Bool
	nc, err := nats.Connect(d.NATSURL(), nats.UserCredentials(path), nats.CustomInboxPrefix(natsauth.HostInboxPrefix(top)),
		nats.NoReconnect(), nats.Timeout(30*time.Second), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrAuthRevoked) {
				revoked.Store(true)
			}
		}))
	if err != nil {
		t.Fatalf("connect with %s's host creds file: %v", A, err)
	}
	defer nc.Close()

	// Not a dead credential: acme's own subjects carry its host's traffic,
	// and acme's bucket info answers from acme's account.
	own, err := bus.NewSubjects(A, top)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := nc.SubscribeSync(own.All())
	if err != nil {
		t.Fatal(err)
	}
	if m, err := sub.NextMsg(time.Minute); err != nil || !strings.HasPrefix(m.Subject, "ardea."+A+"."+top+".") {
		t.Fatalf("%s on its own subjects: %v %v", A, m, err)
	}
	if err := sub.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish(names.Subject(A, top, "probe"), []byte("x")); err != nil || nc.Flush() != nil || nc.LastError() != nil {
		t.Fatalf("%s publishing on its own subject: %v %v", A, err, nc.LastError())
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ab, bb := natsauth.TenantBuckets(A), natsauth.TenantBuckets(B)
	if s, err := js.Stream(ctx, "KV_"+ab.Topologies); err != nil || s.CachedInfo().Config.Name != "KV_"+ab.Topologies {
		t.Fatalf("%s: info of its own bucket %s: %v", A, ab.Topologies, err)
	}

	// Refused, each by the server's answer.
	theirs, err := bus.NewSubjects(B, top)
	if err != nil {
		t.Fatal(err)
	}
	inbox := nc.NewInbox()
	subscribe := func(s string) error { _, err := nc.SubscribeSync(s); return err }
	publish := func(s string) error { return nc.Publish(s, []byte("forged")) }
	request := func(s string) error { return nc.PublishRequest(s, inbox, []byte("{}")) }
	const jsAPI = "$JS.API."
	for _, c := range []struct {
		what, subject string
		op            func(string) error
	}{
		{"Subscription", ">", subscribe},
		{"Subscription", "ardea.>", subscribe},
		{"Subscription", theirs.All(), subscribe},
		{"Subscription", "$SYS.>", subscribe},
		{"Subscription", "_INBOX.>", subscribe},
		{"Publish", theirs.Data(1), publish},
		{"Publish", theirs.Credit(1), publish},
		{"Publish", theirs.Ack(1), publish},
		{"Publish", ctl.CommandSubject(B, top), publish},
		{"Publish", ctl.HeartbeatSubject(B, top), publish},
		{"Publish", ctl.AliveSubject(B, top), publish},
		{"Publish", "$SYS.REQ.SERVER.PING", publish},
		{"Publish", jsAPI + "STREAM.INFO.KV_" + bb.Topologies, request},
		{"Publish", jsAPI + "STREAM.INFO.OBJ_" + bb.Artifacts, request},
		{"Publish", jsAPI + "STREAM.CREATE.KV_" + bb.Topologies, request},
		{"Publish", jsAPI + "STREAM.PURGE.KV_" + bb.Plans, request},
		{"Publish", jsAPI + "STREAM.DELETE.KV_" + bb.Topologies, request},
		{"Publish", jsAPI + "DIRECT.GET.KV_" + bb.Topologies + ".$KV." + bb.Topologies + "." + top, request},
		{"Publish", jsAPI + "STREAM.NAMES", request},
		{"Publish", jsAPI + "STREAM.DELETE.KV_" + ab.Topologies, request},
		{"Publish", jsAPI + "STREAM.PURGE.KV_" + ab.State, request},
	} {
		natsDenied(t, nc, c.what, c.subject, func() error { return c.op(c.subject) })
	}
	if st, err := clients[B].Status(ctx, top); err != nil || st.State != api.StateRunning {
		t.Fatalf("%s's %s after %s's attempts: %v %v", B, top, A, st.State, err)
	}

	// Killed: the open connection is dropped as revoked, the file is gone,
	// a saved copy is refused at CONNECT; globex's credential still works.
	saved := filepath.Join(t.TempDir(), "saved.creds")
	if err := os.WriteFile(saved, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := clients[A].Action(ctx, top, "kill", nil, nil); err != nil {
		t.Fatalf("kill %s's %s: %v", A, top, err)
	}
	testutil.Eventually(t, "the server to drop the revoked connection", func() bool { return revoked.Load() && nc.IsClosed() })
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s after the kill: %v, want it removed", path, err)
	}
	if left, _ := filepath.Glob(filepath.Join(data, "creds", A+"."+top+"_*")); len(left) > 0 {
		t.Errorf("creds files left after the kill: %v", left)
	}
	_, err = nats.Connect(d.NATSURL(), nats.UserCredentials(saved), nats.NoReconnect(), nats.Timeout(30*time.Second))
	natsRefusedAtConnect(t, "the killed topology's saved creds file", err)
	bc, err := nats.Connect(d.NATSURL(), nats.UserCredentials(credsFile(B)), nats.NoReconnect(), nats.Timeout(30*time.Second))
	if err != nil {
		t.Fatalf("%s's creds file after %s's kill: %v", B, A, err)
	}
	bc.Close()
	_, err = nats.Connect(d.NATSURL(), nats.NoReconnect(), nats.Timeout(30*time.Second))
	natsRefusedAtConnect(t, "no credential", err)
}

// natsDenied runs op on nc and checks the server's answer, as
// internal/natsauth's tests do: after a round trip (the server sends its
// -ERR before the PONG), the connection's last error is the permissions
// violation naming what and subject, and the connection is still open.
func natsDenied(t *testing.T, nc *nats.Conn, what, subject string, op func() error) {
	t.Helper()
	if err := op(); err != nil {
		t.Fatalf("%s %s: %v", what, subject, err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatalf("%s %s: flush: %v", what, subject, err)
	}
	want := `Permissions Violation for ` + what + ` to "` + subject + `"`
	if err := nc.LastError(); !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s %s: last error %v, want %q", what, subject, err, want)
	}
	if !nc.IsConnected() {
		t.Fatalf("%s %s: connection closed", what, subject)
	}
}

// natsRefusedAtConnect checks a connect failed with the server's
// authorization violation.
func natsRefusedAtConnect(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil || !(errors.Is(err, nats.ErrAuthorization) || strings.Contains(strings.ToLower(err.Error()), "authorization violation")) {
		t.Errorf("%s: %v, want an authorization violation at CONNECT", what, err)
	}
}
