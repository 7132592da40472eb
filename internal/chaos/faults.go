//go:build linux

package chaos

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ardea-dev/ardea/internal/names"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// KillHost is kill -9 of a container (an `ardea host` process).
func KillHost(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("no process to kill (pid %d)", pid)
	}
	return syscall.Kill(pid, syscall.SIGKILL)
}

// StopHost is SIGSTOP of a container; ContHost is SIGCONT (a process that
// is gone meanwhile is not an error: the system may have killed it).
func StopHost(pid int) error { return syscall.Kill(pid, syscall.SIGSTOP) }

func ContHost(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// MountTmpfs mounts a tmpfs of size bytes on dir (created if needed).
// It needs CAP_SYS_ADMIN; the error says so when it is missing.
func MountTmpfs(dir string, size int64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.FormatInt(size, 10)); err != nil {
		return fmt.Errorf("mount -t tmpfs -o size=%d on %s: %w (needs root with CAP_SYS_ADMIN)", size, dir, err)
	}
	return nil
}

// Unmount detaches the mount on dir.
func Unmount(dir string) error { return syscall.Unmount(dir, syscall.MNT_DETACH) }

// FillDisk takes every free byte of the file system holding dir with one
// file, and returns how many bytes it took and the function that frees
// them again.
func FillDisk(dir string) (int64, func() error, error) {
	path := filepath.Join(dir, ".chaos-fill")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, nil, err
	}
	release := func() error { return os.Remove(path) }
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err == nil && fs.Bavail > 0 {
		_ = syscall.Fallocate(int(f.Fd()), 0, 0, int64(fs.Bavail)*int64(fs.Bsize))
	}
	// Whatever fallocate left (or could not do): write until the
	// file system says it is full.
	fi, _ := f.Stat()
	off := fi.Size()
	buf := make([]byte, 1<<20)
	for {
		n, err := f.WriteAt(buf, off)
		off += int64(n)
		if err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				f.Close()
				release()
				return 0, nil, fmt.Errorf("fill %s: %w", dir, err)
			}
			break
		}
	}
	f.Close()
	return off, release, nil
}

// FreeBytes is the free space of the file system holding dir.
func FreeBytes(dir string) int64 {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		return -1
	}
	return int64(fs.Bavail) * int64(fs.Bsize)
}

// Event is a control message of a topology seen on the daemon's NATS: a
// command from the topology manager to its hosts, or a host's heartbeat.
// The suite decodes them itself (only what it strikes on).
type Event struct {
	At   time.Time
	Kind string // "cmd" or "hb"
	Cmd  struct {
		Op         string   `json:"op"`
		Epoch      uint64   `json:"epoch"`
		Generation uint64   `json:"generation"`
		Components []string `json:"components"`
		Tasks      []uint32 `json:"tasks"`
	}
	HB struct {
		Container      int    `json:"container"`
		PID            int    `json:"pid"`
		PlanRevision   uint64 `json:"plan_revision"`
		State          string `json:"state"`
		HandoffDone    uint64 `json:"handoff_done"`
		SwitchPrepared uint64 `json:"switch_prepared"`
		SwitchAdopted  uint64 `json:"switch_adopted"`
		Swap           *struct {
			Epoch      uint64 `json:"epoch"`
			Targeted   int    `json:"targeted"`
			Swapped    int    `json:"swapped"`
			RolledBack int    `json:"rolled_back"`
		} `json:"swap"`
	}
}

// Watcher follows a topology's control subjects
// (ardea.<tenant>.<topology>.ctl.cmd and .ctl.hb) so that a fault can
// strike at the moment a phase begins.
type Watcher struct {
	nc      *nats.Conn
	mu      sync.Mutex
	waiters []*waiter
}

type waiter struct {
	pred func(Event) bool
	ch   chan Event
}

// Watch connects to the daemon's NATS and subscribes to the topology's
// commands and heartbeats.
func Watch(natsURL, tenant, topology string, opts ...nats.Option) (*Watcher, error) {
	nc, err := nats.Connect(natsURL, append(opts, nats.MaxReconnects(-1))...)
	if err != nil {
		return nil, err
	}
	w := &Watcher{nc: nc}
	base := names.Subject(tenant, topology, "ctl") + "."
	for kind, subj := range map[string]string{"cmd": base + "cmd", "hb": base + "hb"} {
		if _, err := nc.Subscribe(subj, func(m *nats.Msg) { w.deliver(kind, m.Data) }); err != nil {
			nc.Close()
			return nil, err
		}
	}
	if err := nc.Flush(); err != nil {
		nc.Close()
		return nil, err
	}
	return w, nil
}

