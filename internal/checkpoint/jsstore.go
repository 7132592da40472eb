package checkpoint

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/jsretry"

	"github.com/ardea-dev/ardea/internal/objread"
)

// DefaultBucket is the object store JetStreamStore uses by default.
const DefaultBucket = "ardea_checkpoints"

// DefaultMaxBytes is the cap Ardea's daemon and hosts give a tenant's
// checkpoint bucket (JetStreamOptions.MaxBytes): 8 GiB, room for the
// retained global checkpoints (topology.checkpoint.retain, 3 by default)
// and the one in progress of many topologies. A Save beyond it fails at
// once ("maximum bytes exceeded"), so checkpoints cannot take the space of
// the other streams (the state manager's buckets).
const DefaultMaxBytes = 8 << 30

// minMaxBytes is the smallest cap NewJetStreamStore halves a cap down to
// when the server cannot reserve it.
const minMaxBytes = 64 << 20

// errCodeStorageResources is nats-server's JSStorageResourcesExceededErr:
// the server cannot reserve a stream's MaxBytes.
const errCodeStorageResources jetstream.ErrorCode = 10047

// JetStreamOptions configures NewJetStreamStore.
type JetStreamOptions struct {
	// Bucket is the object store's name (created if missing); default
	// DefaultBucket. One bucket serves many topologies.
	Bucket string
	// Replicas of the bucket's stream (clustered servers); default 1.
	Replicas int
	// MaxBytes caps the bucket; 0: no cap. A Save that does not fit fails
	// and leaves the older checkpoints as they were. nats-server reserves
	// a stream's MaxBytes out of its storage limit (by default 75% of the
	// disk space free when it started, plus what it holds): a cap it
	// cannot reserve, or that no cluster peer can (jsretry.NoStorage), is
	// halved until it can, down to 64 MiB (see JetStreamStore.MaxBytes).
	MaxBytes int64
	// Memory keeps the bucket in memory instead of files (tests).
	Memory bool
	// Bind opens an existing bucket without creating or updating it (a
	// host's NATS credential may not manage buckets, internal/natsauth);
	// MaxBytes then reports the bucket's cap.
	Bind bool
}

// JetStreamStore is a Store in a NATS JetStream object store. Object names:
//
//	<topology>/GLOBAL                              the global marker
//	<topology>/<checkpoint id, 20 digits>/<task>   a task's snapshot
//	<topology>/<checkpoint id, 20 digits>/GLOBAL   the checkpoint was global
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
	bucket   string
	maxBytes int64
	obs      jetstream.ObjectStore
	stream   jetstream.Stream
	mu       sync.Mutex // serialises SetGlobal's read-check-write
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
	cfg := jetstream.ObjectStoreConfig{
		Bucket:      o.Bucket,
		Description: "Ardea checkpoints: <topology>/<checkpoint id>/<task> and <topology>/GLOBAL",
		Storage:     storage,
		Replicas:    o.Replicas,
		MaxBytes:    o.MaxBytes,
	}
	if o.Bind {
		stream, err := js.Stream(ctx, "OBJ_"+o.Bucket)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: object store %s: its stream: %w", o.Bucket, err)
		}
		obs, err := js.ObjectStore(ctx, o.Bucket)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: object store %s: %w", o.Bucket, err)
		}
		return &JetStreamStore{bucket: o.Bucket, obs: obs, stream: stream, maxBytes: stream.CachedInfo().Config.MaxBytes}, nil
	}
	create := func(ctx context.Context) (jetstream.ObjectStore, error) {
		// From the leader on a cluster: a checkpoint read back from a
		// follower not yet caught up would look damaged.
		return jsretry.LeaderObjectStore(ctx, js, cfg)
	}
	obs, err := create(ctx) // retried while the cluster does not answer
	for err != nil && cfg.MaxBytes/2 >= minMaxBytes && (isCode(err, errCodeStorageResources) || jsretry.NoStorage(err)) {
		cfg.MaxBytes /= 2
		obs, err = create(ctx)
	}
	if err == nil {
		err = jsretry.Ready(ctx, js, "OBJ_"+cfg.Bucket, o.Replicas)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: object store %s (max bytes %d): %w", o.Bucket, cfg.MaxBytes, err)
	}
	stream, err := js.Stream(ctx, "OBJ_"+o.Bucket)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: object store %s: its stream: %w", o.Bucket, err)
	}
	return &JetStreamStore{bucket: o.Bucket, obs: obs, stream: stream, maxBytes: cfg.MaxBytes}, nil
}

func isCode(err error, code jetstream.ErrorCode) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && api.ErrorCode == code
}

