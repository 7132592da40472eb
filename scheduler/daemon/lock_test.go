package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// TestTMLockLossAndTakeover: a TM whose lock disappears acquires it again
// and goes on managing; a TM whose lock another daemon took steps down (its
// containers stop, requests get the reason). The containers here are a
// script that only sleeps: the lock logic does not need real hosts.
func TestTMLockLossAndTakeover(t *testing.T) {
	testutil.RacedToo(t)
	dir := t.TempDir()
	host := filepath.Join(dir, "host.sh")
	if err := os.WriteFile(host, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := Start(context.Background(), Options{DataDir: filepath.Join(dir, "data"), Listen: "127.0.0.1:0", HostPath: host, TMLockTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = d.Close(ctx)
	})
	b := ardea.NewBuilder("locked")
	b.Spout("lines", "builtin:generator")
	b.Bolt("out", "builtin:file").Config("path", filepath.Join(dir, "out.txt")).Shuffle("lines")
	top, err := b.BuildWith(ardea.ValidateOptions{Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := top.Format()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := d.Submit(ctx, api.SubmitRequest{Name: "locked", Spec: string(spec)}); err != nil {
		t.Fatal(err)
	}
	tm, err := d.get(ctx, "locked")
	if err != nil {
		t.Fatal(err)
	}
	holder := func() string {
		owner, err := defaultStore(d).TMLocation(ctx, "locked")
		if err != nil {
			return err.Error()
		}
		return owner
	}
	poll := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s (lock holder: %s)", what, holder())
			}
			time.Sleep(20 * time.Millisecond) // polling interval
		}
	}

	// The lock vanishes (say, removed by hand): the TM takes it again.
	first := tm.TMLock()
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	poll("the TM to hold a new lock", func() bool {
		return tm.TMLock() != first && holder() == d.id
	})
	if _, err := d.get(ctx, "locked"); err != nil {
		t.Fatalf("after re-acquiring: %v", err)
	}

	// Another daemon takes it: this TM steps down.
	second := tm.TMLock()
	if err := second.Release(ctx); err != nil {
		t.Fatal(err)
	}
	other, err := defaultStore(d).AcquireTMLock(ctx, "locked", "another-daemon", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release(ctx)
	poll("the TM to step down", func() bool {
		_, err := d.get(ctx, "locked")
		return err != nil
	})
	_, err = d.get(ctx, "locked")
	if !errors.Is(err, ErrBadState) || !strings.Contains(err.Error(), "another-daemon") {
		t.Fatalf("request after the takeover: %v, want one naming the other daemon", err)
	}
	poll("this daemon's container to stop", func() bool {
		ps, ok := d.sup.Status(tm.ContainerID(1))
		return !ok || ps.PID == 0
	})
}

// defaultStore is the state manager of d's default tenant.
func defaultStore(d *Daemon) *statemgr.Store {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ten.Lookup(d.ten.Default()).Store()
}
