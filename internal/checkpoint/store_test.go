package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/bus"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// sharedServer is one JetStream-enabled embedded server for the package's
// tests; each test uses a bucket of its own.
var sharedServer *bus.Server

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "checkpoint-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s, err := bus.StartServer(context.Background(), bus.ServerOptions{Port: -1, JetStream: true, StoreDir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sharedServer = s
	code := m.Run()
	s.Shutdown()
	os.RemoveAll(dir)
	os.Exit(code)
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var bucketSeq atomic.Int64

func jsConn(t testing.TB) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(sharedServer.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func newJetStreamStore(t testing.TB, o JetStreamOptions) *JetStreamStore {
	t.Helper()
	o.Bucket = fmt.Sprintf("ckpt_test_%d", bucketSeq.Add(1))
	s, err := NewJetStreamStore(ctxT(t), jsConn(t), o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// storeUnderTest is a Store plus a way to overwrite what it holds for a
// snapshot (task > 0), the marker of global checkpoint id (task 0) or the
// topology's global marker (id and task 0) with raw bytes.
type storeUnderTest struct {
	Store
	raw func(t *testing.T, topology string, id uint64, task uint32, b []byte)
}

var implementations = map[string]func(t *testing.T) storeUnderTest{
	"dir": func(t *testing.T) storeUnderTest {
		s, err := NewDirStore(filepath.Join(t.TempDir(), "ckpt"))
		if err != nil {
			t.Fatal(err)
		}
		return storeUnderTest{s, func(t *testing.T, topology string, id uint64, task uint32, b []byte) {
			path := s.globalPath(topology)
			if task != 0 {
				path = s.snapPath(topology, id, task)
			} else if id != 0 {
				path = s.markerPath(topology, id)
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}}
	},
	"jetstream": func(t *testing.T) storeUnderTest {
		s := newJetStreamStore(t, JetStreamOptions{})
		return storeUnderTest{s, func(t *testing.T, topology string, id uint64, task uint32, b []byte) {
			name := globalName(topology)
			if task != 0 {
				name = snapName(topology, id, task)
			} else if id != 0 {
				name = markerObject(topology, id)
			}
			if _, err := s.obs.PutBytes(ctxT(t), name, b); err != nil {
				t.Fatal(err)
			}
		}}
	},
}

// TestStoreConformance runs the same behaviour checks against every Store.
func TestStoreConformance(t *testing.T) {
	for name, mk := range implementations {
		t.Run(name, func(t *testing.T) {
			for _, c := range conformance {
				t.Run(c.name, func(t *testing.T) { c.run(t, mk(t)) })
			}
		})
	}
}

func mustSave(t *testing.T, s Store, topology string, id uint64, task uint32, data []byte) {
	t.Helper()
	if err := s.Save(ctxT(t), topology, id, task, data); err != nil {
		t.Fatal(err)
	}
}

func mustLoad(t *testing.T, s Store, topology string, id uint64, task uint32, want []byte) {
	t.Helper()
	got, err := s.Load(ctxT(t), topology, id, task)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("load %s/%d/%d: %d bytes, want %d", topology, id, task, len(got), len(want))
	}
}

func wantErr(t *testing.T, err, target error, parts ...string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want %v", err, target)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not mention %q", err, p)
		}
	}
}

