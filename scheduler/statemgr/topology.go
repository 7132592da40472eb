package statemgr

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/scheduler/api"
)

// Topology is a submitted topology as the state manager keeps it.
type Topology struct {
	Name string
	// Spec is the topology as YAML, already resolved by the CLI (overrides
	// applied); stored verbatim.
	Spec []byte
	// Modules maps a component name to the sha256 (hex) of its artifact in
	// the artifact store.
	Modules     map[string]string
	SubmittedAt time.Time
	SubmittedBy string
	Options     map[string]string
	// History lists every module version of every component, oldest
	// first (submit, swaps, rollbacks).
	History []api.ModuleVersion
	// Revision is the KV revision the topology was read at (set by
	// GetTopology and ListTopologies; ignored on writes). Pass it to
	// UpdateTopology.
	Revision uint64
}

// topologyRecord is the stored form: Spec as a string so that the value stays
// readable with `nats kv get`.
type topologyRecord struct {
	Name        string              `json:"name"`
	Spec        string              `json:"spec"`
	Modules     map[string]string   `json:"modules,omitempty"`
	SubmittedAt time.Time           `json:"submitted_at"`
	SubmittedBy string              `json:"submitted_by,omitempty"`
	Options     map[string]string   `json:"options,omitempty"`
	History     []api.ModuleVersion `json:"history,omitempty"`
}

func encodeTopology(t Topology) ([]byte, error) {
	if err := checkTopologyName(t.Name); err != nil {
		return nil, err
	}
	return json.Marshal(topologyRecord{
		Name: t.Name, Spec: string(t.Spec), Modules: t.Modules,
		SubmittedAt: t.SubmittedAt, SubmittedBy: t.SubmittedBy, Options: t.Options, History: t.History,
	})
}

func decodeTopology(e jetstream.KeyValueEntry) (Topology, error) {
	var r topologyRecord
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return Topology{}, fmt.Errorf("statemgr: topology %q: decoding revision %d: %w", e.Key(), e.Revision(), err)
	}
	return Topology{
		Name: r.Name, Spec: []byte(r.Spec), Modules: r.Modules,
		SubmittedAt: r.SubmittedAt, SubmittedBy: r.SubmittedBy, Options: r.Options, History: r.History,
		Revision: e.Revision(),
	}, nil
}

// CreateTopology stores a new topology and returns its revision. It is
// create-only: if a topology of that name exists the error matches
// ErrExists, whoever wrote it, so two concurrent submits of one name cannot
// both succeed.
func (s *Store) CreateTopology(ctx context.Context, t Topology) (uint64, error) {
	v, err := encodeTopology(t)
	if err != nil {
		return 0, err
	}
	// On a replicated store a create the cluster did not answer is made
	// again; one that finds the record with these very bytes finds its
	// own first try, which had landed.
	tries := 0
	rev, err := bounded(ctx, s.replicas, func(ctx context.Context) (uint64, error) {
		tries++
		rev, err := s.topologies.Create(ctx, t.Name, v)
		if tries > 1 && errors.Is(err, jetstream.ErrKeyExists) {
			if e, gerr := s.topologies.Get(ctx, t.Name); gerr == nil && bytes.Equal(e.Value(), v) {
				return e.Revision(), nil
			}
		}
		return rev, err
	})
	if errors.Is(err, jetstream.ErrKeyExists) {
		return 0, fmt.Errorf("statemgr: topology %q: %w", t.Name, ErrExists)
	}
	if err != nil {
		return 0, fmt.Errorf("statemgr: creating topology %q: %w", t.Name, err)
	}
	return rev, nil
}

