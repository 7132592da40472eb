package statemgr

import (
	"github.com/ardea-dev/ardea/internal/jsretry"
	"github.com/ardea-dev/ardea/internal/objread"

	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/names"
)

// ArtifactInfo describes a stored artifact.
type ArtifactInfo struct {
	// SHA256 is the hex digest of the content and the artifact's key.
	SHA256 string
	// Name is the name given by the first PutArtifact of this content
	// (e.g. "count.wasm"); informational only.
	Name     string
	Size     uint64
	Modified time.Time
}

// artifactNameMeta is the object metadata key holding ArtifactInfo.Name.
const artifactNameMeta = "ardea-name"

// ArtifactDigest is the digest data is stored under as an artifact
// (PutArtifact): its SHA-256, lower-case hex.
func ArtifactDigest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// PutArtifact stores data in the artifact store under its SHA-256 and
// returns the digest (lower-case hex). It is idempotent: content that is
// already stored is not written again, whatever name it is put under.
// Values are chunked by the object store, so the size is limited only by
// the server's JetStream storage.
func (s *Store) PutArtifact(ctx context.Context, name string, data []byte) (string, error) {
	// Content-addressed: storing it again is harmless, so a replicated
	// store asks again while the cluster does not answer.
	return bounded(ctx, s.replicas, func(ctx context.Context) (string, error) { return s.putArtifact(ctx, name, data) })
}

func (s *Store) putArtifact(ctx context.Context, name string, data []byte) (string, error) {
	sha := ArtifactDigest(data)
	if _, err := s.artifacts.GetInfo(ctx, sha); err == nil {
		return sha, nil
	} else if !notFound(err) {
		return "", fmt.Errorf("statemgr: artifact %s (%s): %w", name, sha, err)
	}
	meta := jetstream.ObjectMeta{Name: sha, Metadata: map[string]string{artifactNameMeta: name}}
	if _, err := s.artifacts.Put(ctx, meta, bytes.NewReader(data)); err != nil {
		return "", fmt.Errorf("statemgr: storing artifact %s (%s): %w", name, sha, err)
	}
	s.log.Debug("artifact stored", "name", name, "sha256", sha, "bytes", len(data))
	return sha, nil
}

// objectTry bounds one read of a whole object (many chunks) on a cluster.
const objectTry = 10 * time.Second

