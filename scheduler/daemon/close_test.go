package daemon_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// TestCloseIdempotentRefusesSubmit: once Close has begun, a submit is
// refused with ErrClosed (it would register a topology manager Close
// never stops); a second Close returns the first's result; nothing of the
// daemon's is left running.
func TestCloseIdempotentRefusesSubmit(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(), natsStatusWaiter)
	d, err := daemon.Start(context.Background(), daemon.Options{
		DataDir: t.TempDir(), Listen: "127.0.0.1:0", HostPath: ardeaBin,
		HostArgs: []string{"--log-format", "json", "--log-level", "info", "host"}, MaxRestarts: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	withAdmin(d)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	req, err := pausedSubmit("late")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Submit(ctx, req); !errors.Is(err, daemon.ErrClosed) {
		t.Errorf("submit after Close began: %v, want ErrClosed", err)
	}
	if err := d.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
