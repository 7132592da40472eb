package checkpoint

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// DefaultBucket is the object store JetStreamStore uses by default.
const DefaultBucket = "ardea_checkpoints"

// JetStreamOptions configures NewJetStreamStore.
type JetStreamOptions struct {
	// Bucket is the object store's name (created if missing); default
	// DefaultBucket. One bucket serves many topologies.
	Bucket string
	// Replicas of the bucket's stream (clustered servers); default 1.
	Replicas int
	// MaxBytes caps the bucket; 0: no cap. A Save that does not fit fails
	// and leaves the older checkpoints as they were.
	MaxBytes int64
	// Memory keeps the bucket in memory instead of files (tests).
	Memory bool
}

// JetStreamStore is a Store in a NATS JetStream object store. Object names:
//
//	<topology>/GLOBAL                              the global marker
//	<topology>/<checkpoint id, 20 digits>/<task>   a task's snapshot
//
// The object store chunks large blobs (128 KiB chunks) and checks their
// SHA-256 on read; the envelope's CRC-32C and names are checked on top.
// A put is atomic (the metadata is written after the chunks; if the bucket
// refuses chunks, Save removes the partial object, see dropBroken). Deleting an
// object leaves a tombstone in the object store's metadata subject, which
// would pile up at one per task per checkpoint, so Delete and DeleteBefore
// also purge that subject from the bucket's stream (subject layout of ADR-20:
// $O.<bucket>.M.<base64url name> in stream OBJ_<bucket>).
//
// Checkpoints, Delete and DeleteBefore list the bucket: O(objects in the
// bucket), which holds the live checkpoints of its topologies only.
// Safe for concurrent use.
type JetStreamStore struct {
	bucket string
	obs    jetstream.ObjectStore
	stream jetstream.Stream
	mu     sync.Mutex // serialises SetGlobal's read-check-write
}

var _ Store = (*JetStreamStore)(nil)

// NewJetStreamStore opens (creating if needed) the bucket on js's server.
func NewJetStreamStore(ctx context.Context, js jetstream.JetStream, o JetStreamOptions) (*JetStreamStore, error) {
	if o.Bucket == "" {
		o.Bucket = DefaultBucket
	}
	storage := jetstream.FileStorage
	if o.Memory {
		storage = jetstream.MemoryStorage
	}
	obs, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:      o.Bucket,
		Description: "Ardea checkpoints: <topology>/<checkpoint id>/<task> and <topology>/GLOBAL",
		Storage:     storage,
		Replicas:    o.Replicas,
		MaxBytes:    o.MaxBytes,
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoint: object store %s: %w", o.Bucket, err)
	}
	stream, err := js.Stream(ctx, "OBJ_"+o.Bucket)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: object store %s: its stream: %w", o.Bucket, err)
	}
	return &JetStreamStore{bucket: o.Bucket, obs: obs, stream: stream}, nil
}

// ObjectStore returns the underlying object store (administration, tests).
func (s *JetStreamStore) ObjectStore() jetstream.ObjectStore { return s.obs }

func snapName(topology string, id uint64, task uint32) string {
	return fmt.Sprintf("%s/%020d/%d", topology, id, task)
}

func globalName(topology string) string { return topology + "/GLOBAL" }

func objNotFound(err error) bool {
	return errors.Is(err, jetstream.ErrObjectNotFound) || errors.Is(err, jetstream.ErrKeyNotFound)
}

// Save implements Store.
func (s *JetStreamStore) Save(ctx context.Context, topology string, id uint64, task uint32, data []byte) error {
	if err := checkKey(topology, id, task); err != nil {
		return err
	}
	name := snapName(topology, id, task)
	if _, err := s.obs.PutBytes(ctx, name, seal(kindSnap, topology, id, task, data)); err != nil {
		err = fmt.Errorf("%s: save to object %s/%s: %w", where(topology, id, task), s.bucket, name, err)
		if rerr := s.dropBroken(context.WithoutCancel(ctx), name); rerr != nil {
			err = fmt.Errorf("%w (and removing the partial object: %w)", err, rerr)
		}
		return err
	}
	return nil
}

// dropBroken removes the metadata of object name if its chunks are not all
// in the stream. nats.go publishes an object's chunks and then its metadata
// asynchronously, so when the bucket is full the metadata can be stored
// although chunks were refused; Put then purges the chunks and returns an
// error, leaving an object that every reader waits for until its context
// ends. Purging the metadata makes it a missing object (ErrNotFound) again.
// An intact object (the metadata was the refused part) is left alone.
func (s *JetStreamStore) dropBroken(ctx context.Context, name string) error {
	info, err := s.obs.GetInfo(ctx, name)
	if objNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	chunks := "$O." + s.bucket + ".C." + info.NUID
	si, err := s.stream.Info(ctx, jetstream.WithSubjectFilter(chunks))
	if err != nil {
		return err
	}
	if si.State.Subjects[chunks] == uint64(info.Chunks) {
		return nil
	}
	return s.stream.Purge(ctx, jetstream.WithPurgeSubject(s.metaSubject(name)))
}

func (s *JetStreamStore) metaSubject(name string) string {
	return "$O." + s.bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
}

