package coordinator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/scheduler/settings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/internal/plan"
)

// restorePlan is a plan of a spout (2 tasks) and a bolt (1 task), with a
// retired task 4 that has no snapshots.
func restorePlan() *plan.Plan {
	return &plan.Plan{Topology: "wc", Containers: 1, Settings: map[string]string{},
		Components: []plan.Component{
			{ID: 0, Name: "lines", Kind: "spout", Parallelism: 2, MaxKeyGroups: 4, Tasks: []uint32{1, 2}},
			{ID: 1, Name: "count", Kind: "bolt", Parallelism: 1, MaxKeyGroups: 8, Tasks: []uint32{3}},
		},
		Tasks: []plan.Task{{}, {ID: 1, Component: 0}, {ID: 2, Component: 0, Index: 1}, {ID: 3, Component: 1}, {ID: 4, Component: 1, Retired: true}},
	}
}

// snapshotOf is task's state at checkpoint id, large enough to span
// several object store chunks, with a pattern unique to (id, task).
func snapshotOf(p *plan.Plan, id uint64, task uint32) []byte {
	st := host.NewMemoryState(p.Components[p.Tasks[task].Component].MaxKeyGroups)
	st.Put([]byte("position"), []byte(fmt.Sprint(id)))
	st.Put([]byte("blob"), bytes.Repeat([]byte(fmt.Sprintf("ckpt-%d-task-%d;", id, task)), 300<<10/16))
	return st.Snapshot()
}

// takeCheckpoints runs checkpoints 1..n through a Coordinator: every task
// stores its snapshot and reports it, except that checkpoint failID (0:
// none) fails at task 1.
func takeCheckpoints(t *testing.T, coord *Coordinator, store checkpoint.Store, p *plan.Plan, n int, failID uint64) {
	t.Helper()
	ctx := context.Background()
	for range n {
		id, err := coord.Begin()
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range []uint32{1, 2, 3} {
			if id == failID && task == 1 {
				coord.Report(ctx, id, task, errors.New("disk full"))
				continue
			}
			if err := store.Save(ctx, "wc", id, task, snapshotOf(p, id, task)); err != nil {
				t.Fatal(err)
			}
			coord.Report(ctx, id, task, nil)
		}
	}
}

