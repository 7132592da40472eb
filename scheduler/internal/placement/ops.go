package placement

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/logtail"
	"github.com/ardea-dev/ardea/scheduler/internal/runtime"
)

// lookup is container id's placement (nil: not placed by this Placer).
func (p *Placer[T]) lookup(id string) *placement[T] {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.placed[id]
}

// op runs a stop, restart or remove of container id where it runs.
func (p *Placer[T]) op(ctx context.Context, op Op, id string) error {
	pl := p.lookup(id)
	if pl == nil {
		return fmt.Errorf("placement: container %s: %w", id, launcher.ErrUnknown)
	}
	r, err := p.request(ctx, pl.node, request{Op: op, ID: id, Tenant: pl.t.Tenant(), Topology: pl.t.Name(), Epoch: pl.epoch}, stopTimeout)
	if err == nil {
		err = r.err(pl.node)
		if r.Status != nil {
			p.setStatus(id, pl, *r.Status)
		}
	}
	if err != nil && (unreachable(err) || errors.Is(err, ErrFenced)) {
		// The node is lost or cut off, or a newer TM has it: what runs
		// there cannot write once its credential is revoked.
		if errors.Is(err, ErrFenced) {
			p.o.Log.Warn("a newer topology manager runs this container's topology; this one's credential is revoked", "container", id, "node", pl.node, "op", op)
		} else {
			p.o.Log.Warn("a container's node does not answer; its credential is revoked", "container", id, "node", pl.node, "op", op, "err", err)
		}
		p.o.Revoke(pl.t.Tenant(), pl.t.Name(), pl.user)
		if op == OpRestart {
			return p.move(pl, fmt.Sprintf("node %s does not answer", pl.node))
		}
		err = nil
		if op == OpStop {
			p.setStatus(id, pl, launcher.ProcessStatus{ID: id, State: launcher.StateStopped, Restarts: pl.status.Restarts})
		}
	}
	if err == nil && op == OpRemove {
		p.mu.Lock()
		if p.placed[id] == pl {
			delete(p.placed, id)
		}
		p.mu.Unlock()
	}
	return err
}

func (p *Placer[T]) Stop(ctx context.Context, id string) error    { return p.op(ctx, OpStop, id) }
func (p *Placer[T]) Restart(ctx context.Context, id string) error { return p.op(ctx, OpRestart, id) }
func (p *Placer[T]) Remove(ctx context.Context, id string) error  { return p.op(ctx, OpRemove, id) }

// Kill ends a container declared lost. One whose node does not answer is
// left to the nodes' watch: it is moved once its node has been silent for
// MoveSilent, when the node has stopped it itself if it is cut off.
func (p *Placer[T]) Kill(id string, pid int) error {
	pl := p.lookup(id)
	if pl == nil {
		return fmt.Errorf("placement: container %s: %w", id, launcher.ErrUnknown)
	}
	if pl.node == p.o.Self {
		return p.o.Local.Kill(id, pid)
	}
	r, err := p.request(p.ctx, pl.node, request{Op: OpKill, ID: id, Tenant: pl.t.Tenant(), Topology: pl.t.Name(), Epoch: pl.epoch, PID: pid}, quickTimeout)
	if err == nil {
		return r.err(pl.node)
	}
	if unreachable(err) {
		p.o.Log.Warn("a container's node does not answer its kill; it moves if the node stays silent", "container", id, "node", pl.node, "err", err)
		return nil
	}
	return err
}

