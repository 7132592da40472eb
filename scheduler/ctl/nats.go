package ctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/sinks/metric"
)

// defaultReplyWait bounds how long a NATS request waits for the replies
// of the containers that are up.
const defaultReplyWait = time.Second

// NATSClient is the manager's side of the NATS gateway: each Commands call
// is one request on the topology's command subject, answered by every
// container that runs.
//
// Concurrency: safe for concurrent use; a call waits on its own inbox.
type NATSClient struct {
	requests
	nc       *nats.Conn
	subject  string
	expected func() []int
	wait     time.Duration
	log      *slog.Logger
}

// NATSClientOptions configure a NATSClient.
type NATSClientOptions struct {
	Tenant, Topology string
	// Expected lists the containers that are up (sending liveness
	// beats): a call waits for their replies, not for a container that
	// is starting, stopped or dead (it learns the state from the plan and
	// its manager's next requests). nil: wait for none.
	Expected func() []int
	// ReplyWait bounds the wait for replies (defaultReplyWait if 0).
	ReplyWait time.Duration
	Logger    *slog.Logger
}

// NewNATSClient returns the NATS gateway to a topology's containers.
func NewNATSClient(nc *nats.Conn, o NATSClientOptions) *NATSClient {
	c := &NATSClient{nc: nc, subject: CommandSubject(o.Tenant, o.Topology), expected: o.Expected, wait: o.ReplyWait, log: o.Logger}
	if c.wait <= 0 {
		c.wait = defaultReplyWait
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.requests = requests{send: c.send}
	return c
}

// send publishes r with an inbox for the replies and collects them: the
// error joins each refusal. Containers that are up and did not reply
// within the wait are logged, not an error: silence is the fencing's to
// judge (a stopped process is declared lost from its missing beats).
func (c *NATSClient) send(ctx context.Context, r Request) error {
	r.V = Version
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("ctl: encode %s: %w", r.Op, err)
	}
	var want []int
	if c.expected != nil {
		want = c.expected()
	}
	inbox := c.nc.NewRespInbox()
	replies := make(chan *nats.Msg, 64)
	sub, err := c.nc.ChanSubscribe(inbox, replies)
	if err != nil {
		return fmt.Errorf("ctl: %s: subscribe to replies: %w", r.Op, err)
	}
	defer sub.Unsubscribe()
	if err := c.nc.PublishMsg(&nats.Msg{Subject: c.subject, Reply: inbox, Data: b}); err != nil {
		return fmt.Errorf("ctl: send %s: %w", r.Op, err)
	}
	if err := c.flush(ctx); err != nil && ctx.Err() == nil {
		return fmt.Errorf("ctl: send %s: %w", r.Op, err)
	}
	if len(want) == 0 {
		return nil
	}
	waiting := map[int]bool{}
	for _, w := range want {
		waiting[w] = true
	}
	timer := time.NewTimer(c.wait)
	defer timer.Stop()
	var errs []error
	for len(waiting) > 0 {
		select {
		case <-ctx.Done():
			return errors.Join(append(errs, context.Cause(ctx))...)
		case <-timer.C:
			c.log.Warn("containers did not answer a control request", "op", r.Op, "containers", sortedKeys(waiting), "waited", c.wait)
			return errors.Join(errs...)
		case m := <-replies:
			rep, err := DecodeReply(m.Data)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			delete(waiting, rep.Container)
			if rep.Error != "" {
				errs = append(errs, fmt.Errorf("container %d refused %s: %s", rep.Container, r.Op, rep.Error))
			}
		}
	}
	return errors.Join(errs...)
}

// flush waits until the server has the request (bounded by the wait when
// ctx has no deadline).
func (c *NATSClient) flush(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.wait)
		defer cancel()
	}
	return c.nc.FlushWithContext(ctx)
}