func newTestCoordinator(t *testing.T, store checkpoint.Store, p *plan.Plan) (*Coordinator, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	coord, err := NewCoordinator(context.Background(), store, "wc", p, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return coord, &logs
}

// jetStreamStore starts a JetStream server of its own under dir (so its
// files can be damaged) and opens a checkpoint store on it; stop shuts it
// down.
func jetStreamStore(t *testing.T, dir string) (store *checkpoint.JetStreamStore, stop func()) {
	t.Helper()
	srv, err := bus.StartServer(context.Background(), bus.ServerOptions{Port: -1, JetStream: true, StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	stop = func() { nc.Close(); srv.Shutdown() }
	t.Cleanup(stop)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	store, err = checkpoint.NewJetStreamStore(context.Background(), js, checkpoint.JetStreamOptions{Bucket: "restore"})
	if err != nil {
		t.Fatal(err)
	}
	return store, stop
}

// TestCheckpointRetention: the coordinator keeps exactly
// topology.checkpoint.retain global checkpoints (3 by default, 2 here) and
// deletes the failed checkpoints among them.
func TestCheckpointRetention(t *testing.T) {
	for _, retain := range []int{settings.DefaultRetain, 2} {
		t.Run(fmt.Sprint(retain), func(t *testing.T) {
			store, err := checkpoint.NewDirStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			p := restorePlan()
			if retain != settings.DefaultRetain {
				p.Settings["topology.checkpoint.retain"] = fmt.Sprint(retain)
			}
			coord, _ := newTestCoordinator(t, store, p)
			if coord.Retain() != retain {
				t.Fatalf("retain %d, want %d", coord.Retain(), retain)
			}
			takeCheckpoints(t, coord, store, p, 7, 6) // 6 fails
			ctx := context.Background()
			want := []uint64{7, 5, 4}[:retain]
			globals, err := store.Globals(ctx, "wc")
			if err != nil || !slices.Equal(globals, want) {
				t.Fatalf("globals %v %v, want %v", globals, err, want)
			}
			ids, err := store.Checkpoints(ctx, "wc")
			if slices.Reverse(want); err != nil || !slices.Equal(ids, want) {
				t.Fatalf("checkpoints %v %v, want %v (the failed 6 deleted)", ids, err, want)
			}
			if coord.Failed() != 1 {
				t.Errorf("failed %d, want 1", coord.Failed())
			}
		})
	}
}

// TestPruneHeld: while HoldPrune says no, every checkpoint is kept and
// the reason logged; the next global checkpoint once it says yes prunes
// all that is due.
func TestPruneHeld(t *testing.T) {
	store, err := checkpoint.NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := restorePlan()
	coord, logs := newTestCoordinator(t, store, p)
	held := errors.New("the store has 1 MiB free, below 16 MiB")
	coord.HoldPrune = func() error { return held }
	takeCheckpoints(t, coord, store, p, 5, 0)
	ctx := context.Background()
	ids, err := store.Checkpoints(ctx, "wc")
	if err != nil || !slices.Equal(ids, []uint64{1, 2, 3, 4, 5}) {
		t.Fatalf("checkpoints while held %v %v, want 1-5 kept", ids, err)
	}
	if !strings.Contains(logs.String(), "older checkpoints kept for now") || !strings.Contains(logs.String(), "below 16 MiB") {
		t.Errorf("the hold is not logged with its reason:\n%s", logs)
	}
	coord.HoldPrune = func() error { return nil }
	takeCheckpoints(t, coord, store, p, 1, 0)
	ids, err = store.Checkpoints(ctx, "wc")
	if err != nil || !slices.Equal(ids, []uint64{4, 5, 6}) {
		t.Fatalf("checkpoints once released %v %v, want 4 5 6", ids, err)
	}
}

// TestCoordinatorLastError: a failed save is counted and kept, with its
// cause and time, for the topology manager's status.
func TestCoordinatorLastError(t *testing.T) {
	store, err := checkpoint.NewDirStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := restorePlan()
	coord, logs := newTestCoordinator(t, store, p)
	if err, at := coord.LastError(); err != nil || !at.IsZero() {
		t.Fatalf("fresh last error %v %v", err, at)
	}
	before := time.Now()
	takeCheckpoints(t, coord, store, p, 2, 2)
	err, at := coord.LastError()
	if err == nil || !strings.Contains(err.Error(), "checkpoint 2: task 1: disk full") || at.Before(before) {
		t.Fatalf("last error %v at %v", err, at)
	}
	if coord.Failed() != 1 || coord.Global() != 1 {
		t.Fatalf("failed %d global %d", coord.Failed(), coord.Global())
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "disk full") {
		t.Errorf("not logged as an error:\n%s", logs)
	}
	p.Settings["topology.checkpoint.retain"] = "0"
	if _, err := NewCoordinator(context.Background(), store, "wc", p, slog.New(slog.DiscardHandler)); err == nil ||
		!strings.Contains(err.Error(), "topology.checkpoint.retain") {
		t.Fatalf("retain 0: %v", err)
	}
}

// damage is a way to damage task 2's snapshot of checkpoint 4.
type damage struct {
	name string
	do   func(t *testing.T)
	want error
}

// TestRestorableCheckpointFallsBack: with the newest global checkpoint's
// snapshot of one task damaged or gone (bytes flipped, file cut, deleted,
// in a DirStore's files and in the JetStream server's own files), the
// rollback restores the previous global checkpoint, and the skipped one is
// reported naming the task's snapshot.
func TestRestorableCheckpointFallsBack(t *testing.T) {
	p := restorePlan()
	newDir := func(t *testing.T) (checkpoint.Store, []damage) {
		root := t.TempDir()
		store, err := checkpoint.NewDirStore(root)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(root, "wc", fmt.Sprintf("%020d", 4), "2.snap")
		edit := func(f func([]byte) []byte) func(t *testing.T) {
			return func(t *testing.T) {
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, f(b), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		return store, []damage{
			{"byte flipped", edit(func(b []byte) []byte { b[len(b)/2] ^= 1; return b }), checkpoint.ErrCorrupt},
			{"cut", edit(func(b []byte) []byte { return b[:len(b)-100] }), checkpoint.ErrCorrupt},
			{"deleted", func(t *testing.T) {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			}, checkpoint.ErrNotFound},
		}
	}
	names := map[string][]string{
		"dir":       {"byte flipped", "cut", "deleted"},
		"jetstream": {"byte flipped in the server's files", "object deleted", "server's files cut"},
	}
	for _, impl := range []string{"dir", "jetstream"} {
		for i, name := range names[impl] {
			t.Run(impl+"/"+name, func(t *testing.T) {
				var store checkpoint.Store
				var d damage
				var reopen func() checkpoint.Store
				switch impl {
				case "dir":
					s, ds := newDir(t)
					store, d, reopen = s, ds[i], func() checkpoint.Store { return s }
				case "jetstream":
					dir := t.TempDir()
					s, stop := jetStreamStore(t, dir)
					store = s
					d = []damage{
						{"byte flipped in the server's files", func(t *testing.T) {
							stop()
							damageBlock(t, dir, "restore", []byte("ckpt-4-task-2;"), false)
						}, checkpoint.ErrCorrupt},
						{"object deleted", func(t *testing.T) {
							if err := s.ObjectStore().Delete(context.Background(), fmt.Sprintf("wc/%020d/2", 4)); err != nil {
								t.Fatal(err)
							}
						}, checkpoint.ErrNotFound},
						{"server's files cut", func(t *testing.T) {
							stop()
							damageBlock(t, dir, "restore", []byte("ckpt-4-task-2;"), true)
						}, nil},
					}[i]
					reopen = func() checkpoint.Store { s, _ := jetStreamStore(t, dir); return s }
				}
				coord, _ := newTestCoordinator(t, store, p)
				takeCheckpoints(t, coord, store, p, 4, 0)
				d.do(t)
				if impl == "jetstream" && i != 1 {
					store = reopen()
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				id, skipped, err := RestorableCheckpoint(ctx, store, "wc", p)
				if err != nil || id != 3 {
					t.Fatalf("%s: restorable %d %v (skipped %v), want 3", name, id, err, skipped)
				}
				if d.want == nil {
					// A cut of the server's files loses everything written after
					// it, checkpoint 4's global marker included: nothing says
					// checkpoint 4 was global any more.
					t.Logf("%s: skipped %v", name, skipped)
					return
				}
				if len(skipped) != 1 || !errors.Is(skipped[0], d.want) ||
					!strings.Contains(skipped[0].Error(), "global checkpoint 4") || !strings.Contains(skipped[0].Error(), "task 2") {
					t.Fatalf("%s: skipped %v, want one error wrapping %v naming checkpoint 4 task 2", name, skipped, d.want)
				}
				t.Logf("%s: %v", name, skipped[0])
			})
		}
	}
}

// damageBlock flips a byte of, or cuts at, the first occurrence of pattern
// in the message block of bucket's stream under a stopped server's store
// dir.
func damageBlock(t *testing.T, storeDir, bucket string, pattern []byte, cut bool) {
	t.Helper()
	blks, err := filepath.Glob(filepath.Join(storeDir, "jetstream", "*", "streams", "OBJ_"+bucket, "msgs", "*.blk"))
	if err != nil || len(blks) != 1 {
		t.Fatalf("message blocks %v %v, want one", blks, err)
	}
	b, err := os.ReadFile(blks[0])
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, pattern)
	if i < 0 {
		t.Fatalf("%q not in %s", pattern, blks[0])
	}
	if cut {
		b = b[:i]
	} else {
		b[i+1] ^= 0xff
	}
	if err := os.WriteFile(blks[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRestorableCheckpointNoneIntact: a series that never had a global
// checkpoint starts from the beginning (0, no error); one whose global
// checkpoints are all damaged is an error naming them, never 0.
func TestRestorableCheckpointNoneIntact(t *testing.T) {
	p := restorePlan()
	root := t.TempDir()
	store, err := checkpoint.NewDirStore(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if id, skipped, err := RestorableCheckpoint(ctx, store, "wc", p); id != 0 || skipped != nil || err != nil {
		t.Fatalf("fresh series: %d %v %v", id, skipped, err)
	}
	coord, _ := newTestCoordinator(t, store, p)
	takeCheckpoints(t, coord, store, p, 3, 0)
	// 3: a snapshot that checks out in the store but is not a state of the
	// task's component (other key groups); 2: task 3's snapshot gone; 1:
	// the global marker damaged.
	if err := store.Save(ctx, "wc", 3, 1, snapshotOf(p, 3, 3)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "wc", fmt.Sprintf("%020d", 2), "3.snap")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "wc", fmt.Sprintf("%020d", 1), "GLOBAL"), []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	id, skipped, err := RestorableCheckpoint(ctx, store, "wc", p)
	if err == nil || id != 0 {
		t.Fatalf("restorable %d %v, want an error", id, err)
	}
	for _, want := range []string{"global checkpoints [3 2]", "task 1", "key groups", "checkpoint 2", "task 3", "checkpoint 1", "marker"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q: %v", want, err)
		}
	}
	if len(skipped) != 3 || !errors.Is(err, host.ErrBadSnapshot) || !errors.Is(err, checkpoint.ErrNotFound) || !errors.Is(err, checkpoint.ErrCorrupt) {
		t.Errorf("skipped %v, error %v", skipped, err)
	}
}
