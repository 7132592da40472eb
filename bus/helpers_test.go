package bus

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// testServer is one embedded NATS server shared by the package's tests;
// every test uses its own topology name, hence its own subjects.
var testServer *Server

func TestMain(m *testing.M) {
	s, err := StartServer(context.Background(), ServerOptions{Port: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testServer = s
	code := m.Run()
	s.Shutdown()
	os.Exit(code)
}

var topoSeq atomic.Int64

// compSpec describes a component: one entry in containers per task.
type compSpec struct {
	name       string
	kind       string // "spout" or "bolt"
	containers []int
	maxKG      int
}

// edgeSpec subscribes to with a grouping to from's stream (created on first
// use with fields key, val).
type edgeSpec struct {
	from, stream, to string
	grouping         plan.Grouping
	fieldIdx         []int
}

// buildPlan builds a physical plan by hand. Task ids are assigned in
// component order, 1..n.
func buildPlan(t testing.TB, containers int, comps []compSpec, edges []edgeSpec) *plan.Plan {
	t.Helper()
	p := &plan.Plan{
		Topology:   fmt.Sprintf("%s-%d", sanitize(t.Name()), topoSeq.Add(1)),
		Containers: containers,
		Tasks:      []plan.Task{{}},
	}
	byName := map[string]int{}
	for i, c := range comps {
		pc := plan.Component{ID: i, Name: c.name, Kind: c.kind, Parallelism: len(c.containers), MaxKeyGroups: c.maxKG}
		if pc.MaxKeyGroups == 0 {
			pc.MaxKeyGroups = tuple.DefaultMaxKeyGroups
		}
		for idx, ct := range c.containers {
			id := uint32(len(p.Tasks))
			p.Tasks = append(p.Tasks, plan.Task{ID: id, Component: i, Index: idx, Container: ct})
			pc.Tasks = append(pc.Tasks, id)
		}
		byName[c.name] = i
		p.Components = append(p.Components, pc)
	}
	for _, e := range edges {
		from, ok1 := byName[e.from]
		to, ok2 := byName[e.to]
		if !ok1 || !ok2 {
			t.Fatalf("edge %v: unknown component", e)
		}
		stream := e.stream
		if stream == "" {
			stream = "default"
		}
		src := &p.Components[from]
		si := -1
		for i, s := range src.Outputs {
			if s.Name == stream {
				si = i
			}
		}
		if si < 0 {
			src.Outputs = append(src.Outputs, plan.Stream{Name: stream, Fields: []string{"key", "val"}})
			si = len(src.Outputs) - 1
		}
		dst := &p.Components[to]
		var names []string
		for _, f := range e.fieldIdx {
			names = append(names, src.Outputs[si].Fields[f])
		}
		dst.Inputs = append(dst.Inputs, plan.Input{Component: from, Stream: si, Grouping: e.grouping, Fields: names})
		src.Outputs[si].Subscribers = append(src.Outputs[si].Subscribers, plan.Subscription{
			Component: to, InputIndex: uint16(len(dst.Inputs) - 1), Grouping: e.grouping, FieldIdx: e.fieldIdx,
		})
	}
	return p
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// cluster runs one stream manager per container of a plan, all on the test
// server, each with its own connection.
type cluster struct {
	t   testing.TB
	p   *plan.Plan
	sms []*StreamManager // by container
}

func newCluster(t testing.TB, p *plan.Plan, tune func(*Options)) *cluster {
	t.Helper()
	c := &cluster{t: t, p: p, sms: make([]*StreamManager, p.Containers+1)}
	for ct := 1; ct <= p.Containers; ct++ {
		c.sms[ct] = c.newSM(ct, tune)
	}
	for ct := 1; ct <= p.Containers; ct++ {
		if err := c.sms[ct].Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func (c *cluster) newSM(ct int, tune func(*Options)) *StreamManager {
	o := Options{Plan: c.p, Container: ct, URL: testServer.ClientURL()}
	if tune != nil {
		tune(&o)
	}
	sm, err := NewStreamManager(o)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { sm.Close() })
	return sm
}

func (c *cluster) outbox(task uint32) *Outbox {
	return c.sms[c.p.Tasks[task].Container].Outbox(task)
}

func (c *cluster) inbox(task uint32) *Inbox {
	return c.sms[c.p.Tasks[task].Container].Inbox(task)
}

func (c *cluster) tasks(comp string) []uint32 {
	for _, pc := range c.p.Components {
		if pc.Name == comp {
			return pc.Tasks
		}
	}
	c.t.Fatalf("no component %s", comp)
	return nil
}

// rec is one received tuple.
type rec struct {
	dst    uint32
	input  uint16
	src    uint32
	id     uint64
	key    string
	seq    int64
	sentAt int64
}

// decode reads a delivery's batch into recs.
func decode(dst uint32, d Delivery, out []rec) ([]rec, error) {
	r, err := tuple.NewBatchReader(d.Batch)
	if err != nil {
		return out, err
	}
	if r.Count() != d.Tuples {
		return out, fmt.Errorf("task %d: batch count %d, delivery says %d", dst, r.Count(), d.Tuples)
	}
	var vals []tuple.Value
	for {
		rc, ok, err := r.Next()
		if err != nil {
			return out, err
		}
		if !ok {
			return out, nil
		}
		if rc.SourceTask != d.SourceTask {
			return out, fmt.Errorf("record source %d in a batch from %d", rc.SourceTask, d.SourceTask)
		}
		vals, _, err = tuple.DecodeValues(vals[:0], rc.Values)
		if err != nil {
			return out, err
		}
		out = append(out, rec{dst: dst, input: rc.Input, src: rc.SourceTask, id: rc.TupleID,
			key: vals[0].AsString(), seq: vals[1].I, sentAt: d.SentAt})
	}
}

// drainErr consumes an inbox until its input ends (DeliveryEnd), releasing
// every delivery; any other kind but data is an error.
func drainErr(in *Inbox) ([]rec, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []rec
	for {
		d, err := in.Next(ctx)
		if err != nil {
			return out, fmt.Errorf("inbox %d: %w", in.Task(), err)
		}
		switch d.Kind {
		case DeliveryEnd:
			return out, nil
		case DeliveryData:
		default:
			return out, fmt.Errorf("inbox %d: a %v delivery, want data or the end", in.Task(), d.Kind)
		}
		out, err = decode(in.Task(), d, out)
		in.Release(d)
		if err != nil {
			return out, err
		}
	}
}

func drain(t testing.TB, in *Inbox) []rec {
	t.Helper()
	out, err := drainErr(in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// drainAll drains the inboxes of tasks concurrently.
func drainAll(t testing.TB, c *cluster, tasks []uint32) map[uint32][]rec {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	out := map[uint32][]rec{}
	for _, task := range tasks {
		wg.Go(func() {
			r, err := drainErr(c.inbox(task))
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			out[task] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return out
}

func values(key string, seq int64) []byte {
	return tuple.AppendValues(nil, tuple.Str(key), tuple.Int(seq))
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