// Status is container id's last known state.
func (p *Placer[T]) Status(id string) (launcher.ProcessStatus, bool) {
	pl := p.lookup(id)
	if pl == nil {
		return launcher.ProcessStatus{}, false
	}
	if pl.node == p.o.Self {
		ps, ok := p.o.Local.Status(id)
		return pl.restarted(ps), ok
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return pl.restarted(pl.status), true
}

// restarted counts in ps the restarts before the container's last move
// (a node's launcher counts from its start there).
func (pl *placement[T]) restarted(ps launcher.ProcessStatus) launcher.ProcessStatus {
	ps.Restarts += pl.moves
	return ps
}

// List is every container this Placer placed, sorted by id.
func (p *Placer[T]) List() []launcher.ProcessStatus {
	p.mu.Lock()
	ids := make([]string, 0, len(p.placed))
	for id := range p.placed {
		ids = append(ids, id)
	}
	p.mu.Unlock()
	slices.Sort(ids)
	var out []launcher.ProcessStatus
	for _, id := range ids {
		if ps, ok := p.Status(id); ok {
			out = append(out, ps)
		}
	}
	return out
}

// LogPath is a local container's log file ("" for one on another node:
// Logs reads that one's).
func (p *Placer[T]) LogPath(id string) string {
	if pl := p.lookup(id); pl != nil && pl.node != p.o.Self {
		return ""
	}
	return p.o.Local.LogPath(id)
}

// Logs returns the last n lines f selects of container id's log, oldest
// first, wherever the container runs: this node's log file, or its
// node's, read with OpLogs page by page (each at most MaxLogBytes) until
// n lines or the file's beginning. A container this Placer did not
// place (one that ended and was removed) is read here. An error wrapping
// launcher.ErrUnknown: the container has no log there.
func (p *Placer[T]) Logs(ctx context.Context, id string, n int, f logtail.Filter) ([]string, error) {
	if n < 1 {
		return nil, nil
	}
	pl := p.lookup(id)
	if pl == nil || pl.node == p.o.Self {
		page, err := logtail.Tail(p.o.Local.LogPath(id), -1, n, 0, f)
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("container %s has no log on node %s: %w", id, p.o.Self, launcher.ErrUnknown)
		}
		return page.Lines, err
	}
	var out []string
	end := int64(-1)
	for len(out) < n {
		r, err := p.request(ctx, pl.node, request{Op: OpLogs, ID: id, Tenant: pl.t.Tenant(), Topology: pl.t.Name(),
			Epoch: pl.epoch, Logs: &LogsRequest{Lines: n - len(out), End: end, Filter: f}}, logsTimeout)
		if err == nil {
			err = r.err(pl.node)
		}
		if err == nil && r.Logs == nil {
			err = fmt.Errorf("placement: node %s answered a logs request without logs", pl.node)
		}
		if err != nil {
			return nil, err
		}
		out = append(r.Logs.Lines, out...)
		if r.Logs.Start <= 0 || (end >= 0 && r.Logs.Start >= end) {
			break
		}
		end = r.Logs.Start
	}
	return out, nil
}

// logsTimeout bounds one OpLogs request (a page of a log file).
const logsTimeout = 10 * time.Second

func (p *Placer[T]) setStatus(id string, pl *placement[T], ps launcher.ProcessStatus) {
	p.mu.Lock()
	if p.placed[id] == pl {
		pl.status = ps
	}
	p.mu.Unlock()
}

// onEvent follows a change on another node: a container of this Placer's
// gets its state (and the TM hears it); one that should not run there (an
// older epoch's, or one placed elsewhere since) is removed.
func (p *Placer[T]) onEvent(m *nats.Msg) {
	var ev event
	if err := decode(m.Data, &ev, "event"); err != nil {
		p.o.Log.Warn("a node's event does not decode", "err", err)
		return
	}
	if ev.Node == p.o.Self {
		return // the launcher tells this node's own changes
	}
	id := ev.Status.ID
	p.mu.Lock()
	pl := p.placed[id]
	if p.starting[id] > 0 {
		pl = nil // its start's answer tells
	}
	var stale, moving bool
	var epoch uint64
	var t T
	if pl != nil && ev.Epoch > pl.epoch {
		// A newer TM runs the topology: this one's placement is over.
		delete(p.placed, id)
		p.mu.Unlock()
		return
	}
	if pl != nil {
		t, epoch, moving = pl.t, pl.epoch, pl.moving
		stale = ev.Node != pl.node || ev.Epoch < pl.epoch
		if !stale && !moving {
			pl.status = ev.Status
		}
	}
	p.mu.Unlock()
	switch {
	case pl == nil:
		return // another TM's
	case stale:
		if ev.Status.State == launcher.StateStopped || ev.Status.State == launcher.StateFailed {
			return
		}
		p.o.Log.Warn("a container runs where it was not placed; removing it", "container", id, "node", ev.Node, "epoch", ev.Epoch)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			_, _ = p.request(p.ctx, ev.Node, request{Op: OpRemove, ID: id, Tenant: t.Tenant(), Topology: t.Name(), Epoch: epoch}, stopTimeout)
		}()
	case !moving && p.o.OnChange != nil:
		p.o.OnChange(pl.restarted(ev.Status))
	}
}

