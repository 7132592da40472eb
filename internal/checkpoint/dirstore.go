package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
)

// DirStore is a Store in a local directory:
//
//	<root>/<topology>/GLOBAL                       the global marker
//	<root>/<topology>/<checkpoint id, 20 digits>/<task>.snap
//	<root>/<topology>/<checkpoint id, 20 digits>/GLOBAL   the checkpoint was global
//
// A write goes to a temporary file in the same directory, is fsynced,
// renamed over the target and the directory is fsynced, so a crash leaves
// the old blob or the new one. Ids are zero-padded so the directories sort
// by id. Safe for concurrent use within one process.
type DirStore struct {
	root string
	mu   sync.Mutex // serialises SetGlobal's read-check-write
}

var _ Store = (*DirStore)(nil)

// NewDirStore returns a DirStore rooted at root, creating it if needed.
func NewDirStore(root string) (*DirStore, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint: store directory: %w", err)
	}
	return &DirStore{root: root}, nil
}

// Root returns the store's directory.
func (s *DirStore) Root() string { return s.root }

func (s *DirStore) topoDir(topology string) string { return filepath.Join(s.root, topology) }

func (s *DirStore) ckptDir(topology string, id uint64) string {
	return filepath.Join(s.root, topology, fmt.Sprintf("%020d", id))
}

func (s *DirStore) snapPath(topology string, id uint64, task uint32) string {
	return filepath.Join(s.ckptDir(topology, id), strconv.FormatUint(uint64(task), 10)+".snap")
}

func (s *DirStore) globalPath(topology string) string {
	return filepath.Join(s.root, topology, markerName)
}

func (s *DirStore) markerPath(topology string, id uint64) string {
	return filepath.Join(s.ckptDir(topology, id), markerName)
}

// Save implements Store.
func (s *DirStore) Save(ctx context.Context, topology string, id uint64, task uint32, data []byte) error {
	if err := checkKey(topology, id, task); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: save: %w", where(topology, id, task), err)
	}
	if err := s.mkdirs(topology, id); err != nil {
		return fmt.Errorf("%s: save: %w", where(topology, id, task), err)
	}
	if err := writeAtomic(s.snapPath(topology, id, task), seal(kindSnap, topology, id, task, data)); err != nil {
		return fmt.Errorf("%s: save: %w", where(topology, id, task), err)
	}
	return nil
}

// mkdirs creates <root>/<topology>/<id>, fsyncing each parent that got a
// new entry.
func (s *DirStore) mkdirs(topology string, id uint64) error {
	for _, d := range []string{s.topoDir(topology), s.ckptDir(topology, id)} {
		err := os.Mkdir(d, 0o700)
		if errors.Is(err, fs.ErrExist) {
			if fi, serr := os.Stat(d); serr != nil || !fi.IsDir() {
				return fmt.Errorf("%s exists and is not a directory", d)
			}
			continue
		}
		if err != nil {
			return err
		}
		if err := syncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}

// writeAtomic writes data to path through a synced temporary file and a
// rename, then syncs the directory.
func writeAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Load implements Store.
func (s *DirStore) Load(ctx context.Context, topology string, id uint64, task uint32) ([]byte, error) {
	if err := checkKey(topology, id, task); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: load: %w", where(topology, id, task), err)
	}
	path := s.snapPath(topology, id, task)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no snapshot (%s): %w", where(topology, id, task), path, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: load: %w", where(topology, id, task), err)
	}
	data, err := unseal(b, kindSnap, topology, id, task)
	if err != nil {
		return nil, fmt.Errorf("%s: snapshot %s %w: %w", where(topology, id, task), path, ErrCorrupt, err)
	}
	return data, nil
}

// SetGlobal implements Store.
func (s *DirStore) SetGlobal(ctx context.Context, topology string, id uint64) error {
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
	// A corrupt marker is replaced: the new id is known good.
	if id < cur {
		return fmt.Errorf("checkpoint: topology %q: global checkpoint %d is older than the recorded %d: %w", topology, id, cur, ErrInvalid)
	}
	if id == cur {
		return nil
	}
	marker := seal(kindGlobal, topology, id, 0, nil)
	if err := s.mkdirs(topology, id); err != nil {
		return fmt.Errorf("checkpoint: topology %q: recording global checkpoint %d: %w", topology, id, err)
	}
	if err := writeAtomic(s.markerPath(topology, id), marker); err != nil {
		return fmt.Errorf("checkpoint: topology %q: recording global checkpoint %d: %w", topology, id, err)
	}
	if err := writeAtomic(s.globalPath(topology), marker); err != nil {
		os.Remove(s.markerPath(topology, id))
		return fmt.Errorf("checkpoint: topology %q: recording global checkpoint %d: %w", topology, id, err)
	}
	return nil
}