// getObject reads object name of the kind's store whole. On a cluster
// (a replicated stream) it is asked again while JetStream does not answer
// (an election: a host started just as a partition heals), for patience
// at most.
func (s *Store) getObject(ctx context.Context, obs jetstream.ObjectStore, stream jetstream.Stream, kind, name string) ([]byte, error) {
	get := func(ctx context.Context) ([]byte, error) { return objread.Get(ctx, obs, stream, s.bucket(kind), name) }
	if info := stream.CachedInfo(); info == nil || info.Config.Replicas <= 1 {
		return get(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	return jsretry.RetryUnavailable(ctx, objectTry, get)
}

// GetArtifact returns the artifact with the given SHA-256 (hex) after
// checking that the content still has that digest.
func (s *Store) GetArtifact(ctx context.Context, sha string) ([]byte, error) {
	if err := checkSHA(sha); err != nil {
		return nil, err
	}
	data, err := s.getObject(ctx, s.artifacts, s.artifactsStream, kindArtifacts, sha)
	if notFound(err) {
		return nil, fmt.Errorf("statemgr: artifact %s: %w", sha, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("statemgr: reading artifact %s: %w", sha, err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != sha {
		return nil, fmt.Errorf("statemgr: artifact %s: content has digest %x", sha, sum)
	}
	return data, nil
}

// DeleteArtifact removes an artifact. Artifacts are shared by content, so
// the caller checks that no remaining topology's Modules refers to it.
// ErrNotFound if it is not stored.
func (s *Store) DeleteArtifact(ctx context.Context, sha string) error {
	if err := checkSHA(sha); err != nil {
		return err
	}
	if _, err := s.artifacts.GetInfo(ctx, sha); notFound(err) {
		return fmt.Errorf("statemgr: artifact %s: %w", sha, ErrNotFound)
	}
	if err := s.artifacts.Delete(ctx, sha); err != nil {
		return fmt.Errorf("statemgr: deleting artifact %s: %w", sha, err)
	}
	return nil
}

// ListArtifacts returns the stored artifacts sorted by digest.
func (s *Store) ListArtifacts(ctx context.Context) ([]ArtifactInfo, error) {
	infos, err := bounded(ctx, s.replicas, func(ctx context.Context) ([]*jetstream.ObjectInfo, error) { return s.artifacts.List(ctx) })
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("statemgr: listing artifacts: %w", err)
	}
	out := make([]ArtifactInfo, 0, len(infos))
	for _, in := range infos {
		out = append(out, ArtifactInfo{SHA256: in.Name, Name: in.Metadata[artifactNameMeta], Size: in.Size, Modified: in.ModTime})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SHA256 < out[j].SHA256 })
	return out, nil
}

func checkSHA(sha string) error {
	if len(sha) != 64 || strings.ToLower(sha) != sha {
		return fmt.Errorf("statemgr: artifact key %q is not a lower-case hex SHA-256: %w", sha, ErrInvalid)
	}
	if _, err := hex.DecodeString(sha); err != nil {
		return fmt.Errorf("statemgr: artifact key %q is not a lower-case hex SHA-256: %w", sha, ErrInvalid)
	}
	return nil
}

// handoffName is the object name of a key group's state blob.
func handoffName(topology, component string, epoch uint64, keyGroup int) string {
	return handoffPrefix(topology, component, epoch) + strconv.Itoa(keyGroup)
}

func handoffPrefix(topology, component string, epoch uint64) string {
	return topology + "/" + component + "/" + strconv.FormatUint(epoch, 10) + "/"
}

func checkHandoff(topology, component string, keyGroup int) error {
	if err := checkTopologyName(topology); err != nil {
		return err
	}
	if !names.Valid(component) {
		return fmt.Errorf("statemgr: topology %q: component name %s: %w", topology, nameProblem(component), ErrInvalid)
	}
	if keyGroup < 0 {
		return fmt.Errorf("statemgr: topology %q component %q: negative key group %d: %w", topology, component, keyGroup, ErrInvalid)
	}
	return nil
}

// PutKeyGroupState stores the host-side state of one key group of a
// component, written by the task that gives the key group up during the
// rescale identified by epoch and read by the task that takes it over. A
// second put for the same (topology, component, epoch, key group)
// replaces the first. The topology must exist. Values are chunked by the object store (128 KiB
// chunks), so the size is limited only by the server's JetStream storage.
func (s *Store) PutKeyGroupState(ctx context.Context, topology, component string, keyGroup int, epoch uint64, data []byte) error {
	if err := checkHandoff(topology, component, keyGroup); err != nil {
		return err
	}
	if err := s.mustExist(ctx, topology, "storing key group state"); err != nil {
		return err
	}
	name := handoffName(topology, component, epoch, keyGroup)
	if _, err := s.handoff.PutBytes(ctx, name, data); err != nil {
		return fmt.Errorf("statemgr: storing state of key group %d of %s/%s at epoch %d: %w", keyGroup, topology, component, epoch, err)
	}
	return nil
}

// GetKeyGroupState returns the state stored by PutKeyGroupState;
// ErrNotFound if there is none. The object store checks the content
// against the digest recorded at put.
func (s *Store) GetKeyGroupState(ctx context.Context, topology, component string, keyGroup int, epoch uint64) ([]byte, error) {
	if err := checkHandoff(topology, component, keyGroup); err != nil {
		return nil, err
	}
	data, err := s.getObject(ctx, s.handoff, s.handoffStream, kindHandoff, handoffName(topology, component, epoch, keyGroup))
	if notFound(err) {
		return nil, fmt.Errorf("statemgr: state of key group %d of %s/%s at epoch %d: %w", keyGroup, topology, component, epoch, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("statemgr: reading state of key group %d of %s/%s at epoch %d: %w", keyGroup, topology, component, epoch, err)
	}
	return data, nil
}

// DeleteKeyGroupStates removes every key group state of a component stored
// for epoch (once the rescale is complete). It scans the object names of the
// handoff store, whose size is the number of blobs in flight.
func (s *Store) DeleteKeyGroupStates(ctx context.Context, topology, component string, epoch uint64) error {
	if err := checkHandoff(topology, component, 0); err != nil {
		return err
	}
	return s.deleteHandoff(ctx, handoffPrefix(topology, component, epoch))
}

func (s *Store) deleteHandoff(ctx context.Context, prefix string) error {
	infos, err := bounded(ctx, s.replicas, func(ctx context.Context) ([]*jetstream.ObjectInfo, error) { return s.handoff.List(ctx) })
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("statemgr: listing state handoff blobs %s*: %w", prefix, err)
	}
	for _, in := range infos {
		if !strings.HasPrefix(in.Name, prefix) {
			continue
		}
		if err := s.handoff.Delete(ctx, in.Name); err != nil && !notFound(err) {
			return fmt.Errorf("statemgr: deleting state handoff blob %s: %w", in.Name, err)
		}
	}
	return nil
}
