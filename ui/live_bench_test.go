package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/sinks"
)

// benchSource is a Source over a real History: the word count's four
// components with parallelism p, collected every 10 s for an hour.
type benchSource struct {
	lp api.LogicalPlan
	h  *sinks.History
}

func (s *benchSource) Topologies(context.Context) ([]api.TopologyInfo, error) {
	return []api.TopologyInfo{{Name: "wc", State: "RUNNING"}}, nil
}
func (s *benchSource) Topology(context.Context, string) (api.TopologyInfo, error) {
	return api.TopologyInfo{Name: "wc", State: "RUNNING"}, nil
}
func (s *benchSource) LogicalPlan(context.Context, string) (api.LogicalPlan, error) { return s.lp, nil }
func (s *benchSource) PackingPlan(context.Context, string) (any, error)             { return nil, nil }
func (s *benchSource) PhysicalPlan(context.Context, string) (any, error) {
	return map[string]any{}, nil
}
func (s *benchSource) History(context.Context, string) (*sinks.History, error) {
	return s.h, nil
}
func (s *benchSource) ContainerLogs(context.Context, string, int, int) ([]string, error) {
	return nil, nil
}

func newBenchSource(p int, end time.Time) *benchSource {
	s := &benchSource{h: sinks.NewHistory(0), lp: api.LogicalPlan{Topology: "wc"}}
	prev := ""
	for _, name := range []string{"lines", "split", "count", "out"} {
		c := api.LogicalComponent{Name: name, Kind: "bolt", Parallelism: p}
		if prev != "" {
			c.Inputs = []api.LogicalInput{{From: prev, Stream: "default", Grouping: "fields"}}
		}
		s.lp.Components = append(s.lp.Components, c)
		prev = name
	}
	for t := end.Add(-time.Hour); !t.After(end); t = t.Add(10 * time.Second) {
		b := &sinks.Batch{Time: t, Topology: "wc", Container: 1}
		for ci, c := range s.lp.Components {
			for i := range p {
				task := ci*p + i
				for _, n := range []string{"__emit-count/default", "__execute-count", "__ack-count", "__fail-count", "__time-spent-back-pressure"} {
					b.Samples = append(b.Samples, sinks.Sample{Name: n, Kind: sinks.Counter, Component: c.Name, Task: task, Container: 1, Delta: 1000})
				}
				for _, n := range []string{"__execute-latency", "__process-latency", "__wasm-memory-pages"} {
					b.Samples = append(b.Samples, sinks.Sample{Name: n, Kind: sinks.Gauge, Component: c.Name, Task: task, Container: 1, Value: 5000})
				}
			}
		}
		_ = s.h.Write(context.Background(), b)
	}
	return s
}

// BenchmarkSnapshot is the cost of one event-stream snapshot (built once
// per half period and shared by every open page).
func BenchmarkSnapshot(b *testing.B) {
	for _, p := range []int{2, 16} {
		b.Run(fmt.Sprintf("4x%d-instances-1h", p), func(b *testing.B) {
			end := time.Now()
			tr := NewTracker(newBenchSource(p, end))
			tr.now = func() time.Time { return end }
			b.ReportAllocs()
			var size int
			for b.Loop() {
				data, err := json.Marshal(tr.Snapshot(context.Background(), "wc"))
				if err != nil {
					b.Fatal(err)
				}
				size = len(data)
			}
			b.ReportMetric(float64(size), "bytes/event")
		})
	}
}
