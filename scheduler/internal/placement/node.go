package placement

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/logtail"
	"github.com/ardea-dev/ardea/scheduler/internal/runtime"
)

// Local is what a node runs its containers with: its launcher, each
// container an `ardea host` process made from a Spec and the node's own
// settings. Ids are runtime.ID's.
type Local interface {
	Start(ctx context.Context, s Spec) error
	Stop(ctx context.Context, id string) error
	Restart(ctx context.Context, id string) error
	Remove(ctx context.Context, id string) error
	Kill(id string, pid int) error
	Status(id string) (launcher.ProcessStatus, bool)
	List() []launcher.ProcessStatus
	LogPath(id string) string
}

// Node serves the requests of the cluster's TMs for the containers placed
// on this node, and publishes their changes. Its methods are safe for
// concurrent use; Close waits for every request in flight.
type Node struct {
	name  string
	nc    *nats.Conn
	local Local
	log   *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	subs   []*nats.Subscription

	mu sync.Mutex
	// epochs is the newest TM epoch heard of per topology (key tenant/topology).
	epochs map[string]uint64
	// started is the epoch each container here was started under.
	started map[string]uint64
	// gates orders a topology's requests against its epoch (gate).
	gates map[string]*sync.RWMutex
	// admitting, if set (tests), hears a newer epoch about to be admitted.
	admitting func(key string, epoch uint64)
}

// ServeNode serves node name's subject on nc (a connection in the "ardea"
// account) until Close. ctx bounds the subscriptions' setup only.
func ServeNode(ctx context.Context, nc *nats.Conn, name string, local Local, log *slog.Logger) (*Node, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := &Node{name: name, nc: nc, local: local, log: log.With("component", "placement"),
		epochs: map[string]uint64{}, started: map[string]uint64{}, gates: map[string]*sync.RWMutex{}}
	n.ctx, n.cancel = context.WithCancel(context.WithoutCancel(ctx))
	sub, err := nc.Subscribe(ctlSubject(name), func(m *nats.Msg) {
		n.wg.Add(1)
		go func() { // a stop waits for its process: requests run side by side
			defer n.wg.Done()
			n.serve(m)
		}()
	})
	if err != nil {
		return nil, fmt.Errorf("placement: node %s: %w", name, err)
	}
	fsub, err := nc.Subscribe(fenceSubject, func(m *nats.Msg) {
		var f fence
		if err := decode(m.Data, &f, "fence"); err != nil {
			n.log.Warn("a fence does not decode", "err", err)
			return
		}
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			_ = n.admit(f.Tenant, f.Topology, f.Epoch)
		}()
	})
	if err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("placement: node %s: %w", name, err)
	}
	n.subs = []*nats.Subscription{sub, fsub}
	if err := nc.FlushTimeout(flushTimeout); err != nil {
		n.Close()
		return nil, fmt.Errorf("placement: node %s: %w", name, err)
	}
	return n, nil
}

// Close stops serving and waits for the requests in flight. The
// containers keep running (the daemon's launcher owns them).
func (n *Node) Close() {
	for _, s := range n.subs {
		_ = s.Unsubscribe()
	}
	n.cancel()
	n.wg.Wait()
}

// Changed publishes a change of a container of this node (the launcher's
// OnChange). The TM of its topology hears it wherever it runs.
func (n *Node) Changed(ps launcher.ProcessStatus) {
	n.mu.Lock()
	epoch := n.started[ps.ID]
	n.mu.Unlock()
	b, err := json.Marshal(event{V: Version, Node: n.name, Epoch: epoch, Status: ps})
	if err == nil {
		err = n.nc.Publish(eventSubject(n.name), b)
	}
	if err != nil {
		n.log.Warn("publish a container's change", "container", ps.ID, "err", err)
	}
}

// gate is topology key's lock: a request runs holding it shared, from
// the check of its epoch to the end of its operation, and a newer epoch
// is admitted holding it exclusively. So no operation of an older TM is
// in flight while a newer one's admission removes what older ones
// started here, and none is admitted after (a start of an old TM racing
// the new one's fence would otherwise run a second copy).
func (n *Node) gate(key string) *sync.RWMutex {
	n.mu.Lock()
	defer n.mu.Unlock()
	g := n.gates[key]
	if g == nil {
		g = &sync.RWMutex{}
		n.gates[key] = g
	}
	return g
}

// enter admits a request of tenant's topology under epoch (see admit)
// and returns holding its gate shared: the caller calls the returned
// func when its operation has ended.
func (n *Node) enter(tenant, topology string, epoch uint64) (func(), error) {
	key := tenant + "/" + topology
	g := n.gate(key)
	for {
		g.RLock()
		n.mu.Lock()
		newest := n.epochs[key]
		n.mu.Unlock()
		if epoch < newest {
			g.RUnlock()
			return nil, fmt.Errorf("topology %s: epoch %d, and the newest is %d: %w", key, epoch, newest, ErrFenced)
		}
		if epoch == newest {
			return g.RUnlock, nil
		}
		g.RUnlock()
		if err := n.admit(tenant, topology, epoch); err != nil {
			return nil, err
		}
	}
}

