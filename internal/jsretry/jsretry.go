// Package jsretry creates JetStream buckets and streams on a cluster that
// may not serve yet: a clustered JetStream answers "unavailable" while its
// meta group elects a leader or learns its peers, and a node that has
// just started asks again until it serves (or its context ends). Ardea's
// own; it links nats.go only.
package jsretry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Unavailable reports an error that a clustered JetStream answers while
// it cannot serve yet or for a while: its meta group has no leader (the
// nodes have just started, or a node was lost and they elect again), it
// knows too few peers to place the replicas, or nobody answered.
// Another try later may succeed; any other error will not.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, errNotApplied) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		// An account's JetStream is off for a moment on a node that
		// applies a change of the account (a revocation, new limits).
		errors.Is(err, nats.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
		return true
	}
	if NoStorage(err) {
		return false
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case 10004, // the cluster is incomplete
			10005, // no suitable peers for placement
			10006, // JetStream not in clustered mode yet
			10008, // JetStream system temporarily unavailable
			10009: // not the leader (an election)
			return true
		}
		return apiErr.Code == 503
	}
	return false
}

// NoStorage reports a clustered stream that no peer can take for want of
// storage: every peer online, but none with the stream's MaxBytes free
// to reserve (nats-server's "no suitable peers for placement, insufficient
// storage"). Asking again does not help while the stream asks as much;
// a smaller MaxBytes may fit. With a peer offline, it is Unavailable: the
// peer may come back with room.
func NoStorage(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == 10005 &&
		strings.Contains(apiErr.Description, "insufficient storage") && !strings.Contains(apiErr.Description, "peer offline")
}

// AccountChanging reports an error that a JetStream alone answers for a
// moment while the server applies a change of the calling account (a
// revocation of a host's credential when a topology ends, new limits):
// the account's JetStream API is not subscribed during the update, so a
// request finds no responder. Unlike Unavailable it leaves out what on
// one server means a real fault (a timeout, a missing stream).
func AccountChanging(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.Is(err, nats.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount)
}

