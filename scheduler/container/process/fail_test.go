package process

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/engine"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// TestFailFatal: the failures a restart cannot cure are reported fatal
// (the TM fails the topology at once); the others are restarted.
func TestFailFatal(t *testing.T) {
	for _, tc := range []struct {
		err   error
		fatal bool
	}{
		{fmt.Errorf("component hog task 2: ardea_execute: state_put: %w", host.ErrStateLimit), true},
		{fmt.Errorf("component e task 1: %w", host.ErrEmitLimit), true},
		{&engine.DrainedError{Component: "lines", Err: errors.New("record too large")}, true},
		{fmt.Errorf("component c task 3: %w", host.ErrMemoryLimit), false},
		{fmt.Errorf("component c task 3: %w", host.ErrDeadlineExceeded), false},
		{errors.New("host: the physical plan watch ended"), false},
	} {
		h := &proc{log: slog.New(slog.DiscardHandler)}
		h.fail(tc.err)
		if h.fatal != tc.fatal || h.state != api.HostFailed || h.lastErr != tc.err.Error() {
			t.Errorf("fail(%v): fatal %v state %s, want fatal %v", tc.err, h.fatal, h.state, tc.fatal)
		}
	}
}
