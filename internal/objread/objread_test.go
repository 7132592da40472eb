package objread_test

import (
	"bytes"
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
