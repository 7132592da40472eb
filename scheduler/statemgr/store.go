package statemgr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/jsretry"

	"github.com/ardea-dev/ardea/internal/names"
)

// Errors returned (wrapped, with the topology, key or digest named) by Store
// methods. Test with errors.Is.
var (
	// ErrNotFound: the topology, plan, state, artifact or blob does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExists: CreateTopology found a topology of that name.
	ErrExists = errors.New("already exists")
	// ErrConflict: an optimistic-concurrency write found a newer revision
	// than the one it expected; re-read and retry.
	ErrConflict = errors.New("revision conflict")
	// ErrLocked: another owner holds the topology manager lock.
	ErrLocked = errors.New("locked")
	// ErrLockLost: the lock expired or was taken or deleted since this holder
	// last refreshed it.
	ErrLockLost = errors.New("lock lost")
	// ErrInvalid: a name, state or TTL argument is malformed.
	ErrInvalid = errors.New("invalid argument")
)

// Bucket kinds; the bucket (stream) name is "ardea_<tenant>_<kind>". Kinds
// contain no '_', so distinct (tenant, kind) pairs never share a name.
const (
	kindTopologies = "topologies"
	kindPlans      = "plans"
	kindState      = "state"
	kindTMLock     = "tmlock"
	kindArtifacts  = "artifacts"
	kindHandoff    = "handoff"
)

// lockMarkerTTL is how long the server keeps the delete marker it writes
// when a lock entry expires (JetStream "limit marker"). It must be set for
// per-key TTLs to be allowed at all; its length only bounds how long the
// marker occupies the bucket.
const lockMarkerTTL = time.Minute

// Options configures Open.
type Options struct {
	// Tenant namespaces every bucket: letters, digits, '_' and '-'.
	// Default names.DefaultTenant.
	Tenant string
	// Logger receives debug lines about bucket setup and lock hand-overs.
	// Nil discards them.
	Logger *slog.Logger
	// Bind opens the tenant's existing buckets without creating or
	// updating them: a host's NATS credential may not manage buckets
	// (internal/natsauth); the daemon creates them.
	Bind bool
	// Replicas of every bucket over a cluster's nodes (0 or 1: one copy;
	// a cluster of three or more keeps three, `ardea server`).
	Replicas int
}

// Store is the state manager of one tenant. All methods are safe for
// concurrent use, also from several processes on the same NATS server: the
// server orders the writes and the revision checks make the read-modify-write
// operations atomic.
type Store struct {
	tenant   string
	replicas int
	log      *slog.Logger
	js       jetstream.JetStream

	topologies jetstream.KeyValue
	plans      jetstream.KeyValue
	states     jetstream.KeyValue
	locks      jetstream.KeyValue
	artifacts  jetstream.ObjectStore
	handoff    jetstream.ObjectStore
	// The object stores' streams, for reads by direct gets (objread).
	artifactsStream jetstream.Stream
	handoffStream   jetstream.Stream
}

