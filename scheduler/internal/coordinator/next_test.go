package coordinator

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/checkpoint"
)

// TestNextGivesUpAfterTheTimeout: Next begins one checkpoint at a time;
// one still in progress is kept until the give-up time has passed, then
// failed (naming the tasks that did not report) and the next begins.
func TestNextGivesUpAfterTheTimeout(t *testing.T) {
	store, err := checkpoint.NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := restorePlan()
	c, err := NewCoordinator(context.Background(), store, "wc", p, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	first, ok := c.Next(time.Hour)
	if !ok {
		t.Fatal("no checkpoint begun")
	}
	c.Report(context.Background(), first, 1, nil)
	if id, ok := c.Next(time.Hour); ok {
		t.Fatalf("checkpoint %d begun while %d is in progress", id, first)
	}
	if c.Failed() != 0 {
		t.Fatalf("%d failed before the give-up time", c.Failed())
	}
	// Any time at all is past a give-up of 1ns.
	var next uint64
	for ok = false; !ok; {
		next, ok = c.Next(time.Nanosecond)
	}
	if next != first+1 || c.InProgress(first) || !c.InProgress(next) {
		t.Errorf("after giving up %d: began %d, in progress %v/%v", first, next, c.InProgress(first), c.InProgress(next))
	}
	lastErr, _ := c.LastError()
	if c.Failed() != 1 || lastErr == nil || !strings.Contains(lastErr.Error(), "not stored by every task within 1ns (tasks [2 3] did not report)") {
		t.Errorf("failed %d, last error %v", c.Failed(), lastErr)
	}
}