func ids(t *testing.T, s Store, topology string) []uint64 {
	t.Helper()
	got, err := s.Checkpoints(ctxT(t), topology)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

var conformance = []struct {
	name string
	run  func(t *testing.T, s storeUnderTest)
}{
	{"save and load", func(t *testing.T, s storeUnderTest) {
		big := bytes.Repeat([]byte("0123456789abcdef"), 300<<10/16) // spans object store chunks
		mustSave(t, s, "wc", 1, 1, nil)
		mustSave(t, s, "wc", 1, 2, []byte("state of task 2"))
		mustSave(t, s, "wc", 1, 3, big)
		mustSave(t, s, "other", 1, 2, []byte("other topology"))
		mustLoad(t, s, "wc", 1, 1, nil)
		mustLoad(t, s, "wc", 1, 2, []byte("state of task 2"))
		mustLoad(t, s, "wc", 1, 3, big)
		mustLoad(t, s, "other", 1, 2, []byte("other topology"))
		mustSave(t, s, "wc", 1, 2, []byte("replaced"))
		mustLoad(t, s, "wc", 1, 2, []byte("replaced"))
	}},
	{"missing snapshot", func(t *testing.T, s storeUnderTest) {
		_, err := s.Load(ctxT(t), "wc", 9, 3)
		wantErr(t, err, ErrNotFound, `topology "wc" checkpoint 9 task 3`)
		mustSave(t, s, "wc", 9, 2, []byte("x"))
		_, err = s.Load(ctxT(t), "wc", 9, 3)
		wantErr(t, err, ErrNotFound, `topology "wc" checkpoint 9 task 3`)
	}},
	{"corrupt snapshot", func(t *testing.T, s storeUnderTest) {
		good := seal(kindSnap, "wc", 4, 3, []byte("hello state"))
		flip := bytes.Clone(good)
		flip[len(flip)-1] ^= 1
		hdr := bytes.Clone(good)
		hdr[9] ^= 1 // the id, so the CRC fails
		cases := map[string][]byte{
			"empty":          {},
			"garbage":        []byte("not an envelope at all, but long enough for a header"),
			"flipped bit":    flip,
			"header changed": hdr,
			"truncated":      good[:len(good)-3],
			"extended":       append(bytes.Clone(good), 0),
			"other task":     seal(kindSnap, "wc", 4, 2, []byte("hello state")),
			"other id":       seal(kindSnap, "wc", 5, 3, []byte("hello state")),
			"other topology": seal(kindSnap, "wd", 4, 3, []byte("hello state")),
			"global marker":  seal(kindGlobal, "wc", 4, 0, nil),
		}
		for name, raw := range cases {
			s.raw(t, "wc", 4, 3, raw)
			_, err := s.Load(ctxT(t), "wc", 4, 3)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `topology "wc" checkpoint 4 task 3`) {
				t.Fatalf("%s: error %v, want ErrCorrupt naming the snapshot", name, err)
			}
		}
		s.raw(t, "wc", 4, 3, good)
		mustLoad(t, s, "wc", 4, 3, []byte("hello state"))
	}},
	{"global checkpoint", func(t *testing.T, s storeUnderTest) {
		ctx := ctxT(t)
		if g, err := s.Global(ctx, "wc"); err != nil || g != 0 {
			t.Fatalf("fresh global %d %v", g, err)
		}
		for _, step := range []struct {
			id   uint64
			err  error
			want uint64
		}{{3, nil, 3}, {2, ErrInvalid, 3}, {3, nil, 3}, {5, nil, 5}, {0, ErrInvalid, 5}} {
			err := s.SetGlobal(ctx, "wc", step.id)
			if !errors.Is(err, step.err) || (step.err == nil && err != nil) {
				t.Fatalf("SetGlobal(%d): %v, want %v", step.id, err, step.err)
			}
			if g, err := s.Global(ctx, "wc"); err != nil || g != step.want {
				t.Fatalf("after SetGlobal(%d): %d %v, want %d", step.id, g, err, step.want)
			}
		}
		if g, err := s.Global(ctx, "other"); err != nil || g != 0 {
			t.Fatalf("other topology's global %d %v", g, err)
		}
		s.raw(t, "wc", 0, 0, []byte("damaged"))
		_, err := s.Global(ctx, "wc")
		wantErr(t, err, ErrCorrupt, `topology "wc"`, "global")
		s.raw(t, "wc", 0, 0, seal(kindGlobal, "other", 7, 0, nil))
		_, err = s.Global(ctx, "wc")
		wantErr(t, err, ErrCorrupt, `topology "other"`)
		if err := s.SetGlobal(ctx, "wc", 6); err != nil {
			t.Fatalf("SetGlobal over a corrupt marker: %v", err)
		}
		if g, err := s.Global(ctx, "wc"); err != nil || g != 6 {
			t.Fatalf("global %d %v", g, err)
		}
	}},
	{"list and delete", func(t *testing.T, s storeUnderTest) {
		ctx := ctxT(t)
		if got := ids(t, s, "wc"); len(got) != 0 {
			t.Fatalf("fresh checkpoints %v", got)
		}
		for id := uint64(1); id <= 5; id++ {
			mustSave(t, s, "wc", id, 1, []byte{byte(id)})
			mustSave(t, s, "wc", id, 2, []byte{byte(id)})
		}
		mustSave(t, s, "other", 1, 1, nil)
		if got := ids(t, s, "wc"); !slices.Equal(got, []uint64{1, 2, 3, 4, 5}) {
			t.Fatalf("checkpoints %v", got)
		}
		wantErr(t, s.DeleteBefore(ctx, "wc", 3), ErrInvalid, "newer than the last global 0")
		if err := s.SetGlobal(ctx, "wc", 3); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteBefore(ctx, "wc", 3); err != nil {
			t.Fatal(err)
		}
		if got := ids(t, s, "wc"); !slices.Equal(got, []uint64{3, 4, 5}) {
			t.Fatalf("after DeleteBefore(3): %v", got)
		}
		_, err := s.Load(ctx, "wc", 2, 1)
		wantErr(t, err, ErrNotFound)
		wantErr(t, s.Delete(ctx, "wc", 3), ErrInvalid, "last global")
		wantErr(t, s.DeleteBefore(ctx, "wc", 4), ErrInvalid)
		if err := s.Delete(ctx, "wc", 5); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, "wc", 5); err != nil {
			t.Fatalf("deleting a deleted checkpoint: %v", err)
		}
		if got := ids(t, s, "wc"); !slices.Equal(got, []uint64{3, 4}) {
			t.Fatalf("after Delete(5): %v", got)
		}
		mustLoad(t, s, "wc", 3, 2, []byte{3})
		mustSave(t, s, "wc", 5, 1, []byte("again")) // a deleted id can be written again
		mustLoad(t, s, "wc", 5, 1, []byte("again"))
		if got := ids(t, s, "other"); !slices.Equal(got, []uint64{1}) {
			t.Fatalf("other topology: %v", got)
		}
	}},
	{"retained globals", func(t *testing.T, s storeUnderTest) {
		ctx := ctxT(t)
		globals := func(want ...uint64) {
			t.Helper()
			got, err := s.Globals(ctx, "wc")
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("globals %v %v, want %v", got, err, want)
			}
		}
		globals()
		for id := uint64(1); id <= 6; id++ {
			mustSave(t, s, "wc", id, 1, []byte{byte(id)})
		}
		for _, id := range []uint64{1, 3, 5} {
			if err := s.SetGlobal(ctx, "wc", id); err != nil {
				t.Fatal(err)
			}
		}
		globals(5, 3, 1)
		if got := ids(t, s, "wc"); !slices.Equal(got, []uint64{1, 2, 3, 4, 5, 6}) {
			t.Fatalf("checkpoints %v", got)
		}
		if err := s.DeleteBefore(ctx, "wc", 3); err != nil {
			t.Fatal(err)
		}
		globals(5, 3)
		if err := s.Delete(ctx, "wc", 3); err != nil {
			t.Fatal(err)
		}
		globals(5)
		if err := s.SetGlobal(ctx, "wc", 6); err != nil {
			t.Fatal(err)
		}
		globals(6, 5)
		if got, err := s.Globals(ctx, "other"); err != nil || len(got) != 0 {
			t.Fatalf("other topology: %v %v", got, err)
		}
		// A damaged marker: the intact ones, and an error naming it.
		s.raw(t, "wc", 5, 0, seal(kindGlobal, "wc", 4, 0, nil))
		got, err := s.Globals(ctx, "wc")
		wantErr(t, err, ErrCorrupt, `topology "wc" checkpoint 5`, "marker of checkpoint 4")
		if !slices.Equal(got, []uint64{6}) {
			t.Fatalf("globals with a damaged marker: %v", got)
		}
		// A damaged topology marker: the checkpoints' own markers remain.
		s.raw(t, "wc", 5, 0, seal(kindGlobal, "wc", 5, 0, nil))
		s.raw(t, "wc", 0, 0, []byte("damaged"))
		got, err = s.Globals(ctx, "wc")
		wantErr(t, err, ErrCorrupt, `topology "wc"`, "global")
		if !slices.Equal(got, []uint64{6, 5}) {
			t.Fatalf("globals with a damaged topology marker: %v", got)
		}
	}},
	{"invalid arguments", func(t *testing.T, s storeUnderTest) {
		ctx := ctxT(t)
		for _, topo := range []string{"", "a/b", "a.b", "a b", strings.Repeat("x", 129)} {
			wantErr(t, s.Save(ctx, topo, 1, 1, nil), ErrInvalid)
			_, err := s.Load(ctx, topo, 1, 1)
			wantErr(t, err, ErrInvalid)
			wantErr(t, s.SetGlobal(ctx, topo, 1), ErrInvalid)
			_, err = s.Global(ctx, topo)
			wantErr(t, err, ErrInvalid)
			_, err = s.Checkpoints(ctx, topo)
			wantErr(t, err, ErrInvalid)
			_, err = s.Globals(ctx, topo)
			wantErr(t, err, ErrInvalid)
		}
		wantErr(t, s.Save(ctx, "wc", 0, 1, nil), ErrInvalid, "checkpoint 0")
		wantErr(t, s.Save(ctx, "wc", 1, 0, nil), ErrInvalid, "task 0")
		_, err := s.Load(ctx, "wc", 0, 1)
		wantErr(t, err, ErrInvalid)
		wantErr(t, s.Delete(ctx, "wc", 0), ErrInvalid)
	}},
	{"concurrent use", func(t *testing.T, s storeUnderTest) {
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for task := uint32(1); task <= 8; task++ {
			wg.Go(func() {
				ctx := context.Background()
				for id := uint64(1); id <= 4; id++ {
					data := []byte(fmt.Sprintf("task %d checkpoint %d", task, id))
					if err := s.Save(ctx, "wc", id, task, data); err != nil {
						errs <- err
						return
					}
					// Everyone also writes the same key: one writer wins, whole.
					// (Loads of a key while it is being rewritten are not
					// part of the contract: see Store.Save.)
					if err := s.Save(ctx, "wc", id, 100, data); err != nil {
						errs <- err
						return
					}
					got, err := s.Load(ctx, "wc", id, task)
					if err == nil && !bytes.Equal(got, data) {
						err = fmt.Errorf("task %d checkpoint %d: read %q", task, id, got)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for id := uint64(1); id <= 4; id++ {
			got, err := s.Load(ctxT(t), "wc", id, 100)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(got, []byte("task ")) || !bytes.HasSuffix(got, []byte(fmt.Sprintf(" checkpoint %d", id))) {
				t.Fatalf("shared key of checkpoint %d holds %q", id, got)
			}
		}
	}},
}

// TestDirStoreLayout checks the documented layout and that no temporary
// file is left behind.
func TestDirStoreLayout(t *testing.T) {
	root := t.TempDir()
	s, err := NewDirStore(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	mustSave(t, s, "wc", 12, 7, []byte("x"))
	mustSave(t, s, "wc", 12, 7, []byte("y"))
	if err := s.SetGlobal(ctx, "wc", 12); err != nil {
		t.Fatal(err)
	}
	var files []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	want := []string{"wc/00000000000000000012/7.snap", "wc/00000000000000000012/GLOBAL", "wc/GLOBAL"}
	if !slices.Equal(files, want) {
		t.Fatalf("files %v, want %v", files, want)
	}
}

// TestDirStoreWriteFailureKeepsPrevious: a checkpoint that cannot be
// written fails with an error naming it, and the previous global
// checkpoint stays readable.
func TestDirStoreWriteFailureKeepsPrevious(t *testing.T) {
	s, err := NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	mustSave(t, s, "wc", 1, 1, []byte("good"))
	if err := s.SetGlobal(ctx, "wc", 1); err != nil {
		t.Fatal(err)
	}
	// Storage "gone": a file where checkpoint 2's directory must go.
	if err := os.WriteFile(s.ckptDir("wc", 2), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err = s.Save(ctx, "wc", 2, 1, []byte("new"))
	if err == nil || !strings.Contains(err.Error(), `topology "wc" checkpoint 2 task 1`) {
		t.Fatalf("save into a blocked directory: %v", err)
	}
	mustLoad(t, s, "wc", 1, 1, []byte("good"))
	if g, err := s.Global(ctx, "wc"); err != nil || g != 1 {
		t.Fatalf("global %d %v", g, err)
	}
}

// TestJetStreamStoreFullKeepsPrevious: a bucket that is full refuses the
// new snapshot with an error naming it; the previous checkpoint stays
// readable.
func TestJetStreamStoreFullKeepsPrevious(t *testing.T) {
	s := newJetStreamStore(t, JetStreamOptions{MaxBytes: 256 << 10})
	ctx := ctxT(t)
	mustSave(t, s, "wc", 1, 1, bytes.Repeat([]byte{1}, 64<<10))
	if err := s.SetGlobal(ctx, "wc", 1); err != nil {
		t.Fatal(err)
	}
	err := s.Save(ctx, "wc", 2, 1, bytes.Repeat([]byte{2}, 512<<10))
	if err == nil || !strings.Contains(err.Error(), `topology "wc" checkpoint 2 task 1`) {
		t.Fatalf("save into a full bucket: %v", err)
	}
	mustLoad(t, s, "wc", 1, 1, bytes.Repeat([]byte{1}, 64<<10))
	if g, err := s.Global(ctx, "wc"); err != nil || g != 1 {
		t.Fatalf("global %d %v", g, err)
	}
	if _, err := s.Load(ctx, "wc", 2, 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the failed snapshot: %v, want ErrNotFound", err)
	}
}

// TestJetStreamDeleteLeavesNoTombstones: deleting checkpoints removes
// every message of their objects from the bucket's stream, so a topology
// checkpointing every second does not grow the stream by a tombstone per
// task per checkpoint.
func TestJetStreamDeleteLeavesNoTombstones(t *testing.T) {
	s := newJetStreamStore(t, JetStreamOptions{})
	ctx := ctxT(t)
	for id := uint64(1); id <= 20; id++ {
		for task := uint32(1); task <= 3; task++ {
			mustSave(t, s, "wc", id, task, []byte("small"))
		}
		if err := s.SetGlobal(ctx, "wc", id); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteBefore(ctx, "wc", id); err != nil {
			t.Fatal(err)
		}
	}
	info, err := s.stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Live: checkpoint 20's three snapshots and global marker, and the
	// topology's global marker, one chunk and one metadata message each.
	if info.State.Msgs != 10 {
		t.Fatalf("stream holds %d messages, want 10", info.State.Msgs)
	}
	if got := ids(t, s, "wc"); !slices.Equal(got, []uint64{20}) {
		t.Fatalf("checkpoints %v", got)
	}
}