// watchNodes re-places the containers of the nodes that are no longer
// live.
func (p *Placer[T]) watchNodes() {
	tick := time.NewTicker(p.o.CheckEvery)
	defer tick.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-tick.C:
		}
		p.mu.Lock()
		var remote []*placement[T]
		for _, pl := range p.placed {
			if pl.node != p.o.Self && !pl.moving {
				remote = append(remote, pl)
			}
		}
		p.mu.Unlock()
		if len(remote) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(p.ctx, quickTimeout)
		cands, err := p.o.Nodes(ctx)
		cancel()
		if err != nil {
			p.o.Log.Warn("list the live nodes", "err", err)
			continue
		}
		for _, pl := range remote {
			i := slices.IndexFunc(cands, func(c Candidate) bool { return c.Name == pl.node })
			var why string
			switch {
			case i < 0:
				why = fmt.Sprintf("node %s lost", pl.node)
			case cands[i].Silent > p.o.MoveSilent:
				why = fmt.Sprintf("node %s silent for %v", pl.node, cands[i].Silent.Round(time.Second))
			default:
				continue
			}
			if p.o.Reachable != nil && p.o.Reachable(pl.node) {
				continue // its record is stale, but it runs (Options.Reachable)
			}
			_ = p.move(pl, why)
		}
	}
}

// move re-places pl off its node (lost or not answering), as a launcher
// restarts a process that exited: the TM hears the container exit, its
// credential is revoked, and it starts on another live node.
func (p *Placer[T]) move(pl *placement[T], why string) error {
	id := runtime.ID(pl.t.Tenant(), pl.t.Name(), pl.c)
	p.mu.Lock()
	if pl.moving || p.placed[id] != pl {
		p.mu.Unlock()
		return nil
	}
	pl.moving = true
	restarts := pl.moves + pl.status.Restarts + 1
	pl.status = launcher.ProcessStatus{ID: id, State: launcher.StateBackoff, Restarts: restarts - pl.moves, LastExit: why}
	ps := pl.restarted(pl.status)
	p.mu.Unlock()
	p.o.Log.Warn("container moved off its node", "container", id, "node", pl.node, "why", why)
	if pl.user != "" {
		p.o.Revoke(pl.t.Tenant(), pl.t.Name(), pl.user)
	}
	if p.o.OnChange != nil {
		p.o.OnChange(ps)
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		exclude := []string{pl.node}
		p.waitFenced(p.ctx, pl.t.Tenant()+"/"+pl.t.Name(), exclude)
		for p.ctx.Err() == nil {
			ctx, cancel := context.WithTimeout(p.ctx, startTimeout)
			spec, err := p.o.Spec(ctx, pl.t, pl.c)
			if err == nil {
				err = p.place(ctx, pl.t, pl.c, spec, pl.epoch, "", exclude, restarts)
			}
			cancel()
			if err == nil || errors.Is(err, launcher.ErrDuplicate) {
				return
			}
			if errors.Is(err, ErrFenced) {
				return // a newer TM runs the topology
			}
			p.o.Log.Warn("re-place a container", "container", id, "err", err)
			t := time.NewTimer(p.o.CheckEvery)
			select {
			case <-p.ctx.Done():
				t.Stop()
			case <-t.C:
			}
		}
	}()
	return nil
}
