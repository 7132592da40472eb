package host

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/ardea-dev/ardea/connectors/plugin"
)

type spout struct{ in *instance }

func (s *spout) Open(ctx context.Context, tc plugin.TaskContext, out plugin.Collector) error {
	return s.in.open(callOpen, tc, out)
}

func (s *spout) Next(ctx context.Context, n int, out plugin.Collector) (plugin.Status, error) {
	in := s.in
	if err := in.ready(callNext); err != nil {
		return plugin.Idle, err
	}
	rc, err := in.call(callNext, uint64(min(max(n, 0), math.MaxInt32)), out)
	if err != nil {
		return plugin.Idle, err
	}
	switch st := plugin.Status(rc); st {
	case plugin.Emitted, plugin.Idle, plugin.Done:
		return st, nil
	}
	return plugin.Idle, in.kill(&callError{
		msg:  fmt.Sprintf("%s: ardea_next returned %d, want 0 (emitted), 1 (idle) or 2 (done): %v", in.label, rc, errABIViolation),
		kind: errABIViolation,
	})
}

func (s *spout) Ack(ctx context.Context, ids []uint64, out plugin.Collector) error {
	return s.in.ids(callAck, ids, out)
}
func (s *spout) Fail(ctx context.Context, ids []uint64, out plugin.Collector) error {
	return s.in.ids(callFail, ids, out)
}
func (s *spout) Activate(ctx context.Context) error   { return s.in.simple(callActivate, nil) }
func (s *spout) Deactivate(ctx context.Context) error { return s.in.simple(callDeactivate, nil) }
func (s *spout) Close(ctx context.Context) error      { return s.in.closeTask() }

// bolt is a bolt task's instance. A module with a cursor gets a fresh
// instance after a failing tuple (failing.go); the task's goroutine uses
// in, other goroutines (UsageOf) live.
type bolt struct {
	in          *instance
	live        atomic.Pointer[instance]
	ic          InstanceConfig
	tc          plugin.TaskContext // what Prepare was given, for a fresh instance
	consecutive int                // tuples failed in a row
	failing     time.Duration      // the time their failed calls took
	batch       []byte             // a batch without its failed records
	restarts    atomic.Int64
}

func (b *bolt) Prepare(ctx context.Context, tc plugin.TaskContext, out plugin.Collector) error {
	b.tc = tc
	return b.in.open(callPrepare, tc, out)
}

func (b *bolt) Execute(ctx context.Context, batch []byte, out plugin.Collector) error {
	in := b.in
	if err := in.ready(callExecute); err != nil {
		return err
	}
	if in.cursorPtr != 0 && isolating {
		return b.executeIsolated(ctx, batch, out)
	}
	if err := in.input(batch); err != nil {
		return err
	}
	_, err := in.call(callExecute, uint64(len(batch)), out)
	return err
}

func (b *bolt) Tick(ctx context.Context, out plugin.Collector) error {
	return b.in.simple(callTick, out)
}
func (b *bolt) Finish(ctx context.Context, out plugin.Collector) error {
	return b.in.simple(callFinish, out)
}
func (b *bolt) Close(ctx context.Context) error { return b.in.closeTask() }
