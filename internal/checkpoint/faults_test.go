package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/testutil/natstest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// syncBuf is a logger's output read while it is written.
type syncBuf = testutil.SyncBuffer

// mountTmpfs mounts a tmpfs of size under a temporary directory, or skips
// the test when mounting is not permitted.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("a small file system is needed to fill it: mount -t tmpfs -o size=%s tmpfs %s: %v (run as root)", size, dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fill writes a file in dir until the file system is full.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 64<<10)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return path
		}
	}
}

// TestJetStreamStoreHealsAfterDiskFull: with the server's file system full
// a Save fails (within its context) and the server's watchdog reports the
// fault; once space returns, saves succeed again without a restart and
// every checkpoint stored before, during and after is intact. The bucket's
// default cap, more than the small file system holds, is halved to what
// the server can reserve.
func TestJetStreamStoreHealsAfterDiskFull(t *testing.T) {
	dir := mountTmpfs(t, "256m")
	var logs syncBuf
	srv, err := bus.StartServer(context.Background(), bus.ServerOptions{Port: -1, JetStream: true, StoreDir: dir,
		Logger:       slog.New(slog.NewTextHandler(&logs, nil)),
		HealInterval: 50 * time.Millisecond, HealMinFree: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	s, err := NewJetStreamStore(ctx, js, JetStreamOptions{Bucket: "heal", MaxBytes: DefaultMaxBytes})
	if err != nil {
		t.Fatal(err)
	}
	// The server reserves at most 75% of the 256 MiB: 8 GiB halved to 128 MiB.
	if s.MaxBytes() != 128<<20 {
		t.Errorf("bucket cap %d, want %d", s.MaxBytes(), 128<<20)
	}
	state := bytes.Repeat([]byte("s"), 200<<10)
	mustSave(t, s, "wc", 1, 1, state)

	filler := fill(t, dir)
	save := func(id uint64) error {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return s.Save(sctx, "wc", id, 1, state)
	}
	start := time.Now()
	err = save(2)
	if err == nil {
		t.Fatal("save to a full file system: no error")
	}
	t.Logf("save on a full disk failed after %s: %v", time.Since(start).Round(time.Millisecond), err)
	testutil.EventuallyWithin(t, 10*time.Second, "the watchdog reports the fault", func() bool { f, _ := srv.JetStreamFault(); return f != nil })
	f, _ := srv.JetStreamFault()
	t.Logf("fault: %v", f)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	healStart := time.Now()
	id := uint64(3)
	testutil.EventuallyWithin(t, 30*time.Second, "saves succeed again after space returned", func() bool {
		if err := save(id); err != nil {
			id++
			return false
		}
		return true
	})
	t.Logf("healed %s after space returned (checkpoint %d stored)", time.Since(healStart).Round(time.Millisecond), id)
	mustLoad(t, s, "wc", 1, 1, state)
	mustLoad(t, s, "wc", id, 1, state)
	if f, _ := srv.JetStreamFault(); f != nil {
		testutil.EventuallyWithin(t, 10*time.Second, "the fault clears", func() bool { f, _ := srv.JetStreamFault(); return f == nil })
	}
	if srv.JetStreamRestarts() == 0 {
		t.Error("healed without a JetStream restart")
	}
	for _, want := range []string{"level=ERROR", "no space left on device"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}

// damageBlock changes the message block file of bucket's stream under a
// stopped server's store dir: flip a byte of at, or cut the file at at.
func damageBlock(t *testing.T, storeDir, bucket string, at func(b []byte) int, cut bool) {
	t.Helper()
	blks, err := filepath.Glob(filepath.Join(storeDir, "jetstream", "*", "streams", "OBJ_"+bucket, "msgs", "*.blk"))
	if err != nil || len(blks) != 1 {
		t.Fatalf("message blocks %v %v, want one", blks, err)
	}
	b, err := os.ReadFile(blks[0])
	if err != nil {
		t.Fatal(err)
	}
	i := at(b)
	if i < 0 || i >= len(b) {
		t.Fatalf("offset %d outside the %d-byte block", i, len(b))
	}
	if cut {
		b = b[:i]
	} else {
		b[i] ^= 0xff
	}
	if err := os.WriteFile(blks[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestJetStreamStoreDamagedFiles: bytes flipped in, or a cut of, the
// server's own files under its store dir make the snapshot they hit
// ErrCorrupt or ErrNotFound naming it, at once (never a reader waiting for
// a chunk until its context ends); the older snapshot stays readable.
func TestJetStreamStoreDamagedFiles(t *testing.T) {
	data := func(id uint64) []byte { return bytes.Repeat([]byte(fmt.Sprintf("ckpt-%d-", id)), 300<<10/7) }
	chunkOf2 := func(b []byte) int { return bytes.Index(b, []byte("ckpt-2-")) + 1000 }
	metaOf2 := func(b []byte) int { return bytes.LastIndex(b, []byte("wc/00000000000000000002/1")) + 3 }
	for _, c := range []struct {
		name string
		at   func([]byte) int
		cut  bool
		want error
	}{
		{"byte flipped in a chunk", chunkOf2, false, ErrCorrupt},
		{"byte flipped in the metadata", metaOf2, false, ErrNotFound},
		{"cut in a chunk", chunkOf2, true, ErrNotFound},
		{"cut in the metadata", metaOf2, true, ErrNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			open := func() (*bus.Server, *JetStreamStore) {
				srv := natstest.Start(t, natstest.Options{JetStream: true, StoreDir: dir})
				js, err := jetstream.New(natstest.Connect(t, srv))
				if err != nil {
					t.Fatal(err)
				}
				s, err := NewJetStreamStore(ctxT(t), js, JetStreamOptions{Bucket: "damaged"})
				if err != nil {
					t.Fatal(err)
				}
				return srv, s
			}
			srv, s := open()
			for id := uint64(1); id <= 2; id++ {
				mustSave(t, s, "wc", id, 1, data(id))
			}
			srv.Shutdown()
			damageBlock(t, dir, "damaged", c.at, c.cut)
			_, s = open()
			_, err := s.Load(ctxT(t), "wc", 2, 1)
			wantErr(t, err, c.want, `topology "wc" checkpoint 2 task 1`)
			t.Logf("%s: %v", c.name, err)
			mustLoad(t, s, "wc", 1, 1, data(1))
		})
	}
}