// Open connects the state manager of opts.Tenant to the JetStream-enabled
// server behind nc, creating its buckets if they are missing. Open is
// idempotent and safe when several processes call it concurrently (JetStream
// treats creating a stream with an identical configuration as a no-op). The
// Store does not own nc; closing nc ends the Store.
func Open(ctx context.Context, nc *nats.Conn, opts Options) (*Store, error) {
	tenant := opts.Tenant
	if tenant == "" {
		tenant = names.DefaultTenant
	}
	if !names.Valid(tenant) {
		return nil, fmt.Errorf("statemgr: tenant %s: %w", nameProblem(tenant), ErrInvalid)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("statemgr: tenant %q: %w", tenant, err)
	}
	s := &Store{tenant: tenant, log: log.With("tenant", tenant), js: js, replicas: opts.Replicas}

	kvs := []struct {
		kind string
		dst  *jetstream.KeyValue
		desc string
		mtt  time.Duration
	}{
		{kindTopologies, &s.topologies, "Ardea topology definitions, key <topology>", 0},
		{kindPlans, &s.plans, "Ardea packing and physical plans, keys <topology>.packing and <topology>.physical", 0},
		{kindState, &s.states, "Ardea execution state, key <topology>", 0},
		{kindTMLock, &s.locks, "Ardea topology manager locks (per-key TTL), key <topology>", lockMarkerTTL},
	}
	for _, b := range kvs {
		if opts.Bind {
			kv, err := js.KeyValue(ctx, s.bucket(b.kind))
			if err != nil {
				return nil, fmt.Errorf("statemgr: tenant %q: key-value bucket %s: %w", tenant, s.bucket(b.kind), err)
			}
			*b.dst = kv
			continue
		}
		cfg := jetstream.KeyValueConfig{
			Bucket:         s.bucket(b.kind),
			Description:    b.desc,
			History:        1,
			Storage:        jetstream.FileStorage,
			LimitMarkerTTL: b.mtt,
			Replicas:       opts.Replicas,
		}
		// Buckets only the daemon reads read from their leader on a
		// cluster (jsretry.LeaderKV); the hosts read the others by key
		// with direct gets (readYourWrites below).
		leader := opts.Replicas > 1 && b.kind != kindTopologies && b.kind != kindPlans
		kv, err := jsretry.Create(ctx, opts.Replicas, func(ctx context.Context) (jetstream.KeyValue, error) {
			if leader {
				return jsretry.LeaderKV(ctx, js, cfg)
			}
			return js.CreateOrUpdateKeyValue(ctx, cfg)
		})
		if err != nil {
			return nil, fmt.Errorf("statemgr: tenant %q: key-value bucket %s: %w", tenant, s.bucket(b.kind), err)
		}
		if err := jsretry.Ready(ctx, js, "KV_"+cfg.Bucket, opts.Replicas); err != nil {
			return nil, err
		}
		if opts.Replicas > 1 {
			// Read what was just written, whichever node wrote it: from
			// the leader where only the daemon reads, else this Store's
			// own writes (readYourWrites).
			switch b.kind {
			case kindTopologies, kindPlans:
				kv = &readYourWrites{KeyValue: patientKV{kv}, revs: map[string]uint64{}}
			default:
				kv = patientKV{kv}
			}
		} else {
			kv = aloneKV{kv}
		}
		*b.dst = kv
	}
	objs := []struct {
		kind   string
		dst    *jetstream.ObjectStore
		stream *jetstream.Stream
		desc   string
	}{
		{kindArtifacts, &s.artifacts, &s.artifactsStream, "Ardea artifacts (.wasm modules), object name <sha256 hex>"},
		{kindHandoff, &s.handoff, &s.handoffStream, "Ardea key-group state handoff, object name <topology>/<component>/<epoch>/<key group>"},
	}
	for _, b := range objs {
		var os jetstream.ObjectStore
		if opts.Bind {
			os, err = js.ObjectStore(ctx, s.bucket(b.kind))
		} else {
			cfg := jetstream.ObjectStoreConfig{
				Bucket:      s.bucket(b.kind),
				Description: b.desc,
				Storage:     jetstream.FileStorage,
				Replicas:    opts.Replicas,
			}
			// Read from the leader on a cluster (jsretry.LeaderObjectStore).
			os, err = jsretry.LeaderObjectStore(ctx, js, cfg)
			if err == nil {
				err = jsretry.Ready(ctx, js, "OBJ_"+cfg.Bucket, opts.Replicas)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("statemgr: tenant %q: object store %s: %w", tenant, s.bucket(b.kind), err)
		}
		*b.dst = os
		if *b.stream, err = js.Stream(ctx, "OBJ_"+s.bucket(b.kind)); err != nil {
			return nil, fmt.Errorf("statemgr: tenant %q: object store %s: its stream: %w", tenant, s.bucket(b.kind), err)
		}
	}
	s.log.Debug("state manager open", "buckets", s.Buckets())
	return s, nil
}

// Tenant returns the tenant this Store serves.
func (s *Store) Tenant() string { return s.tenant }

// Buckets returns the names of the JetStream buckets (KV buckets and object
// stores) of this tenant, for diagnostics and tooling.
func (s *Store) Buckets() []string {
	kinds := []string{kindTopologies, kindPlans, kindState, kindTMLock, kindArtifacts, kindHandoff}
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = s.bucket(k)
	}
	return out
}

func (s *Store) bucket(kind string) string { return "ardea_" + s.tenant + "_" + kind }

func nameProblem(s string) string {
	switch {
	case s == "":
		return "must not be empty"
	case len(s) > 128:
		return fmt.Sprintf("%.20q... is longer than 128 bytes", s)
	}
	return fmt.Sprintf("%q contains characters other than letters, digits, '_' and '-'", s)
}

func checkTopologyName(name string) error {
	if !names.Valid(name) {
		return fmt.Errorf("statemgr: topology name %s: %w", nameProblem(name), ErrInvalid)
	}
	return nil
}

// notFound reports whether err means the KV key or object is absent.
func notFound(err error) bool {
	return errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) ||
		errors.Is(err, jetstream.ErrObjectNotFound)
}