func (w *Watcher) deliver(kind string, data []byte) {
	ev := Event{At: time.Now(), Kind: kind}
	var err error
	if kind == "cmd" {
		err = json.Unmarshal(data, &ev.Cmd)
	} else {
		err = json.Unmarshal(data, &ev.HB)
	}
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	kept := w.waiters[:0]
	for _, wt := range w.waiters {
		if wt.pred(ev) {
			wt.ch <- ev
			continue
		}
		kept = append(kept, wt)
	}
	w.waiters = kept
}

// Arm returns a channel that receives the first event after this call
// for which pred holds (pred runs on the subscription's goroutine).
func (w *Watcher) Arm(pred func(Event) bool) <-chan Event {
	ch := make(chan Event, 1)
	w.mu.Lock()
	w.waiters = append(w.waiters, &waiter{pred: pred, ch: ch})
	w.mu.Unlock()
	return ch
}

// Close disconnects.
func (w *Watcher) Close() { w.nc.Close() }

// CheckpointStore is the tenant's checkpoint object store
// (ardea_checkpoints_<tenant>) on the daemon's NATS, reached as any NATS
// client can: the suite damages snapshots in it.
type CheckpointStore struct {
	nc  *nats.Conn
	obs jetstream.ObjectStore
}

// OpenCheckpoints opens the store of tenant's checkpoints.
func OpenCheckpoints(ctx context.Context, natsURL, tenant string, opts ...nats.Option) (*CheckpointStore, error) {
	nc, err := nats.Connect(natsURL, opts...)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	obs, err := js.ObjectStore(ctx, "ardea_checkpoints_"+tenant)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &CheckpointStore{nc: nc, obs: obs}, nil
}

// Close disconnects.
func (s *CheckpointStore) Close() { s.nc.Close() }

// Snapshots lists the task snapshots of checkpoint id of topology's
// series (objects "<topology>-<series>/<id, 20 digits>/<task>"; not the
// checkpoint's global marker beside them).
func (s *CheckpointStore) Snapshots(ctx context.Context, topology string, id uint64) ([]string, error) {
	infos, err := s.obs.List(ctx)
	if err != nil {
		if errors.Is(err, jetstream.ErrNoObjectsFound) {
			return nil, nil
		}
		return nil, err
	}
	mid := fmt.Sprintf("/%020d/", id)
	var out []string
	for _, in := range infos {
		if strings.HasPrefix(in.Name, topology+"-") && strings.Contains(in.Name, mid) && !strings.HasSuffix(in.Name, "/GLOBAL") && !in.Deleted {
			out = append(out, in.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Checkpoints lists the checkpoint ids with snapshots in topology's
// series, oldest first.
func (s *CheckpointStore) Checkpoints(ctx context.Context, topology string) ([]uint64, error) {
	infos, err := s.obs.List(ctx)
	if err != nil {
		if errors.Is(err, jetstream.ErrNoObjectsFound) {
			return nil, nil
		}
		return nil, err
	}
	seen := map[uint64]bool{}
	for _, in := range infos {
		parts := strings.Split(in.Name, "/")
		if len(parts) != 3 || parts[2] == "GLOBAL" || !strings.HasPrefix(parts[0], topology+"-") || in.Deleted {
			continue
		}
		if id, err := strconv.ParseUint(parts[1], 10, 64); err == nil {
			seen[id] = true
		}
	}
	var ids []uint64
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// Corrupt overwrites each named object with bytes of the right length
// that are not a snapshot: the envelope's magic and checksum no longer
// hold (the object store's own digest does, as after a bad write).
func (s *CheckpointStore) Corrupt(ctx context.Context, names []string) error {
	for _, n := range names {
		info, err := s.obs.GetInfo(ctx, n)
		if err != nil {
			return fmt.Errorf("read %s: %w", n, err)
		}
		bad := bytes.Repeat([]byte{0xA5}, max(int(info.Size), 32))
		binary.LittleEndian.PutUint64(bad, uint64(time.Now().UnixNano()))
		if _, err := s.obs.PutBytes(ctx, n, bad); err != nil {
			return fmt.Errorf("overwrite %s: %w", n, err)
		}
	}
	return nil
}

// Delete removes each named object.
func (s *CheckpointStore) Delete(ctx context.Context, names []string) error {
	for _, n := range names {
		if err := s.obs.Delete(ctx, n); err != nil {
			return fmt.Errorf("delete %s: %w", n, err)
		}
	}
	return nil
}

// Stopped reports whether pid is stopped (SIGSTOP: state T).
func Stopped(pid int) bool {
	return procState(pid) == 'T'
}

func procState(pid int) byte {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0
	}
	return s[i+2]
}

// RSS is the resident memory of pid in bytes (0 if it is gone).
func RSS(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}
