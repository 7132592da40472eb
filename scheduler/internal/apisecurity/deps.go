package apisecurity

import (
	"context"
	"log/slog"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/quota"
)

// What a Layer needs of the daemon, each as small as its uses: the daemon
// (scheduler/daemon/security.go) implements them by adapters over its
// tenants (scheduler/internal/tenancy), which this package never links.

// Tenants are the daemon's tenants as the API's security sees them.
type Tenants interface {
	// Default is the default tenant: the operator's, the admin token's.
	Default() string
	// InUse refuses the deletion of a tenant whose topologies the daemon
	// still runs (auth.Options.TenantInUse).
	InUse(ctx context.Context, tenant string) error
	// Deleted removes what the daemon holds for a tenant whose deletion
	// succeeded: its topology managers, its NATS account (its users are
	// disconnected), its CPU cgroup and its space. It acts in the
	// daemon's lifetime, not the request's.
	Deleted(tenant string)
}

// Quotas are the tenants' quotas, which the admin routes serve and set.
type Quotas interface {
	// Open opens the quotas' store (the built-in defaults for every
	// tenant but the default one, sized from the machine; the deployment
	// file's and the admin API's on top).
	Open(ctx context.Context, js jetstream.JetStream) error
	// Resolver gives a tenant's quotas; its store receives the PUTs.
	Resolver() *quota.Resolver
	// Usage is what tenant uses now.
	Usage(ctx context.Context, tenant string) (quota.Usage, error)
	// Accounts is whether the tenants have NATS accounts (not when the
	// containers run in process).
	Accounts() bool
	// LimitAccount applies tenant's JetStream quotas to its NATS account.
	LimitAccount(ctx context.Context, tenant string) error
	// Reshare computes tenant's bus rate shares again and tells its
	// running hosts.
	Reshare(ctx context.Context, tenant string)
}

// Settings are the deployment's API security settings (the API's part of
// scheduler/daemon.Security).
type Settings struct {
	// Hosts and Origins are further names and browser origins the API is
	// reached by (httpsec.Options).
	Hosts   []string
	Origins []string
	// TLSCert and TLSKey serve the API over TLS; SelfSigned generates (and
	// then reuses) a pair under the data dir instead.
	TLSCert, TLSKey string
	SelfSigned      bool
	// PublicMetrics makes GET /metrics public.
	PublicMetrics bool
	// Audit configures the audit log's retention.
	Audit audit.Options
	// APIRate bounds each tenant's API calls per second, APIBurst at once:
	// 0 takes httpsec.DefaultTenantRate and DefaultTenantBurst, a negative
	// rate turns the limit off.
	APIRate  float64
	APIBurst int
}

// Config makes a Layer (Open). Every field is required but Logger,
// Replicas, MaxStore and Shared.
type Config struct {
	// DataDir is the daemon's data dir: the admin token's file, the
	// self-signed certificate's.
	DataDir string
	// Listen is the API's address (the guard's own name for it).
	Listen string
	Logger *slog.Logger
	// Conn is the daemon's own NATS connection: the token store's bucket,
	// the audit log's streams, the quotas' store.
	Conn *nats.Conn
	// Shared: the daemon is a node of a cluster, whose nodes share one
	// admin token (auth.Store.BootstrapShared).
	Shared bool
	// Replicas of the buckets and streams over a cluster's nodes.
	Replicas int
	// MaxStore is the embedded JetStream's store size (0 or less: none
	// known); the audit log takes a thirty-second of it at most.
	MaxStore int64
	Settings Settings
	Tenants  Tenants
	Quotas   Quotas
}
