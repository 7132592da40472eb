package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/ardea-dev/ardea/internal/metrics"
)

type compSnap struct{ emitted, executed, bp int64 }

// startProgress redraws a per-component table on w once a second until the
// returned stop function is called.
func startProgress(w io.Writer, reg *metrics.Registry) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		prev := map[string]compSnap{}
		last := time.Now()
		lines := 0
		for {
			select {
			case <-done:
				if lines > 0 {
					fmt.Fprintf(w, "\x1b[%dA\x1b[J", lines)
				}
				return
			case now := <-tick.C:
				dt := now.Sub(last).Seconds()
				last = now
				var b strings.Builder
				if lines > 0 {
					fmt.Fprintf(&b, "\x1b[%dA\x1b[J", lines)
				}
				fmt.Fprintf(&b, "%-16s %14s %14s %12s\n", "component", "emitted/s", "executed/s", "backpress")
				lines = 1
				for _, c := range reg.Components() {
					s := compSnap{c.Emitted.Load(), c.Executed.Load(), c.BackPressNs.Load()}
					p := prev[c.Name]
					prev[c.Name] = s
					fmt.Fprintf(&b, "%-16s %14.0f %14.0f %11.0f%%\n", c.Name,
						float64(s.emitted-p.emitted)/dt, float64(s.executed-p.executed)/dt,
						100*float64(s.bp-p.bp)/1e9/dt)
					lines++
				}
				io.WriteString(w, b.String())
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// printSummary prints totals per component.
func printSummary(w io.Writer, reg *metrics.Registry, elapsed time.Duration) {
	fmt.Fprintf(w, "%-16s %12s %12s %10s %14s %12s\n", "component", "emitted", "executed", "failed", "p99 delivery", "backpress")
	for _, c := range reg.Components() {
		p99 := "-"
		if c.Delivery.Count() > 0 {
			p99 = time.Duration(c.Delivery.Quantile(0.99)).Round(time.Microsecond).String()
		}
		fmt.Fprintf(w, "%-16s %12s %12s %10s %14s %12s\n", c.Name, itoa(c.Emitted.Load()), itoa(c.Executed.Load()),
			itoa(failedTuples(c)), p99, time.Duration(c.BackPressNs.Load()).Round(time.Millisecond))
	}
	_ = elapsed
}

// failedTuples is a component's "failed" column: for a bolt, the tuples
// it failed (a failing tuple, or a fail it called); for a spout (at least
// once), its trees that failed or timed out.
func failedTuples(c *metrics.Component) int64 { return c.Failed.Load() + c.TimedOut.Load() }
