package statemgr

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testutil"
)

func TestTMLockExclusiveAndRelease(t *testing.T) {
	s := openTenant(t)
	ctx := ctxT(t)
	if _, err := s.AcquireTMLock(ctx, "wc", "tm-1", 5*time.Second); !errors.Is(err, ErrNotFound) {
		t.Errorf("lock of missing topology: %v, want ErrNotFound", err)
	}
	createTopo(t, s, "wc")
	if _, err := s.TMLocation(ctx, "wc"); !errors.Is(err, ErrNotFound) {
		t.Errorf("location before any TM: %v, want ErrNotFound", err)
	}
	l1, err := s.AcquireTMLock(ctx, "wc", "tm-1", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if owner, err := s.TMLocation(ctx, "wc"); err != nil || owner != "tm-1" {
		t.Errorf("location %q, %v; want tm-1", owner, err)
	}
	_, err = s.AcquireTMLock(ctx, "wc", "tm-2", 5*time.Second)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), `"tm-1"`) {
		t.Fatalf("second acquire: %v, want ErrLocked naming tm-1", err)
	}
	if err := l1.Refresh(ctx); err != nil {
		t.Fatalf("refresh while held: %v", err)
	}
	if err := l1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l1.Release(ctx); err != nil {
		t.Errorf("second release: %v", err)
	}
	if err := l1.Refresh(ctx); !errors.Is(err, ErrLockLost) {
		t.Errorf("refresh after release: %v, want ErrLockLost", err)
	}
	l2, err := s.AcquireTMLock(ctx, "wc", "tm-2", 5*time.Second)
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	if owner, _ := s.TMLocation(ctx, "wc"); owner != "tm-2" {
		t.Errorf("location %q, want tm-2", owner)
	}
	_ = l2.Release(ctx)
}

func TestTMLockExpiresWithoutRefresh(t *testing.T) {
	s := openTenant(t)
	ctx := ctxT(t)
	createTopo(t, s, "wc")
	const ttl = time.Second
	start := time.Now()
	dead, err := s.AcquireTMLock(ctx, "wc", "tm-dead", ttl)
	if err != nil {
		t.Fatal(err)
	}
	// One refresh (it must carry a TTL too), then the holder "dies":
	// nobody refreshes. Another TM polls until it can take over.
	if err := dead.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	var l *Lock
	testutil.EventuallyWithin(t, 15*time.Second, "the lock to expire", func() bool {
		var err error
		l, err = s.AcquireTMLock(ctx, "wc", "tm-next", ttl)
		if err != nil && !errors.Is(err, ErrLocked) {
			t.Fatal(err)
		}
		return err == nil
	})
	took := time.Since(start)
	t.Logf("lock with ttl %s taken over %s after acquire", ttl, took)
	if took < ttl {
		t.Errorf("lock taken over after %s, before its ttl %s", took, ttl)
	}
	err = dead.Refresh(ctx)
	if !errors.Is(err, ErrLockLost) || !strings.Contains(err.Error(), `"tm-next"`) {
		t.Errorf("dead holder's refresh: %v, want ErrLockLost naming tm-next", err)
	}
	if err := dead.Release(ctx); !errors.Is(err, ErrLockLost) {
		t.Errorf("dead holder's release: %v, want ErrLockLost", err)
	}
	if owner, _ := s.TMLocation(ctx, "wc"); owner != "tm-next" {
		t.Errorf("location %q after the dead holder's release, want tm-next", owner)
	}
	_ = l.Release(ctx)
}

