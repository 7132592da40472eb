//go:build linux

// Package jswedge wedges a JetStream server the way nats-server's file
// store deadlocks on a full disk (docs/reliability.md, "JetStream
// wedged"), for the tests of what Ardea does about it: an object store's
// delete purges the object's chunks; when the purge's tombstone cannot be
// written, the store rebuilds its state under the lock the purge holds,
// and every later request on that stream (and the server's health check)
// blocks for ever. It is reproducible with nats-server v2.15.2 and
// v2.15.3.
package jswedge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Tmpfs mounts a tmpfs of 96 MiB on a temporary directory of t, unmounted
// (detached: a wedged server keeps its files open) when t ends, or skips t
// when mounting is not permitted (root is needed).
func Tmpfs(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=96m"); err != nil {
		t.Skipf("a small file system is needed to fill it: mount -t tmpfs -o size=96m tmpfs %s: %v (run as root)", dir, err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// Wedge wedges the JetStream that nc reaches, whose store lives on the
// file system of fsDir (Tmpfs's): it puts 50 objects of 1 MiB in an
// object store named bucket, fills the file system, and deletes the
// objects one by one, each bounded by answer, until a delete gets no
// answer: the index of that delete. The filler file stays (free its
// space with the returned function). An error when every delete returned:
// the server no longer deadlocks this way.
func Wedge(ctx context.Context, nc *nats.Conn, fsDir, bucket string, answer time.Duration) (hung int, free func() error, err error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return -1, nil, err
	}
	obs, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: bucket, Storage: jetstream.FileStorage})
	if err != nil {
		return -1, nil, fmt.Errorf("jswedge: object store %s: %w", bucket, err)
	}
	const objects = 50
	blob := bytes.Repeat([]byte("ardea wedge "), (1<<20)/12)
	for i := range objects {
		if _, err := obs.PutBytes(ctx, fmt.Sprintf("o%d", i), blob); err != nil {
			return -1, nil, fmt.Errorf("jswedge: put object %d: %w", i, err)
		}
	}
	filler := filepath.Join(fsDir, "jswedge-filler")
	if err := fill(filler); err != nil {
		return -1, nil, err
	}
	free = func() error { return os.Remove(filler) }
	for i := range objects {
		dctx, cancel := context.WithTimeout(ctx, answer)
		err := obs.Delete(dctx, fmt.Sprintf("o%d", i))
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			return i, free, nil
		}
	}
	return -1, free, errors.New("jswedge: every delete on the full disk returned: nats-server no longer deadlocks this way (review docs/reliability.md, JetStream wedged)")
}

// fill writes path until its file system is full.
func fill(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	block := make([]byte, 64<<10)
	for {
		if _, err := f.Write(block); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return nil
			}
			return fmt.Errorf("jswedge: fill %s: %w", path, err)
		}
	}
}