// Globals implements Store.
func (s *DirStore) Globals(ctx context.Context, topology string) ([]uint64, error) {
	if err := checkTopology(topology); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("checkpoint: topology %q: listing global checkpoints: %w", topology, err)
	}
	ents, err := os.ReadDir(s.topoDir(topology))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: topology %q: listing global checkpoints: %w", topology, err)
	}
	var ids []uint64
	var bad []error
	for _, e := range ents {
		id, ok := parseID(e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		path := s.markerPath(topology, id)
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("checkpoint: topology %q checkpoint %d: global marker: %w", topology, id, err)
		}
		if err := openMarker(b, topology, id); err != nil {
			bad = append(bad, fmt.Errorf("checkpoint: topology %q checkpoint %d: %s %s %w: %w", topology, id, globalLabel, path, ErrCorrupt, err))
			continue
		}
		ids = append(ids, id)
	}
	last, err := s.Global(ctx, topology)
	return withLast(ids, last, err, bad)
}

// Global implements Store.
func (s *DirStore) Global(ctx context.Context, topology string) (uint64, error) {
	if err := checkTopology(topology); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("checkpoint: topology %q: global checkpoint: %w", topology, err)
	}
	path := s.globalPath(topology)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("checkpoint: topology %q: global checkpoint: %w", topology, err)
	}
	id, err := openGlobal(b, topology)
	if err != nil {
		return 0, fmt.Errorf("checkpoint: topology %q: %s %s %w: %w", topology, globalLabel, path, ErrCorrupt, err)
	}
	return id, nil
}

// Checkpoints implements Store.
func (s *DirStore) Checkpoints(ctx context.Context, topology string) ([]uint64, error) {
	if err := checkTopology(topology); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("checkpoint: topology %q: listing checkpoints: %w", topology, err)
	}
	ents, err := os.ReadDir(s.topoDir(topology))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: topology %q: listing checkpoints: %w", topology, err)
	}
	var ids []uint64
	for _, e := range ents {
		id, ok := parseID(e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		snaps, err := os.ReadDir(filepath.Join(s.topoDir(topology), e.Name()))
		if err != nil {
			return nil, fmt.Errorf("checkpoint: topology %q: listing checkpoint %d: %w", topology, id, err)
		}
		if slices.ContainsFunc(snaps, func(f fs.DirEntry) bool { return filepath.Ext(f.Name()) == ".snap" }) {
			ids = append(ids, id)
		}
	}
	return ids, nil // ReadDir sorts by name, and names are zero-padded ids
}

// Delete implements Store.
func (s *DirStore) Delete(ctx context.Context, topology string, id uint64) error {
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
	if err := os.RemoveAll(s.ckptDir(topology, id)); err != nil {
		return fmt.Errorf("checkpoint: topology %q: deleting checkpoint %d: %w", topology, id, err)
	}
	return nil
}

// DeleteBefore implements Store.
func (s *DirStore) DeleteBefore(ctx context.Context, topology string, id uint64) error {
	g, err := s.Global(ctx, topology)
	if err != nil {
		return err
	}
	if id > g {
		return fmt.Errorf("checkpoint: topology %q: deleting checkpoints before %d, newer than the last global %d: %w", topology, id, g, ErrInvalid)
	}
	ents, err := os.ReadDir(s.topoDir(topology))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("checkpoint: topology %q: deleting checkpoints before %d: %w", topology, id, err)
	}
	for _, e := range ents {
		if len(e.Name()) != 20 {
			continue
		}
		old, err := strconv.ParseUint(e.Name(), 10, 64)
		if err != nil || old >= id {
			continue
		}
		if err := os.RemoveAll(filepath.Join(s.topoDir(topology), e.Name())); err != nil {
			return fmt.Errorf("checkpoint: topology %q: deleting checkpoint %d: %w", topology, old, err)
		}
	}
	return nil
}