// GetTopology returns the topology called name with its Revision set.
func (s *Store) GetTopology(ctx context.Context, name string) (Topology, error) {
	if err := checkTopologyName(name); err != nil {
		return Topology{}, err
	}
	e, err := s.topologies.Get(ctx, name)
	if notFound(err) {
		return Topology{}, fmt.Errorf("statemgr: topology %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return Topology{}, fmt.Errorf("statemgr: reading topology %q: %w", name, err)
	}
	return decodeTopology(e)
}

// UpdateTopology replaces topology t.Name if its current revision is
// expectedRevision and returns the new revision. Otherwise nothing is written
// and the error matches ErrConflict (someone else updated it: re-read and
// retry) or ErrNotFound (it does not exist).
func (s *Store) UpdateTopology(ctx context.Context, t Topology, expectedRevision uint64) (uint64, error) {
	v, err := encodeTopology(t)
	if err != nil {
		return 0, err
	}
	rev, err := s.topologies.Update(ctx, t.Name, v, expectedRevision)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
		return 0, s.conflict(ctx, s.topologies, "topology", t.Name, t.Name, expectedRevision)
	}
	if err != nil {
		return 0, fmt.Errorf("statemgr: updating topology %q: %w", t.Name, err)
	}
	return rev, nil
}

// conflict builds the error for a failed revision check on key: ErrNotFound
// if the key is gone, else ErrConflict naming both revisions.
func (s *Store) conflict(ctx context.Context, kv jetstream.KeyValue, what, topology, key string, expected uint64) error {
	e, err := kv.Get(ctx, key)
	if notFound(err) {
		return fmt.Errorf("statemgr: %s of topology %q: %w", what, topology, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("statemgr: %s of topology %q: expected revision %d: %w", what, topology, expected, ErrConflict)
	}
	return fmt.Errorf("statemgr: %s of topology %q: expected revision %d, found %d: %w", what, topology, expected, e.Revision(), ErrConflict)
}

// ListTopologies returns every topology of the tenant, sorted by name, read
// in one pass over the bucket (a consistent view of each entry, not of the
// bucket as a whole).
func (s *Store) ListTopologies(ctx context.Context) ([]Topology, error) {
	return bounded(ctx, s.replicas, s.listTopologies)
}

func (s *Store) listTopologies(ctx context.Context) ([]Topology, error) {
	w, err := s.topologies.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("statemgr: listing topologies: %w", err)
	}
	defer w.Stop()
	var out []Topology
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("statemgr: listing topologies: %w", ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return nil, errors.New("statemgr: listing topologies: watcher closed")
			}
			if e == nil { // all current values delivered
				sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
				return out, nil
			}
			t, err := decodeTopology(e)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		}
	}
}

// DeleteTopology removes a topology and everything kept for it: its TM lock
// (a running TM sees ErrLockLost at its next refresh), plans, execution
// state and state handoff blobs, and last the definition itself, so a
// deletion interrupted half-way leaves the topology listed and can be
// repeated. Artifacts are shared between topologies and are not deleted
// (see DeleteArtifact). The error matches ErrNotFound if there was no
// definition; the other records are removed anyway.
//
// Stop the topology's TM first: a write it makes after its part was deleted
// would outlive the deletion.
func (s *Store) DeleteTopology(ctx context.Context, name string) error {
	if err := checkTopologyName(name); err != nil {
		return err
	}
	if _, err := s.topologies.Get(ctx, name); notFound(err) {
		// Still clean up what a half-done deletion may have left.
		if err := s.deleteDependents(ctx, name); err != nil {
			return err
		}
		return fmt.Errorf("statemgr: topology %q: %w", name, ErrNotFound)
	}
	if err := s.deleteDependents(ctx, name); err != nil {
		return err
	}
	if err := s.topologies.Purge(ctx, name); err != nil {
		return fmt.Errorf("statemgr: deleting topology %q: %w", name, err)
	}
	return nil
}

func (s *Store) deleteDependents(ctx context.Context, name string) error {
	for _, k := range []struct {
		kv   jetstream.KeyValue
		key  string
		opts []jetstream.KVDeleteOpt
	}{
		// The lock bucket allows marker TTLs: let its marker go away.
		{s.locks, name, []jetstream.KVDeleteOpt{jetstream.PurgeTTL(lockMarkerTTL)}},
		{s.locks, managerKey(name), []jetstream.KVDeleteOpt{jetstream.PurgeTTL(lockMarkerTTL)}},
		{s.plans, planKey(name, planPacking), nil},
		{s.plans, planKey(name, planPhysical), nil},
		{s.states, name, nil},
	} {
		// Purging an absent key only writes a marker; skip it to keep the
		// buckets free of markers for keys that never existed.
		if _, err := k.kv.Get(ctx, k.key); notFound(err) {
			continue
		}
		if err := k.kv.Purge(ctx, k.key, k.opts...); err != nil {
			return fmt.Errorf("statemgr: deleting topology %q: %s key %s: %w", name, k.kv.Bucket(), k.key, err)
		}
	}
	return s.deleteHandoff(ctx, name+"/")
}