// MaxBytes is the bucket's cap (0: none): JetStreamOptions.MaxBytes, or
// less if the server could not reserve it.
func (s *JetStreamStore) MaxBytes() int64 { return s.maxBytes }

// ObjectStore returns the underlying object store (administration, tests).
func (s *JetStreamStore) ObjectStore() jetstream.ObjectStore { return s.obs }

func snapName(topology string, id uint64, task uint32) string {
	return fmt.Sprintf("%s/%020d/%d", topology, id, task)
}

func globalName(topology string) string { return topology + "/" + markerName }

func markerObject(topology string, id uint64) string {
	return fmt.Sprintf("%s/%020d/%s", topology, id, markerName)
}

func objNotFound(err error) bool {
	return errors.Is(err, jetstream.ErrObjectNotFound) || errors.Is(err, jetstream.ErrKeyNotFound)
}

// Save implements Store.
func (s *JetStreamStore) Save(ctx context.Context, topology string, id uint64, task uint32, data []byte) error {
	if err := checkKey(topology, id, task); err != nil {
		return err
	}
	name := snapName(topology, id, task)
	info, err := s.obs.PutBytes(ctx, name, seal(kindSnap, topology, id, task, data))
	if err == nil {
		// Put can succeed with its chunks not what it sent: chunks
		// published while a store fault made the server drop writes
		// without a reply, or one stored twice and another lost around a
		// JetStream restart (the count then matches; the bytes do not).
		// A checkpoint is not reported saved unless it reads back whole.
		if _, verr := s.readChunks(ctx, info); verr != nil {
			// Unless a save of the same name replaced it meanwhile (Put
			// purges the replaced object's chunks).
			if cur, gerr := s.obs.GetInfo(ctx, name); gerr != nil || cur.NUID == info.NUID {
				err = fmt.Errorf("reading it back: %w (a store fault while saving)", verr)
			}
		}
	}
	if err != nil {
		err = fmt.Errorf("%s: save to object %s/%s: %w", where(topology, id, task), s.bucket, name, err)
		if rerr := s.dropBroken(context.WithoutCancel(ctx), name); rerr != nil {
			err = fmt.Errorf("%w (and removing the partial object: %w)", err, rerr)
		}
		return err
	}
	return nil
}

// dropBroken removes object name (its metadata, then what chunks it has)
// if its chunks do not read back whole. nats.go publishes an object's chunks and then its metadata
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
	switch _, err := s.readChunks(ctx, info); {
	case err == nil:
		return nil
	case !errors.Is(err, ErrCorrupt):
		return err
	}
	if err := s.stream.Purge(ctx, jetstream.WithPurgeSubject(s.metaSubject(name))); err != nil {
		return err
	}
	return s.stream.Purge(ctx, jetstream.WithPurgeSubject("$O."+s.bucket+".C."+info.NUID))
}

// get reads object name whole; see readChunks.
func (s *JetStreamStore) get(ctx context.Context, name string) ([]byte, error) {
	info, err := s.obs.GetInfo(ctx, name)
	if err != nil {
		return nil, err
	}
	return s.readChunks(ctx, info)
}

