package bus

import (
	"bytes"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/jsretry"
	"github.com/ardea-dev/ardea/internal/objread"
)

// TestLeaderObjectStore: an object store opened with
// jsretry.LeaderObjectStore on a three-node cluster reads from its
// stream's leader (direct gets off), stays so when it is opened again
// with another size cap (which is applied), and an object written
// through one node reads back whole at once through each other node.
func TestLeaderObjectStore(t *testing.T) {
	srvs := startCluster(t, 3, "pw", testRouteCA(t))
	var js []jetstream.JetStream
	for _, s := range srvs {
		nc, err := nats.Connect(s.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		j, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		js = append(js, j)
	}
	cfg := jetstream.ObjectStoreConfig{Bucket: "ckpt", Replicas: 3, Storage: jetstream.FileStorage}
	obs, err := jsretry.LeaderObjectStore(t.Context(), js[0], cfg)
	if err != nil {
		t.Fatal(err)
	}
	direct := func(what string, j jetstream.JetStream, maxBytes int64) {
		t.Helper()
		s, err := j.Stream(t.Context(), "OBJ_ckpt")
		if err != nil {
			t.Fatal(err)
		}
		c := s.CachedInfo().Config
		if c.AllowDirect || c.MaxBytes != maxBytes {
			t.Errorf("%s: stream allows direct gets %v, max bytes %d; want false, %d", what, c.AllowDirect, c.MaxBytes, maxBytes)
		}
	}
	direct("created", js[0], -1)
	cfg.MaxBytes = 64 << 20
	if _, err := jsretry.LeaderObjectStore(t.Context(), js[1], cfg); err != nil {
		t.Fatal(err)
	}
	direct("opened again with a size cap", js[1], 64<<20)
	want := bytes.Repeat([]byte("checkpoint "), 40000) // several chunks
	if _, err := obs.PutBytes(t.Context(), "t/1/4", want); err != nil {
		t.Fatal(err)
	}
	for i, j := range js[1:] {
		o, err := jsretry.LeaderObjectStore(t.Context(), j, cfg)
		if err != nil {
			t.Fatal(err)
		}
		s, err := j.Stream(t.Context(), "OBJ_ckpt")
		if err != nil {
			t.Fatal(err)
		}
		got, err := objread.Get(t.Context(), o, s, "ckpt", "t/1/4")
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("node %d reads the object just written: %d bytes, %v", i+2, len(got), err)
		}
	}
}