// validState reports one of the execution states api.State defines.
func validState(s api.State) bool {
	switch s {
	case api.StateRunning, api.StatePaused, api.StateKilled, api.StateFinished, api.StateFailed:
		return true
	}
	return false
}

// ExecState is the execution state of a topology.
type ExecState struct {
	// State is one of the execution states (scheduler/api owns them, as
	// the API shows them): api.StateRunning, StatePaused, StateKilled,
	// StateFinished, StateFailed.
	State   api.State `json:"state"`
	Message string    `json:"message,omitempty"`
	// Updated is when the state was set; SetState fills in the current
	// time if it is zero.
	Updated time.Time `json:"updated"`
	// Revision is the KV revision the state was read at (set by GetState).
	// SetState uses a non-zero Revision as the expected current revision.
	Revision uint64 `json:"-"`
}

// SetState writes the execution state of a topology that exists and
// returns the new revision. If st.Revision is zero the write is
// unconditional; otherwise it succeeds only if the stored state still has
// that revision, else the error matches ErrConflict (so a read-modify-write
// like "set FINISHED unless KILLED meanwhile" is safe: GetState, check,
// SetState with the state read).
func (s *Store) SetState(ctx context.Context, topology string, st ExecState) (uint64, error) {
	if !validState(st.State) {
		return 0, fmt.Errorf("statemgr: state of topology %q: %q is not one of RUNNING, PAUSED, KILLED, FINISHED, FAILED: %w", topology, st.State, ErrInvalid)
	}
	if err := s.mustExist(ctx, topology, "setting state"); err != nil {
		return 0, err
	}
	if st.Updated.IsZero() {
		st.Updated = time.Now()
	}
	v, err := json.Marshal(st)
	if err != nil {
		return 0, fmt.Errorf("statemgr: state of topology %q: %w", topology, err)
	}
	var rev uint64
	if st.Revision == 0 {
		rev, err = s.states.Put(ctx, topology, v)
	} else {
		rev, err = s.states.Update(ctx, topology, v, st.Revision)
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
			return 0, s.conflict(ctx, s.states, "state", topology, topology, st.Revision)
		}
	}
	if err != nil {
		return 0, fmt.Errorf("statemgr: setting state of topology %q: %w", topology, err)
	}
	return rev, nil
}

// GetState returns the execution state of a topology with its Revision set;
// ErrNotFound if none was set.
func (s *Store) GetState(ctx context.Context, topology string) (ExecState, error) {
	if err := checkTopologyName(topology); err != nil {
		return ExecState{}, err
	}
	e, err := s.states.Get(ctx, topology)
	if notFound(err) {
		return ExecState{}, fmt.Errorf("statemgr: state of topology %q: %w", topology, ErrNotFound)
	}
	if err != nil {
		return ExecState{}, fmt.Errorf("statemgr: reading state of topology %q: %w", topology, err)
	}
	var st ExecState
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		return ExecState{}, fmt.Errorf("statemgr: state of topology %q: decoding revision %d: %w", topology, e.Revision(), err)
	}
	st.Revision = e.Revision()
	return st, nil
}