func TestTMLockKeepAliveOutlivesTTL(t *testing.T) {
	s := openTenant(t)
	ctx := ctxT(t)
	createTopo(t, s, "wc")
	l, err := s.AcquireTMLock(ctx, "wc", "tm-1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	kctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- l.KeepAlive(kctx) }()
	// Held well past its TTL while kept alive. Time passing is what is
	// tested here, so this waits for it.
	start := time.Now()
	for time.Since(start) < 5*l.TTL()/2 {
		if _, err := s.AcquireTMLock(ctx, "wc", "tm-2", time.Second); !errors.Is(err, ErrLocked) {
			t.Fatalf("after %s: acquire by tm-2: %v, want ErrLocked", time.Since(start), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("KeepAlive: %v", err)
	}

	// Deleting the topology takes the lock away; KeepAlive reports it.
	go func() { done <- l.KeepAlive(ctx) }()
	if err := s.DeleteTopology(ctx, "wc"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrLockLost) {
			t.Errorf("KeepAlive after delete: %v, want ErrLockLost", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("KeepAlive did not notice the lost lock")
	}
}

func TestTMLockSameOwnerTakesOver(t *testing.T) {
	s := openTenant(t)
	ctx := ctxT(t)
	createTopo(t, s, "wc")
	old, err := s.AcquireTMLock(ctx, "wc", "daemon-tm", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The daemon restarts and its TM comes back under the same identity
	// without waiting 30 s.
	cur, err := s.AcquireTMLock(ctx, "wc", "daemon-tm", 30*time.Second)
	if err != nil {
		t.Fatalf("re-acquire by the same owner: %v", err)
	}
	if err := old.Refresh(ctx); !errors.Is(err, ErrLockLost) {
		t.Errorf("old incarnation's refresh: %v, want ErrLockLost", err)
	}
	if err := cur.Refresh(ctx); err != nil {
		t.Errorf("current refresh: %v", err)
	}
	if err := cur.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestTMLockArguments(t *testing.T) {
	s := openTenant(t)
	ctx := ctxT(t)
	createTopo(t, s, "wc")
	for _, tc := range []struct {
		topology, owner string
		ttl             time.Duration
	}{
		{"wc", "tm", 500 * time.Millisecond},
		{"wc", "", time.Second},
		{"w.c", "tm", time.Second},
	} {
		if _, err := s.AcquireTMLock(ctx, tc.topology, tc.owner, tc.ttl); !errors.Is(err, ErrInvalid) {
			t.Errorf("acquire(%q, %q, %s): %v, want ErrInvalid", tc.topology, tc.owner, tc.ttl, err)
		}
	}
	// JetStream TTLs are whole seconds: 1.5 s becomes 2 s.
	l, err := s.AcquireTMLock(ctx, "wc", "tm", 1500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if l.TTL() != 2*time.Second || l.Topology() != "wc" || l.Owner() != "tm" {
		t.Errorf("lock %s/%s ttl %s, want wc/tm 2s", l.Topology(), l.Owner(), l.TTL())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestTMLockHeldUntil: a lock counts as surely held until a fifth of its
// TTL before the server could expire it (from the last write's send);
// a refresh moves that on; a holder that cannot reach the store stops
// KeepAlive with ErrLockLost once that time has passed (before another
// can acquire the lock); a released lock is held until no time.
func TestTMLockHeldUntil(t *testing.T) {
	nc := connect(t, sharedServer)
	s, err := Open(context.Background(), nc, Options{Tenant: uniqueTenant(t, t.Name())})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	createTopo(t, s, "wc")
	before := time.Now()
	l, err := s.AcquireTMLock(ctx, "wc", "tm-1", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if u := l.HeldUntil(); u.Before(before) || !u.Before(time.Now().Add(2*time.Second)) || u.After(time.Now().Add(1600*time.Millisecond)) {
		t.Errorf("held until %v after acquisition (between %v and +1.6 s)", u.Sub(before), before)
	}
	first := l.HeldUntil()
	sent := time.Now()
	if err := l.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if u := l.HeldUntil(); !u.After(first) || u.Before(sent.Add(1600*time.Millisecond)) {
		t.Errorf("held until %v after a refresh sent at %v", u, sent)
	}
	nc.Close() // the store is unreachable from now on
	err = l.KeepAlive(ctx)
	if !errors.Is(err, ErrLockLost) {
		t.Fatalf("KeepAlive without the store: %v, want ErrLockLost", err)
	}
	if time.Now().Before(l.HeldUntil()) {
		t.Errorf("KeepAlive gave up at %v, before the lock could be lost (%v)", time.Now(), l.HeldUntil())
	}
}

// TestTMLockReacquire: a manager that lost its lock acquires it again,
// keeping its epoch, only if no other manager acquired it meanwhile: one
// that did may have run the topology, even if it lost the lock again too.
func TestTMLockReacquire(t *testing.T) {
	s := openTenant(t)
	ctx := ctxT(t)
	createTopo(t, s, "wc")
	lost, err := s.AcquireTMLock(ctx, "wc", "tm-1", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Released stands for expired: the key is gone and the holder did
	// not see it go.
	if err := lost.Release(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := lost.Reacquire(ctx)
	if err != nil {
		t.Fatalf("reacquire with no manager between: %v", err)
	}
	if again.Epoch() != lost.Epoch() {
		t.Errorf("reacquired epoch %d, want the lost lock's %d", again.Epoch(), lost.Epoch())
	}
	if owner, err := s.TMLocation(ctx, "wc"); err != nil || owner != "tm-1" {
		t.Errorf("location %q, %v after reacquire; want tm-1", owner, err)
	}

	// Another manager takes the lock while tm-1's is lost: tm-1 may not
	// take it back, neither while the other holds it nor after the other
	// lost it in turn.
	if err := again.Release(ctx); err != nil {
		t.Fatal(err)
	}
	other, err := s.AcquireTMLock(ctx, "wc", "tm-2", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if other.Epoch() <= lost.Epoch() {
		t.Errorf("new manager's epoch %d, want above %d", other.Epoch(), lost.Epoch())
	}
	if _, err := again.Reacquire(ctx); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), `"tm-2"`) {
		t.Errorf("reacquire while tm-2 holds it: %v, want ErrLocked naming tm-2", err)
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = again.Reacquire(ctx)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "another manager") {
		t.Fatalf("reacquire after another manager held it: %v, want ErrLocked naming another manager", err)
	}
	// The refused reacquire gave the lock back: the next manager can
	// start at once.
	if _, err := s.TMLocation(ctx, "wc"); !errors.Is(err, ErrNotFound) {
		t.Errorf("location after the refused reacquire: %v, want ErrNotFound", err)
	}
	if _, err := s.AcquireTMLock(ctx, "wc", "tm-3", 5*time.Second); err != nil {
		t.Errorf("acquire after the refused reacquire: %v", err)
	}
}

// TestWatchTMLocks: the watch names each topology whose lock goes
// (released, or with its topology), never the managers' epoch records
// kept in the same bucket.
func TestWatchTMLocks(t *testing.T) {
	s := openTenant(t)
	ctx := ctxT(t)
	createTopo(t, s, "wc")
	createTopo(t, s, "other")
	freed, err := s.WatchTMLocks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := func() string {
		select {
		case name := <-freed:
			return name
		case <-ctx.Done():
			t.Fatal("no freed lock before the test's deadline")
			return ""
		}
	}
	l, err := s.AcquireTMLock(ctx, "wc", "tm-1", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Reacquire(ctx); err != nil { // tm-1's own: taken over
		t.Fatal(err)
	}
	if err := s.DeleteTopology(ctx, "wc"); err != nil {
		t.Fatal(err)
	}
	// A sentinel after the delete: what the delete freed comes first.
	o, err := s.AcquireTMLock(ctx, "other", "tm-2", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Release(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for name := ""; name != "other"; {
		name = next()
		got = append(got, name)
	}
	if strings.Join(got, " ") != "wc other" {
		t.Errorf("freed %q, want [wc other]", got)
	}
}