func sortedKeys(m map[int]bool) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// ServeCommands answers the requests on a topology's command subject
// with container's calls: each request is decoded (another version is
// refused in the reply, naming both), made on c, and its error replied.
// c's methods run on the subscription's goroutine, one at a time, so they
// must only queue the work. The subscription ends with ctx or when the
// returned function is called.
func ServeCommands(ctx context.Context, nc *nats.Conn, tenant, topology string, container int, c Commands, log *slog.Logger) (func(), error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sub, err := nc.Subscribe(CommandSubject(tenant, topology), func(m *nats.Msg) {
		req, err := decodeRequest(m.Data)
		if err == nil {
			err = req.Call(ctx, c)
		} else {
			log.Error("control request refused", "err", err)
		}
		if m.Reply == "" {
			return
		}
		rep := Reply{V: Version, Container: container, Op: req.Op}
		if err != nil {
			rep.Error = err.Error()
		}
		b, _ := json.Marshal(rep)
		if perr := nc.Publish(m.Reply, b); perr != nil {
			log.Warn("control reply not sent", "op", req.Op, "err", perr)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("ctl: subscribe to the requests of topology %s: %w", topology, err)
	}
	if err := nc.Flush(); err != nil {
		sub.Unsubscribe()
		return nil, fmt.Errorf("ctl: subscribe to the requests of topology %s: %w", topology, err)
	}
	stop := sync.OnceFunc(func() { _ = sub.Unsubscribe() })
	context.AfterFunc(ctx, stop)
	return stop, nil
}

// ServeManager delivers a topology's reports (heartbeats, liveness beats,
// checkpoint saves, metrics batches) to m until the returned function is
// called. A report of another protocol version is refused: logged once
// per kind and sender subject, never handed to m.
func ServeManager(nc *nats.Conn, tenant, topology string, m Manager, log *slog.Logger) (func(), error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var mu sync.Mutex
	warned := map[string]bool{}
	refuse := func(kind string, err error) {
		mu.Lock()
		first := !warned[kind+err.Error()]
		warned[kind+err.Error()] = true
		mu.Unlock()
		if first || !errors.Is(err, errVersion) {
			log.Error("control report refused", "kind", kind, "err", err)
		}
	}
	handlers := map[string]nats.MsgHandler{
		HeartbeatSubject(tenant, topology): func(msg *nats.Msg) {
			if hb, err := DecodeHeartbeat(msg.Data); err != nil {
				refuse("heartbeat", err)
			} else {
				m.Heartbeat(hb)
			}
		},
		AliveSubject(tenant, topology): func(msg *nats.Msg) {
			if a, err := decodeAlive(msg.Data); err != nil {
				refuse("alive", err)
			} else if a.Container >= 1 {
				m.Alive(a)
			}
		},
		CheckpointSubject(tenant, topology): func(msg *nats.Msg) {
			if r, err := decodeCheckpointReport(msg.Data); err != nil {
				refuse("checkpoint", err)
			} else {
				m.CheckpointSaved(r)
			}
		},
		metricsSubject(tenant, topology): func(msg *nats.Msg) {
			if b, err := decodeMetrics(msg.Data); err != nil {
				refuse("metrics", err)
			} else {
				m.Metrics(b)
			}
		},
	}
	var subs []*nats.Subscription
	stop := sync.OnceFunc(func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	})
	for subj, h := range handlers {
		s, err := nc.Subscribe(subj, h)
		if err != nil {
			stop()
			return nil, fmt.Errorf("ctl: subscribe to %s: %w", subj, err)
		}
		subs = append(subs, s)
	}
	if err := nc.Flush(); err != nil {
		stop()
		return nil, fmt.Errorf("ctl: subscribe to the reports of topology %s: %w", topology, err)
	}
	return stop, nil
}

// NATSReporter is a container's Reporter over NATS.
type NATSReporter struct {
	nc                          *nats.Conn
	hb, alive, ckpt, metricsSub string
}

// NewNATSReporter returns the reporter of a container of topology.
func NewNATSReporter(nc *nats.Conn, tenant, topology string) *NATSReporter {
	return &NATSReporter{nc: nc, hb: HeartbeatSubject(tenant, topology), alive: AliveSubject(tenant, topology),
		ckpt: CheckpointSubject(tenant, topology), metricsSub: metricsSubject(tenant, topology)}
}

func (r *NATSReporter) publish(subj, what string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("ctl: encode %s: %w", what, err)
	}
	if err := r.nc.Publish(subj, b); err != nil {
		return fmt.Errorf("ctl: send %s: %w", what, err)
	}
	return nil
}

func (r *NATSReporter) Heartbeat(_ context.Context, hb Heartbeat) error {
	hb.V = Version
	return r.publish(r.hb, "heartbeat", hb)
}

func (r *NATSReporter) Alive(_ context.Context, a Alive) error {
	a.V = Version
	return r.publish(r.alive, "liveness beat", a)
}

func (r *NATSReporter) CheckpointSaved(_ context.Context, c CheckpointReport) error {
	c.V = Version
	return r.publish(r.ckpt, "checkpoint report", c)
}

func (r *NATSReporter) Metrics(_ context.Context, b *metric.Batch) error {
	return r.publish(r.metricsSub, "metrics batch", metricsReport{V: Version, Batch: b})
}
