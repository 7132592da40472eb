package engine_test

import (
	"testing"

	"github.com/ardea-dev/ardea/scheduler/planner"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/internal/plan"
)

// startSM builds b's topology into a one-container plan and starts its
// stream manager, with o's settings, on a NATS server of its own; all of
// it ends with the test.
func startSM(tb testing.TB, b *ardea.Builder, o bus.Options) (*bus.StreamManager, *plan.Plan) {
	tb.Helper()
	tp, err := b.BuildWith(ardea.ValidateOptions{SkipModuleCheck: true, Builtins: connectors.Outputs})
	if err != nil {
		tb.Fatal(err)
	}
	p, err := planner.BuildPlan(tp, 1, planner.RoundRobin)
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := bus.StartServer(tb.Context(), bus.ServerOptions{Port: -1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Shutdown)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	o.Plan, o.Container, o.Conn = p, 1, nc
	sm, err := bus.NewStreamManager(o)
	if err != nil {
		tb.Fatal(err)
	}
	if err := sm.Start(tb.Context()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sm.Close() })
	return sm, p
}
