package ctl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/ardea-dev/ardea/sinks/metric"
)

// Local is the in-process gateway: a manager's Commands calls go straight
// to the containers attached to it, in container order, and their
// reports straight to the manager (Reporter). No encoding, no versions:
// both sides are this binary.
//
// Concurrency: safe for concurrent use. A call holds no lock while it
// calls a container, so a container may report from inside a call.
type Local struct {
	requests
	mu         sync.Mutex
	containers map[int]Commands
	manager    Manager
}

// NewLocal returns an in-process gateway reporting to m.
func NewLocal(m Manager) *Local {
	l := &Local{containers: map[int]Commands{}, manager: m}
	l.requests = requests{send: l.send}
	return l
}

// Attach makes container c's calls go to cmds (replacing a previous
// attachment: a restarted container); Detach ends them.
func (l *Local) Attach(container int, cmds Commands) {
	l.mu.Lock()
	l.containers[container] = cmds
	l.mu.Unlock()
}

func (l *Local) Detach(container int) {
	l.mu.Lock()
	delete(l.containers, container)
	l.mu.Unlock()
}

func (l *Local) send(ctx context.Context, r Request) error {
	l.mu.Lock()
	ids := make([]int, 0, len(l.containers))
	for id := range l.containers {
		ids = append(ids, id)
	}
	cs := make(map[int]Commands, len(l.containers))
	for id, c := range l.containers {
		cs[id] = c
	}
	l.mu.Unlock()
	slices.Sort(ids)
	var errs []error
	for _, id := range ids {
		if err := r.Call(ctx, cs[id]); err != nil {
			errs = append(errs, fmt.Errorf("container %d refused %s: %w", id, r.Op, err))
		}
	}
	return errors.Join(errs...)
}

// Reporter is container's reporter: its reports go to the manager.
func (l *Local) Reporter() Reporter { return localReporter{l.manager} }

// Exited reports that a container's runner ended.
func (l *Local) Exited(container int, err error) {
	l.Detach(container)
	l.manager.Exited(container, err)
}

type localReporter struct{ m Manager }

func (r localReporter) Heartbeat(_ context.Context, hb Heartbeat) error {
	hb.V = Version
	r.m.Heartbeat(hb)
	return nil
}

func (r localReporter) Alive(_ context.Context, a Alive) error {
	a.V = Version
	r.m.Alive(a)
	return nil
}

func (r localReporter) CheckpointSaved(_ context.Context, c CheckpointReport) error {
	c.V = Version
	r.m.CheckpointSaved(c)
	return nil
}

func (r localReporter) Metrics(_ context.Context, b *metric.Batch) error {
	r.m.Metrics(b)
	return nil
}
