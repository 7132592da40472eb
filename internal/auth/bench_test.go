package auth

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/testutil/natstest"
)

// BenchmarkAuthenticate: what a token costs an API call, from the cache
// and from the bucket (an embedded NATS server in this process).
func BenchmarkAuthenticate(b *testing.B) {
	js, err := jetstream.New(natstest.Connect(b, natstest.Start(b, natstest.Options{JetStream: true})))
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		ttl  time.Duration
	}{{"cached", 0}, {"bucket", -1}} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := Open(b.Context(), js, Options{CacheTTL: bc.ttl, Bucket: "bench_" + bc.name})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.CreateTenant(b.Context(), "acme", "bench"); err != nil {
				b.Fatal(err)
			}
			_, tok, err := s.CreateToken(b.Context(), TokenSpec{Tenant: "acme", Scope: ScopeRead})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Authenticate(b.Context(), tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