// Load implements Store.
func (s *JetStreamStore) Load(ctx context.Context, topology string, id uint64, task uint32) ([]byte, error) {
	if err := checkKey(topology, id, task); err != nil {
		return nil, err
	}
	name := snapName(topology, id, task)
	b, err := s.obs.GetBytes(ctx, name)
	switch {
	case objNotFound(err):
		return nil, fmt.Errorf("%s: no snapshot (object %s/%s): %w", where(topology, id, task), s.bucket, name, ErrNotFound)
	case errors.Is(err, jetstream.ErrDigestMismatch):
		return nil, fmt.Errorf("%s: object %s/%s %w: %w", where(topology, id, task), s.bucket, name, ErrCorrupt, err)
	case err != nil:
		return nil, fmt.Errorf("%s: load object %s/%s: %w", where(topology, id, task), s.bucket, name, err)
	}
	data, err := unseal(b, kindSnap, topology, id, task)
	if err != nil {
		return nil, fmt.Errorf("%s: object %s/%s %w: %w", where(topology, id, task), s.bucket, name, ErrCorrupt, err)
	}
	return data, nil
}

// SetGlobal implements Store.
func (s *JetStreamStore) SetGlobal(ctx context.Context, topology string, id uint64) error {
	if err := checkTopology(topology); err != nil {
		return err
	}
	if id == 0 {
		return fmt.Errorf("checkpoint: topology %q: global checkpoint 0: %w", topology, ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.Global(ctx, topology)
	if err != nil && !errors.Is(err, ErrCorrupt) {
		return err
	}
	if id < cur {
		return fmt.Errorf("checkpoint: topology %q: global checkpoint %d is older than the recorded %d: %w", topology, id, cur, ErrInvalid)
	}
	if id == cur {
		return nil
	}
	if _, err := s.obs.PutBytes(ctx, globalName(topology), seal(kindGlobal, topology, id, 0, nil)); err != nil {
		return fmt.Errorf("checkpoint: topology %q: recording global checkpoint %d in %s: %w", topology, id, s.bucket, err)
	}
	return nil
}

// Global implements Store.
func (s *JetStreamStore) Global(ctx context.Context, topology string) (uint64, error) {
	if err := checkTopology(topology); err != nil {
		return 0, err
	}
	name := globalName(topology)
	b, err := s.obs.GetBytes(ctx, name)
	switch {
	case objNotFound(err):
		return 0, nil
	case errors.Is(err, jetstream.ErrDigestMismatch):
		return 0, fmt.Errorf("checkpoint: topology %q: %s %s/%s %w: %w", topology, globalLabel, s.bucket, name, ErrCorrupt, err)
	case err != nil:
		return 0, fmt.Errorf("checkpoint: topology %q: global checkpoint: %w", topology, err)
	}
	id, err := openGlobal(b, topology)
	if err != nil {
		return 0, fmt.Errorf("checkpoint: topology %q: %s %s/%s %w: %w", topology, globalLabel, s.bucket, name, ErrCorrupt, err)
	}
	return id, nil
}

// snapshots lists the topology's snapshot objects: id -> object names.
func (s *JetStreamStore) snapshots(ctx context.Context, topology string) (map[uint64][]string, error) {
	infos, err := s.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: topology %q: listing %s: %w", topology, s.bucket, err)
	}
	out := map[uint64][]string{}
	prefix := topology + "/"
	for _, in := range infos {
		rest, ok := strings.CutPrefix(in.Name, prefix)
		if !ok {
			continue
		}
		idStr, _, ok := strings.Cut(rest, "/")
		if !ok || len(idStr) != 20 {
			continue
		}
		id, err := strconv.ParseUint(idStr, 10, 64)
		if err != nil || id == 0 {
			continue
		}
		out[id] = append(out[id], in.Name)
	}
	return out, nil
}

// Checkpoints implements Store.
func (s *JetStreamStore) Checkpoints(ctx context.Context, topology string) ([]uint64, error) {
	if err := checkTopology(topology); err != nil {
		return nil, err
	}
	snaps, err := s.snapshots(ctx, topology)
	if err != nil {
		return nil, err
	}
	ids := make([]uint64, 0, len(snaps))
	for id := range snaps {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// Delete implements Store.
func (s *JetStreamStore) Delete(ctx context.Context, topology string, id uint64) error {
	if id == 0 {
		return fmt.Errorf("checkpoint: topology %q: delete checkpoint 0: %w", topology, ErrInvalid)
	}
	g, err := s.Global(ctx, topology)
	if err != nil {
		return err
	}
	if id == g {
		return fmt.Errorf("checkpoint: topology %q: checkpoint %d is the last global one: %w", topology, id, ErrInvalid)
	}
	return s.deleteWhere(ctx, topology, func(old uint64) bool { return old == id })
}

// DeleteBefore implements Store.
func (s *JetStreamStore) DeleteBefore(ctx context.Context, topology string, id uint64) error {
	g, err := s.Global(ctx, topology)
	if err != nil {
		return err
	}
	if id > g {
		return fmt.Errorf("checkpoint: topology %q: deleting checkpoints before %d, newer than the last global %d: %w", topology, id, g, ErrInvalid)
	}
	return s.deleteWhere(ctx, topology, func(old uint64) bool { return old < id })
}

func (s *JetStreamStore) deleteWhere(ctx context.Context, topology string, match func(uint64) bool) error {
	snaps, err := s.snapshots(ctx, topology)
	if err != nil {
		return err
	}
	for id, names := range snaps {
		if !match(id) {
			continue
		}
		for _, name := range names {
			if err := s.deleteObject(ctx, name); err != nil {
				return fmt.Errorf("checkpoint: topology %q: deleting checkpoint %d (object %s/%s): %w", topology, id, s.bucket, name, err)
			}
		}
	}
	return nil
}

// deleteObject deletes an object and purges its tombstone.
func (s *JetStreamStore) deleteObject(ctx context.Context, name string) error {
	if err := s.obs.Delete(ctx, name); err != nil && !objNotFound(err) {
		return err
	}
	return s.stream.Purge(ctx, jetstream.WithPurgeSubject(s.metaSubject(name)))
}