// admit checks epoch against the newest heard of for the topology: an
// older one is refused (ErrFenced); a newer one becomes the newest, and the
// containers older TMs started here are removed first. It holds the
// topology's gate exclusively: the requests of older epochs in flight
// end first.
func (n *Node) admit(tenant, topology string, epoch uint64) error {
	key := tenant + "/" + topology
	prefix := runtime.Prefix(tenant, topology)
	g := n.gate(key)
	if n.admitting != nil {
		n.admitting(key, epoch)
	}
	g.Lock()
	defer g.Unlock()
	n.mu.Lock()
	newest := n.epochs[key]
	if epoch < newest {
		n.mu.Unlock()
		return fmt.Errorf("topology %s: epoch %d, and the newest is %d: %w", key, epoch, newest, ErrFenced)
	}
	var stale []string
	if epoch > newest {
		n.epochs[key] = epoch
		for id, e := range n.started {
			if _, ok := runtime.Number(prefix, id); ok && e < epoch {
				stale = append(stale, id)
			}
		}
	}
	n.mu.Unlock()
	for _, id := range stale {
		n.log.Info("container of an earlier topology manager removed", "container", id, "epoch", epoch)
		ctx, cancel := context.WithTimeout(n.ctx, opTimeout)
		err := n.local.Remove(ctx, id)
		cancel()
		if err != nil {
			n.log.Warn("remove a container of an earlier topology manager", "container", id, "err", err)
		}
		n.mu.Lock()
		if n.started[id] < epoch {
			delete(n.started, id)
		}
		n.mu.Unlock()
	}
	return nil
}

// opTimeout bounds one operation a node makes for a request (a stop waits
// for the host to end).
const opTimeout = 30 * time.Second

// logs answers an OpLogs request from the container's log file here: a
// page of at most MaxLogBytes, less if the connection's payload limit
// needs it.
func (n *Node) logs(req request) reply {
	if req.Logs == nil || req.Logs.Lines < 1 {
		return replyOf(fmt.Errorf("placement: logs without a number of lines"))
	}
	if _, ok := runtime.Number(runtime.Prefix(req.Tenant, req.Topology), req.ID); !ok {
		return replyOf(fmt.Errorf("placement: container %q is not one of %s/%s", req.ID, req.Tenant, req.Topology))
	}
	path := n.local.LogPath(req.ID)
	if path == "" {
		return replyOf(fmt.Errorf("placement: node %s keeps no log files", n.name))
	}
	limit := MaxLogBytes
	for {
		page, err := logtail.Tail(path, req.Logs.End, req.Logs.Lines, limit, req.Logs.Filter)
		if errors.Is(err, fs.ErrNotExist) {
			return replyOf(fmt.Errorf("container %s has no log on node %s: %w", req.ID, n.name, launcher.ErrUnknown))
		}
		if err != nil {
			return replyOf(fmt.Errorf("placement: container %s: log: %w", req.ID, err))
		}
		r := reply{V: Version, Logs: &page}
		if b, err := json.Marshal(r); err == nil && int64(len(b)) > n.nc.MaxPayload()-replyRoom && limit > 1<<10 {
			limit /= 2
			continue
		}
		return r
	}
}

// replyRoom is what a reply's headers may take of a message's payload.
const replyRoom = 4 << 10

func (n *Node) serve(m *nats.Msg) {
	var req request
	var r reply
	if err := decode(m.Data, &req, "request"); err != nil {
		r = replyOf(err)
	} else {
		r = n.do(req)
	}
	b, _ := json.Marshal(r)
	if err := m.Respond(b); err != nil {
		n.log.Warn("answer a placement request", "op", req.Op, "container", req.ID, "err", err)
	}
}

func (n *Node) do(req request) reply {
	if req.Op == OpList {
		return reply{V: Version, List: n.local.List()}
	}
	if req.Op == OpLogs {
		return n.logs(req)
	}
	if req.Op == OpStart {
		if req.Spec == nil {
			return replyOf(fmt.Errorf("placement: start without a spec"))
		}
		req.Tenant, req.Topology = req.Spec.Tenant, req.Spec.Topology
		req.ID = runtime.ID(req.Tenant, req.Topology, req.Spec.Container)
	}
	leave, err := n.enter(req.Tenant, req.Topology, req.Epoch)
	if err != nil {
		return replyOf(err)
	}
	defer leave()
	ctx, cancel := context.WithTimeout(n.ctx, opTimeout)
	defer cancel()
	switch req.Op {
	case OpStart:
		n.mu.Lock()
		n.started[req.ID] = req.Epoch
		n.mu.Unlock()
		err = n.local.Start(ctx, *req.Spec)
	case OpStop:
		err = n.local.Stop(ctx, req.ID)
	case OpRestart:
		err = n.local.Restart(ctx, req.ID)
	case OpRemove:
		err = n.local.Remove(ctx, req.ID)
		if err == nil {
			n.mu.Lock()
			delete(n.started, req.ID)
			n.mu.Unlock()
		}
	case OpKill:
		err = n.local.Kill(req.ID, req.PID)
	case OpFence:
		// admit has removed what older TMs started here.
	default:
		err = fmt.Errorf("placement: unknown operation %q", req.Op)
	}
	r := replyOf(err)
	if ps, ok := n.local.Status(req.ID); ok && req.ID != "" {
		r.Status = &ps
	}
	return r
}
