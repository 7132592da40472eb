package objread_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/objread"
	"github.com/ardea-dev/ardea/internal/testutil/natstest"
)

// TestRead: an object of several chunks reads back whole; one whose chunk
// is gone, or whose metadata names other content, is ErrDamaged at once
// (the object store's own reader waits for a missing chunk until its
// context ends); a missing object is ErrObjectNotFound.
func TestRead(t *testing.T) {
	ctx := t.Context()
	nc := natstest.Connect(t, natstest.Start(t, natstest.Options{JetStream: true}))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: "b"})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(ctx, "OBJ_b")
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 40000) // 5 chunks of 128 KiB
	for _, name := range []string{"whole", "torn", "other"} {
		if _, err := obs.PutBytes(ctx, name, data); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := obs.PutBytes(ctx, "empty", nil); err != nil {
		t.Fatal(err)
	}
	got, err := objread.Get(ctx, obs, stream, "b", "whole")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("whole: %d bytes, %v", len(got), err)
	}
	if got, err := objread.Get(ctx, obs, stream, "b", "empty"); err != nil || len(got) != 0 {
		t.Fatalf("empty: %q, %v", got, err)
	}
	if _, err := objread.Get(ctx, obs, stream, "b", "missing"); !errors.Is(err, jetstream.ErrObjectNotFound) {
		t.Fatalf("missing: %v", err)
	}

	torn, err := obs.GetInfo(ctx, "torn")
	if err != nil {
		t.Fatal(err)
	}
	m, err := stream.GetMsg(ctx, 1, jetstream.WithGetMsgSubject("$O.b.C."+torn.NUID))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.DeleteMsg(ctx, m.Sequence); err != nil {
		t.Fatal(err)
	}
	if _, err := objread.Read(ctx, stream, "b", torn); !errors.Is(err, objread.ErrDamaged) {
		t.Fatalf("a chunk gone: %v, want ErrDamaged", err)
	}

	other, err := obs.GetInfo(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []func(i *jetstream.ObjectInfo){
		func(i *jetstream.ObjectInfo) { i.Size-- },
		func(i *jetstream.ObjectInfo) { i.Size++ },
		func(i *jetstream.ObjectInfo) { i.Digest = torn.Digest[:len(torn.Digest)-2] + "AA" },
	} {
		i := *other
		bad(&i)
		if _, err := objread.Read(ctx, stream, "b", &i); !errors.Is(err, objread.ErrDamaged) {
			t.Errorf("metadata %+v: %v, want ErrDamaged", i, err)
		}
	}
}

// lagging is a stream whose direct gets are answered by a replica that
// has not applied the first misses of them yet.
type lagging struct {
	replicas int
	misses   int // GetMsg calls answered "not found" before the chunk
	calls    int
	data     []byte
}

func (l *lagging) CachedInfo() *jetstream.StreamInfo {
	return &jetstream.StreamInfo{Config: jetstream.StreamConfig{Replicas: l.replicas}}
}

func (l *lagging) GetMsg(ctx context.Context, seq uint64, _ ...jetstream.GetMsgOpt) (*jetstream.RawStreamMsg, error) {
	l.calls++
	if l.calls <= l.misses {
		return nil, jetstream.ErrMsgNotFound
	}
	return &jetstream.RawStreamMsg{Sequence: seq, Data: l.data}, nil
}

// TestReadLaggingReplica: on a replicated stream a chunk a replica does
// not have yet is asked for again (any replica answers a direct get);
// one that stays missing is ErrDamaged; on a stream of one replica a
// missing chunk is ErrDamaged at once.
func TestReadLaggingReplica(t *testing.T) {
	data := []byte("a chunk")
	sum := sha256.Sum256(data)
	info := &jetstream.ObjectInfo{ObjectMeta: jetstream.ObjectMeta{Name: "o"}, NUID: "N", Chunks: 1, Size: uint64(len(data)),
		Digest: "SHA-256=" + base64.URLEncoding.EncodeToString(sum[:])}
	s := &lagging{replicas: 3, misses: 3, data: data}
	if got, err := objread.Read(t.Context(), s, "b", info); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("a lagging replica: %q, %v after %d gets", got, err, s.calls)
	}
	s = &lagging{replicas: 3, misses: 1 << 30, data: data}
	if _, err := objread.Read(t.Context(), s, "b", info); !errors.Is(err, objread.ErrDamaged) {
		t.Fatalf("a chunk no replica has: %v, want ErrDamaged", err)
	}
	s = &lagging{replicas: 1, misses: 1, data: data}
	if _, err := objread.Read(t.Context(), s, "b", info); !errors.Is(err, objread.ErrDamaged) || s.calls != 1 {
		t.Fatalf("one replica: %v after %d gets, want ErrDamaged after 1", err, s.calls)
	}
}