// mustExist checks that the topology is defined before a dependent record is
// written, so records are not created for names that were never submitted
// or are already deleted.
func (s *Store) mustExist(ctx context.Context, topology, doing string) error {
	if err := checkTopologyName(topology); err != nil {
		return err
	}
	_, err := s.topologies.Get(ctx, topology)
	if notFound(err) {
		return fmt.Errorf("statemgr: %s: topology %q: %w", doing, topology, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("statemgr: %s: reading topology %q: %w", doing, topology, err)
	}
	return nil
}

const (
	planPacking  = "packing"
	planPhysical = "physical"
)

func planKey(topology, kind string) string { return topology + "." + kind }

// PutPackingPlan stores the packing plan (opaque bytes) of a topology that
// exists and returns its revision.
func (s *Store) PutPackingPlan(ctx context.Context, topology string, plan []byte) (uint64, error) {
	return s.putPlan(ctx, topology, planPacking, plan)
}

// GetPackingPlan returns the packing plan of a topology and its revision.
func (s *Store) GetPackingPlan(ctx context.Context, topology string) ([]byte, uint64, error) {
	return s.getPlan(ctx, topology, planPacking)
}

// PutPhysicalPlan stores the physical plan (opaque bytes) of a topology that
// exists and returns its revision; watchers receive it.
func (s *Store) PutPhysicalPlan(ctx context.Context, topology string, plan []byte) (uint64, error) {
	return s.putPlan(ctx, topology, planPhysical, plan)
}

// GetPhysicalPlan returns the physical plan of a topology and its revision.
func (s *Store) GetPhysicalPlan(ctx context.Context, topology string) ([]byte, uint64, error) {
	return s.getPlan(ctx, topology, planPhysical)
}

func (s *Store) putPlan(ctx context.Context, topology, kind string, plan []byte) (uint64, error) {
	if err := s.mustExist(ctx, topology, "storing "+kind+" plan"); err != nil {
		return 0, err
	}
	rev, err := s.plans.Put(ctx, planKey(topology, kind), plan)
	if err != nil {
		return 0, fmt.Errorf("statemgr: storing %s plan of topology %q: %w", kind, topology, err)
	}
	return rev, nil
}

func (s *Store) getPlan(ctx context.Context, topology, kind string) ([]byte, uint64, error) {
	if err := checkTopologyName(topology); err != nil {
		return nil, 0, err
	}
	e, err := s.plans.Get(ctx, planKey(topology, kind))
	if notFound(err) {
		return nil, 0, fmt.Errorf("statemgr: %s plan of topology %q: %w", kind, topology, ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("statemgr: reading %s plan of topology %q: %w", kind, topology, err)
	}
	return e.Value(), e.Revision(), nil
}

// PlanUpdate is one value of a physical plan seen by WatchPhysicalPlan.
type PlanUpdate struct {
	Plan     []byte
	Revision uint64
	// Deleted is set when the plan was removed (the topology was deleted);
	// Plan is nil then.
	Deleted bool
}

// WatchPhysicalPlan follows the physical plan of a topology: the channel
// delivers the current plan first (nothing until one is stored, if none
// is) and then every later change, in revision order. It holds the latest
// value only: a receiver that falls behind skips intermediate revisions but
// always gets the newest one, which is what a host re-reading its part of the
// plan needs. The channel is closed when ctx ends or the watch fails (the
// connection closed); check ctx.Err() to tell which.
func (s *Store) WatchPhysicalPlan(ctx context.Context, topology string) (<-chan PlanUpdate, error) {
	if err := checkTopologyName(topology); err != nil {
		return nil, err
	}
	key := planKey(topology, planPhysical)
	w, err := s.plans.Watch(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("statemgr: watching physical plan of topology %q: %w", topology, err)
	}
	out := make(chan PlanUpdate)
	go func() {
		defer close(out)
		defer w.Stop()
		var pending *PlanUpdate
		for {
			var send chan PlanUpdate
			var next PlanUpdate
			if pending != nil {
				send, next = out, *pending
			}
			select {
			case <-ctx.Done():
				return
			case send <- next:
				pending = nil
			case e, ok := <-w.Updates():
				if !ok {
					s.log.Debug("physical plan watch ended", "topology", topology)
					return
				}
				if e == nil || e.Key() != key {
					continue // end-of-initial-values marker
				}
				u := PlanUpdate{Revision: e.Revision()}
				if e.Operation() == jetstream.KeyValuePut {
					u.Plan = e.Value()
				} else {
					u.Deleted = true
				}
				pending = &u
			}
		}
	}()
	return out, nil
}