// readChunks reads an object's chunks with direct gets (objread.Read); a
// damaged object is ErrCorrupt.
func (s *JetStreamStore) readChunks(ctx context.Context, info *jetstream.ObjectInfo) ([]byte, error) {
	b, err := objread.Read(ctx, s.stream, s.bucket, info)
	if errors.Is(err, objread.ErrDamaged) {
		err = fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return b, err
}

// checkChunks compares the chunks of an object in the stream with its
// metadata.
func (s *JetStreamStore) checkChunks(ctx context.Context, info *jetstream.ObjectInfo) error {
	chunks := "$O." + s.bucket + ".C." + info.NUID
	si, err := s.stream.Info(ctx, jetstream.WithSubjectFilter(chunks))
	if err != nil {
		return fmt.Errorf("checking its chunks: %w", err)
	}
	if got := si.State.Subjects[chunks]; got != uint64(info.Chunks) {
		return fmt.Errorf("%w: %d of its %d chunks (%d bytes) are in stream %s", ErrCorrupt, got, info.Chunks, info.Size, si.Config.Name)
	}
	return nil
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
	b, err := s.get(ctx, name)
	switch {
	case objNotFound(err):
		return nil, fmt.Errorf("%s: no snapshot (object %s/%s): %w", where(topology, id, task), s.bucket, name, ErrNotFound)
	case errors.Is(err, ErrCorrupt):
		return nil, fmt.Errorf("%s: object %s/%s %w", where(topology, id, task), s.bucket, name, err)
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
	marker := seal(kindGlobal, topology, id, 0, nil)
	if _, err := s.obs.PutBytes(ctx, markerObject(topology, id), marker); err != nil {
		err = fmt.Errorf("checkpoint: topology %q: recording global checkpoint %d in %s: %w", topology, id, s.bucket, err)
		if rerr := s.dropBroken(context.WithoutCancel(ctx), markerObject(topology, id)); rerr != nil {
			err = fmt.Errorf("%w (and removing the partial object: %w)", err, rerr)
		}
		return err
	}
	if _, err := s.obs.PutBytes(ctx, globalName(topology), marker); err != nil {
		err = fmt.Errorf("checkpoint: topology %q: recording global checkpoint %d in %s: %w", topology, id, s.bucket, err)
		if rerr := s.deleteObject(context.WithoutCancel(ctx), markerObject(topology, id)); rerr != nil {
			err = fmt.Errorf("%w (and removing the marker of checkpoint %d: %w)", err, id, rerr)
		}
		if rerr := s.dropBroken(context.WithoutCancel(ctx), globalName(topology)); rerr != nil {
			err = fmt.Errorf("%w (and removing the partial object: %w)", err, rerr)
		}
		return err
	}
	return nil
}

// Globals implements Store.
func (s *JetStreamStore) Globals(ctx context.Context, topology string) ([]uint64, error) {
	if err := checkTopology(topology); err != nil {
		return nil, err
	}
	ckpts, err := s.snapshots(ctx, topology)
	if err != nil {
		return nil, err
	}
	var ids []uint64
	var bad []error
	for id, c := range ckpts {
		if !c.marker {
			continue
		}
		name := markerObject(topology, id)
		b, err := s.get(ctx, name)
		switch {
		case objNotFound(err):
			continue // deleted since the listing
		case err == nil:
			err = openMarker(b, topology, id)
			if err != nil {
				err = fmt.Errorf("%w: %w", ErrCorrupt, err)
			}
		}
		if errors.Is(err, ErrCorrupt) {
			bad = append(bad, fmt.Errorf("checkpoint: topology %q checkpoint %d: %s %s/%s %w", topology, id, globalLabel, s.bucket, name, err))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("checkpoint: topology %q checkpoint %d: %s %s/%s: %w", topology, id, globalLabel, s.bucket, name, err)
		}
		ids = append(ids, id)
	}
	last, err := s.Global(ctx, topology)
	return withLast(ids, last, err, bad)
}

// Global implements Store.
func (s *JetStreamStore) Global(ctx context.Context, topology string) (uint64, error) {
	if err := checkTopology(topology); err != nil {
		return 0, err
	}
	name := globalName(topology)
	b, err := s.get(ctx, name)
	switch {
	case objNotFound(err):
		return 0, nil
	case errors.Is(err, ErrCorrupt):
		return 0, fmt.Errorf("checkpoint: topology %q: %s %s/%s %w", topology, globalLabel, s.bucket, name, err)
	case err != nil:
		return 0, fmt.Errorf("checkpoint: topology %q: global checkpoint: %w", topology, err)
	}
	id, err := openGlobal(b, topology)
	if err != nil {
		return 0, fmt.Errorf("checkpoint: topology %q: %s %s/%s %w: %w", topology, globalLabel, s.bucket, name, ErrCorrupt, err)
	}
	return id, nil
}

// ckptObjects are the objects of one checkpoint.
type ckptObjects struct {
	names  []string // every object: snapshots and marker
	snaps  int      // snapshots
	marker bool     // the checkpoint's global marker
}

// snapshots lists the topology's checkpoint objects by checkpoint id.
func (s *JetStreamStore) snapshots(ctx context.Context, topology string) (map[uint64]*ckptObjects, error) {
	infos, err := s.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: topology %q: listing %s: %w", topology, s.bucket, err)
	}
	out := map[uint64]*ckptObjects{}
	prefix := topology + "/"
	for _, in := range infos {
		rest, ok := strings.CutPrefix(in.Name, prefix)
		if !ok {
			continue
		}
		idStr, obj, ok := strings.Cut(rest, "/")
		if !ok {
			continue
		}
		id, ok := parseID(idStr)
		if !ok {
			continue
		}
		c := out[id]
		if c == nil {
			c = &ckptObjects{}
			out[id] = c
		}
		c.names = append(c.names, in.Name)
		if obj == markerName {
			c.marker = true
		} else {
			c.snaps++
		}
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
	for id, c := range snaps {
		if c.snaps > 0 {
			ids = append(ids, id)
		}
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
	for id, c := range snaps {
		if !match(id) {
			continue
		}
		for _, name := range c.names {
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
