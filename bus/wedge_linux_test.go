package bus

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/internal/testutil/jswedge"
)

// TestPurgeOnFullDiskWedgesJetStream reproduces nats-server's file store
// deadlock (docs/reliability.md, "JetStream wedged"; package jswedge) and
// checks the watchdog's answer to it: the server reported wedged
// (Wedged, WedgedErr, the fault, an ERROR line) within its probe timeout,
// requests on the stream still unanswered once the disk is free again,
// and Shutdown returning.
func TestPurgeOnFullDiskWedgesJetStream(t *testing.T) {
	// Parallel: it runs after every sequential test, the goleak ones
	// among them. A wedged server's goroutines never end, and its timers
	// start new ones that block too.
	t.Parallel()
	dir := jswedge.Tmpfs(t)
	var logs syncBuf
	const probe = 2 * time.Second
	s, err := StartServer(t.Context(), ServerOptions{
		Logger:    slog.New(slog.NewTextHandler(&logs, nil)),
		JetStream: true, StoreDir: filepath.Join(dir, "nats"), Port: -1,
		HealInterval: 50 * time.Millisecond, HealMinFree: 1, HealProbeTimeout: probe,
	})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		s.Shutdown()
		t.Fatal(err)
	}
	// The connection may be stuck behind the wedged server: closed on a
	// goroutine of its own, not waited for.
	defer func() { go nc.Close() }()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	hung, free, err := jswedge.Wedge(ctx, nc, dir, "W", probe)
	if err != nil {
		t.Fatalf("%v\nlogs:\n%s", err, logs.String())
	}
	t.Logf("delete %d on the full disk got no answer", hung)
	select {
	case <-s.Wedged():
	case <-time.After(time.Minute):
		t.Fatalf("the watchdog did not report JetStream wedged\nlogs:\n%s", logs.String())
	}
	if err := s.WedgedErr(); err == nil || !strings.Contains(err.Error(), "JetStream wedged") {
		t.Errorf("WedgedErr = %v, want a JetStream wedged error", err)
	}
	if f, _ := s.JetStreamFault(); f == nil || !strings.Contains(f.Error(), "wedged") {
		t.Errorf("JetStreamFault = %v, want the wedge", f)
	}
	if !strings.Contains(logs.String(), `level=ERROR msg="JetStream wedged`) {
		t.Errorf("no ERROR line for the wedge:\n%s", logs.String())
	}
	// Freeing the disk does not help: the store's lock is held for ever.
	if err := free(); err != nil {
		t.Fatal(err)
	}
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.StreamInfo("OBJ_W", nats.MaxWait(probe)); !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a request on the wedged stream once the disk is free: %v, want no answer", err)
	}
	stopped := make(chan struct{})
	go func() {
		s.Shutdown()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("Shutdown of a wedged server did not return")
	}
}

// TestLowOnSpace: the store's free space against HealMinFree, named in
// the error.
func TestLowOnSpace(t *testing.T) {
	dir := jswedge.Tmpfs(t) // 96 MiB
	for _, tc := range []struct {
		minFree int64
		low     bool
	}{{1 << 20, false}, {200 << 20, true}} {
		s, err := StartServer(t.Context(), ServerOptions{JetStream: true, StoreDir: filepath.Join(dir, "nats"), Port: -1, HealMinFree: tc.minFree})
		if err != nil {
			t.Fatal(err)
		}
		err = s.LowOnSpace()
		s.Shutdown()
		if (err != nil) != tc.low {
			t.Errorf("min free %d: LowOnSpace = %v, want low %v", tc.minFree, err, tc.low)
		}
		if err != nil && (!strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "below 209715200")) {
			t.Errorf("the error does not name the store and the floor: %v", err)
		}
	}
}
