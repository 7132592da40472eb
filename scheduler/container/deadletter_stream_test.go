package container_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/natsauth"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/container"
	"github.com/ardea-dev/ardea/scheduler/settings"
)

// TestDeadLetterStreamQuota: a tenant's dead-letter stream counts against
// its quota jetstream_disk (its NATS account's disk limit). With a small
// quota the stream's bound follows it (an eighth of it), a bound over the
// quota cannot be reserved, the dead letters take the account's disk, a
// tuple's dead letter is written once (a rollback's replay is "already
// there", also once the stream is full), and a dead letter past the bound
// is refused with the stream and its bound named.
func TestDeadLetterStreamQuota(t *testing.T) {
	const disk = 256 << 10
	m, err := natsauth.Open(filepath.Join(t.TempDir(), "auth"))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AddTenant("acme", natsauth.Limits{DiskBytes: disk}); err != nil {
		t.Fatal(err)
	}
	srv, err := bus.StartServer(t.Context(), bus.ServerOptions{JetStream: true, StoreDir: t.TempDir(), HealInterval: -1, Accounts: m.ServerAccounts()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	m.Attach(srv.NATS())
	connect := func(c natsauth.Creds, err error) *nats.Conn {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(srv.ClientURL(), append(c.Options(), nats.NoReconnect())...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	js, err := jetstream.New(connect(m.DaemonCreds("acme")))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	bound := container.DeadLetterStreamMaxBytes(disk)
	if bound != disk/8 || container.DeadLetterStreamMaxBytes(0) != settings.MaxDeadLetterBytes ||
		container.DeadLetterStreamMaxBytes(1<<40) != settings.MaxDeadLetterBytes {
		t.Fatalf("bounds: %d of a %d-byte quota, %d unlimited, want an eighth and settings.MaxDeadLetterBytes", bound, disk, container.DeadLetterStreamMaxBytes(0))
	}
	if _, err := js.CreateStream(ctx, container.DeadLetterStreamConfig("acme", 2*disk)); err == nil {
		t.Fatalf("a dead-letter stream bound over the tenant's quota (%d > %d bytes) was made", 2*disk, disk)
	}
	st, err := js.CreateStream(ctx, container.DeadLetterStreamConfig("acme", bound))
	if err != nil {
		t.Fatal(err)
	}
	if c := st.CachedInfo().Config; c.MaxBytes != bound || c.Subjects[0] != "ardea.acme.*.dlq.>" || c.MaxMsgsPerSubject != 1 {
		t.Fatalf("the dead-letter stream: %+v", c)
	}

	host := connect(m.HostCreds("acme", "eo", natsauth.TenantIO{}))
	place := settings.DeadLetterPlace{Stream: names.DeadLetterStream, Subject: names.DeadLetterSubject("acme", "eo", "upper")}
	rec := func(i int) (string, []byte) {
		h := fmt.Sprintf("%016x", i)
		b, err := json.Marshal(container.BoltDeadLetter{Topology: "eo", Component: "upper", Hash: h, Error: "poison tuple",
			Tuple: "poison", Values: []byte(strings.Repeat("v", 1000))})
		if err != nil {
			t.Fatal(err)
		}
		return h, b
	}
	h0, r0 := rec(0)
	if written, err := container.PublishDeadLetter(ctx, host, place, h0, r0); !written || err != nil {
		t.Fatalf("the first dead letter: written %v, %v", written, err)
	}
	if written, err := container.PublishDeadLetter(ctx, host, place, h0, r0); written || err != nil {
		t.Fatalf("the same tuple's dead letter again (a rollback's replay): written %v, %v; want it already there", written, err)
	}
	testutil.Eventually(t, "the dead letter counts in acme's JetStream disk usage", func() bool {
		u, err := m.Usage("acme")
		return err == nil && u.DiskBytes > 0
	})

	var refused error
	n := 1
	for ; n < 2*int(bound)/len(r0) && refused == nil; n++ {
		h, r := rec(n)
		var written bool
		written, refused = container.PublishDeadLetter(ctx, host, place, h, r)
		if refused == nil && !written {
			t.Fatalf("dead letter %d: not written, no error", n)
		}
	}
	if refused == nil {
		t.Fatalf("%d dead letters of %d bytes fit a stream bounded at %d bytes", n, len(r0), bound)
	}
	t.Logf("dead letter %d refused: %v", n-1, refused)
	for _, want := range []string{names.DeadLetterStream, fmt.Sprintf("max_bytes %d", bound), "jetstream_disk"} {
		if !strings.Contains(refused.Error(), want) {
			t.Errorf("the refusal %q does not name %q", refused, want)
		}
	}
	if written, err := container.PublishDeadLetter(ctx, host, place, h0, r0); written || err != nil {
		t.Fatalf("a stored tuple's dead letter again, the stream full: written %v, %v; want it already there", written, err)
	}
	in, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if in.State.Bytes > uint64(bound) || in.State.Msgs != uint64(n-1) {
		t.Fatalf("the dead-letter stream holds %d messages, %d bytes; want %d within its bound %d", in.State.Msgs, in.State.Bytes, n-1, bound)
	}
}