// RetryAccountChanging calls f until it returns nil or an error that is
// not AccountChanging, or patience has passed (then f's last error is
// returned): what a call on a JetStream alone does while its account
// changes. Asking again is safe for a write too: an error it retries
// says the request reached no JetStream API (no responder, JetStream off
// for the account), so the first try changed nothing.
func RetryAccountChanging[T any](ctx context.Context, patience time.Duration, f func(ctx context.Context) (T, error)) (T, error) {
	deadline := time.Now().Add(patience)
	wait := 20 * time.Millisecond
	for {
		v, err := f(ctx)
		if err == nil || !AccountChanging(err) || ctx.Err() != nil || time.Now().Add(wait).After(deadline) {
			return v, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, err
		case <-t.C:
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// errNotApplied: a stream just created (by this node or another) is not
// found yet by the node answering (it has not applied the creation).
var errNotApplied = errors.New("the cluster has not applied the stream's creation yet")

// RetryUnavailable calls f until it returns nil or an error that is not
// Unavailable, or ctx ends; each call gets at most try. It is what a
// node that has just started does until its cluster's JetStream can
// serve: waiting on an answer, not on a clock.
func RetryUnavailable[T any](ctx context.Context, try time.Duration, f func(ctx context.Context) (T, error)) (T, error) {
	wait := 50 * time.Millisecond
	for {
		tctx, cancel := context.WithTimeout(ctx, try)
		v, err := f(tctx)
		cancel()
		if err == nil || !Unavailable(err) {
			return v, err
		}
		if ctx.Err() != nil {
			return v, fmt.Errorf("%w (JetStream unavailable: %w)", ctx.Err(), err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, fmt.Errorf("%w (JetStream unavailable: %w)", ctx.Err(), err)
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// EnsureKeyValue creates or updates the bucket cfg describes, retrying
// while JetStream is Unavailable, until ctx ends.
func EnsureKeyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	return RetryUnavailable(ctx, createTry, func(ctx context.Context) (jetstream.KeyValue, error) {
		return js.CreateOrUpdateKeyValue(ctx, cfg)
	})
}

// createTry bounds one try of a creation. A fresh cluster can leave a
// request unanswered (the first JetStream API request after the meta
// leader's election is often lost), while a creation that is answered
// takes well under a second; asking again is safe, since creating what
// exists with the same configuration succeeds.
const createTry = 2 * time.Second

// Create runs f, one bucket's or stream's creation: once for a server
// alone (replicas 0 or 1), else as RetryUnavailable does until ctx ends,
// since a cluster's JetStream answers Unavailable while it elects a
// leader or learns its peers.
func Create[T any](ctx context.Context, replicas int, f func(ctx context.Context) (T, error)) (T, error) {
	if replicas <= 1 {
		return f(ctx)
	}
	return RetryUnavailable(ctx, createTry, f)
}

// LeaderReads makes the reads of a replicated stream (a KV bucket's
// "KV_<bucket>", an object store's "OBJ_<bucket>") go to its leader:
// JetStream lets any replica answer a direct get (AllowDirect, which
// KV buckets and object stores turn on), and a replica that has not yet
// applied a write answers as if it had not happened, so a node that
// writes a record and another that reads it at once could miss it (a
// topology submitted through one node, its manager lock taken on
// another). Handles made before the change keep reading directly: open
// them again after. Nothing for one replica.
func LeaderReads(ctx context.Context, js jetstream.JetStream, stream string, replicas int) error {
	if replicas <= 1 {
		return nil
	}
	_, err := Create(ctx, replicas, func(ctx context.Context) (struct{}, error) {
		s, err := js.Stream(ctx, stream)
		if err != nil {
			return struct{}{}, err
		}
		cfg := s.CachedInfo().Config
		if !cfg.AllowDirect {
			return struct{}{}, nil
		}
		cfg.AllowDirect = false
		_, err = js.UpdateStream(ctx, cfg)
		return struct{}{}, err
	})
	if err != nil {
		return fmt.Errorf("stream %s: reads from its leader: %w", stream, err)
	}
	return nil
}

// Ready waits until stream (a bucket's "KV_<bucket>" or "OBJ_<bucket>")
// has a leader and its replicas have caught up (a quorum of them, but
// every one not lost for a stream just created: current), asking every 50 ms to
// 500 ms, for readyLimit at most (then it returns nil: the stream may
// still serve, only later). A stream just created on a cluster can leave
// the first requests to it unanswered until its replicas are current.
// Nothing for one replica.
func Ready(ctx context.Context, js jetstream.JetStream, stream string, replicas int) error {
	if replicas <= 1 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, readyLimit)
	defer cancel()
	wait := 50 * time.Millisecond
	for {
		s, err := js.Stream(ctx, stream)
		if err == nil {
			info, ierr := s.Info(ctx)
			if ierr == nil && current(info) {
				return nil
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

const readyLimit = 10 * time.Second

// lostReplica: a replica its leader has not heard from for longer is on
// a lost node (raft's heartbeats are 1 s apart).
const lostReplica = 3 * time.Second

// current: stream has a leader and the leader with its current replicas
// are a quorum; the others are waited for only on a stream just created
// (it holds no message yet), and never when lost (lostReplica, or
// offline). A lost node's replica would not become current before it is
// back: waiting for it made a topology taken over from a killed node
// wait all of readyLimit opening its checkpoint store, whether the
// server still reported it current (it does for 10 s after it was last
// heard from), not current, or not heard from at all (a leader elected
// after the loss has never heard from it).
func current(info *jetstream.StreamInfo) bool {
	c := info.Cluster
	if c == nil || c.Leader == "" || len(c.Replicas) < info.Config.Replicas-1 {
		return false
	}
	inUse := info.State.LastSeq > 0
	live := 1 // the leader
	for _, r := range c.Replicas {
		switch {
		case r == nil:
			return false
		case r.Offline || r.Active > lostReplica:
			// lost: not waited for
		case r.Current:
			live++
		case !inUse:
			return false
		}
	}
	return 2*live > max(info.Config.Replicas, len(c.Replicas)+1)
}

// LeaderKV opens the replicated KV bucket cfg describes, making it first
// if it is missing, with its reads from the stream's leader
// (LeaderReads): every node of a cluster opens it so, and a handle reads
// from the leader only if it was opened after its stream stopped
// allowing direct gets. The bucket is created once and never updated
// afterwards (an update would turn direct gets on again, which a
// KeyValueConfig cannot turn off, and a node that opened it in between
// would read from any replica). For one replica it is
// CreateOrUpdateKeyValue.
func LeaderKV(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	if cfg.Replicas <= 1 {
		return js.CreateOrUpdateKeyValue(ctx, cfg)
	}
	return Create(ctx, cfg.Replicas, func(ctx context.Context) (jetstream.KeyValue, error) {
		if _, err := js.KeyValue(ctx, cfg.Bucket); errors.Is(err, jetstream.ErrBucketNotFound) {
			if _, err := js.CreateKeyValue(ctx, cfg); err != nil && !errors.Is(err, jetstream.ErrBucketExists) {
				return nil, err
			}
		} else if err != nil {
			return nil, err
		}
		if err := LeaderReads(ctx, js, "KV_"+cfg.Bucket, cfg.Replicas); err != nil {
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				err = fmt.Errorf("%w: %w", errNotApplied, err)
			}
			return nil, err
		}
		return js.KeyValue(ctx, cfg.Bucket)
	})
}

// LeaderObjectStore is LeaderKV for an object store: its reads (an
// object's metadata, its chunks) go to the stream's leader on a cluster.
// A follower answers a direct get as soon as it is nearly caught up, so
// an object just written, or written before a partition healed, can be
// missing there: read back from a follower, a checkpoint would look
// damaged. An existing store is not updated as an object store (that
// would turn direct gets on again); a different cfg.MaxBytes is applied
// to its stream's own configuration. For one replica it is
// CreateOrUpdateObjectStore.
func LeaderObjectStore(ctx context.Context, js jetstream.JetStream, cfg jetstream.ObjectStoreConfig) (jetstream.ObjectStore, error) {
	if cfg.Replicas <= 1 {
		return js.CreateOrUpdateObjectStore(ctx, cfg)
	}
	stream := "OBJ_" + cfg.Bucket
	return Create(ctx, cfg.Replicas, func(ctx context.Context) (jetstream.ObjectStore, error) {
		s, err := js.Stream(ctx, stream)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			if _, err := js.CreateObjectStore(ctx, cfg); err != nil && !errors.Is(err, jetstream.ErrBucketExists) {
				return nil, err
			}
		case err != nil:
			return nil, err
		default:
			sc := s.CachedInfo().Config
			want := cfg.MaxBytes
			if want == 0 {
				want = -1
			}
			if sc.MaxBytes != want {
				sc.MaxBytes, sc.AllowDirect = want, false
				if _, err := js.UpdateStream(ctx, sc); err != nil {
					return nil, err
				}
			}
		}
		if err := LeaderReads(ctx, js, stream, cfg.Replicas); err != nil {
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				err = fmt.Errorf("%w: %w", errNotApplied, err)
			}
			return nil, err
		}
		return js.ObjectStore(ctx, cfg.Bucket)
	})
}
