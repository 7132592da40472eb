package engine_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/engine"
)

// waitResult waits for a Group.Wait running on its own goroutine; the
// bound only detects a hang.
func waitResult(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s: Wait did not return", what)
	}
}

// TestGroupHold: a hold keeps Wait from returning until Release, and a
// cancelled group does not wait for a Release (a container stopped in the
// middle of a live switch); a Release after the cancel is harmless.
func TestGroupHold(t *testing.T) {
	t.Run("release", func(t *testing.T) {
		g := engine.NewGroup(t.Context(), slog.New(slog.DiscardHandler))
		g.Hold()
		done := make(chan error, 1)
		go func() { done <- g.Wait() }()
		select {
		case <-done:
			t.Fatal("Wait returned while held")
		case <-time.After(50 * time.Millisecond):
		}
		g.Release()
		waitResult(t, done, "after Release")
		g.Release() // nothing held: no effect
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		g := engine.NewGroup(ctx, slog.New(slog.DiscardHandler))
		g.Hold()
		g.Hold()
		done := make(chan error, 1)
		go func() { done <- g.Wait() }()
		cancel()
		waitResult(t, done, "after the cancel")
		g.Release()
		g.Release()
	})
}
