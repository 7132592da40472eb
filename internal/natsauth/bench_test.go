package natsauth

import (
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/internal/names"
)

// BenchmarkDataPath: one 64 KiB batch published and received on a
// topology's data subject, over a host credential (operator mode, the
// permissions checked by the server) and over no authentication.
func BenchmarkDataPath(b *testing.B) {
	run := func(b *testing.B, url string, opts ...nats.Option) {
		pub, err := nats.Connect(url, opts...)
		if err != nil {
			b.Fatal(err)
		}
		defer pub.Close()
		sub, err := nats.Connect(url, opts...)
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Close()
		subj := names.Subject("A", "wc", "data", "1")
		got := make(chan struct{}, 1)
		n := 0
		s, err := sub.Subscribe(subj, func(*nats.Msg) {
			n++
			if n == b.N {
				got <- struct{}{}
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Unsubscribe()
		if err := s.SetPendingLimits(-1, -1); err != nil {
			b.Fatal(err)
		}
		if err := sub.Flush(); err != nil {
			b.Fatal(err)
		}
		batch := make([]byte, 64<<10)
		b.SetBytes(int64(len(batch)))
		b.ResetTimer()
		for range b.N {
			if err := pub.Publish(subj, batch); err != nil {
				b.Fatal(err)
			}
		}
		<-got
	}
	b.Run("host-credential", func(b *testing.B) {
		m, err := Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		if err := m.AddTenant("A", Limits{}); err != nil {
			b.Fatal(err)
		}
		srv, err := bus.StartServer(b.Context(), bus.ServerOptions{Accounts: m.ServerAccounts()})
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Shutdown()
		c, err := m.HostCreds("A", "wc", TenantIO{})
		if err != nil {
			b.Fatal(err)
		}
		run(b, srv.ClientURL(), c.Options()...)
	})
	b.Run("no-auth", func(b *testing.B) {
		srv, err := bus.StartServer(b.Context(), bus.ServerOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Shutdown()
		run(b, srv.ClientURL())
	})
}
