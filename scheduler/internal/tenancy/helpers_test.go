package tenancy

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/quota"
	"github.com/ardea-dev/ardea/internal/testutil/natstest"
)

// fakeTopology is a topology manager as tenancy sees it (Topology): what
// it runs, whether its hosts run, and the rates it was told.
type fakeTopology struct {
	tenant, name string
	f            Footprint
	live         bool
	hosting      bool
	ctx          context.Context

	mu    sync.Mutex
	rates [][2]float64
}

func (t *fakeTopology) Tenant() string               { return t.tenant }
func (t *fakeTopology) Name() string                 { return t.name }
func (t *fakeTopology) Footprint() (Footprint, bool) { return t.f, t.live }
func (t *fakeTopology) Hosting() (int, bool)         { return t.f.Containers, t.hosting }
func (t *fakeTopology) Context() context.Context     { return t.ctx }
func (t *fakeTopology) Log() *slog.Logger            { return slog.New(slog.DiscardHandler) }
func (t *fakeTopology) SetRate(_ context.Context, tps, bps float64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rates = append(t.rates, [2]float64{tps, bps})
	return nil
}

// told lists the rates SetRate was told, in order.
func (t *fakeTopology) told() [][2]float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.rates)
}

// fakeTopologies are the daemon's registered managers (Topologies).
type fakeTopologies struct {
	mu   sync.Mutex
	tops []*fakeTopology
}

func (ts *fakeTopologies) Of(tenant string) []Topology {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var out []Topology
	for _, t := range ts.tops {
		if t.tenant == tenant {
			out = append(out, t)
		}
	}
	return out
}

func (ts *fakeTopologies) add(t *fakeTopology) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.tops = append(ts.tops, t)
}

// topology is a wasm spout and bolt, each of parallelism par: 2*par
// instances of 1024 pages (64 MiB) each.
func topology(t *testing.T, name string, par int) *ardea.Topology {
	t.Helper()
	b := ardea.NewBuilder(name)
	b.Spout("src", "src.wasm").Parallelism(par).Output("default", "line")
	b.Bolt("up", "up.wasm").Parallelism(par).Shuffle("src")
	top, err := b.BuildWith(ardea.ValidateOptions{SkipModuleCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	return top
}

// quotas is a quotas section: tenant's entry, each field's value as the
// deployment file writes it.
func quotas(t *testing.T, tenant string, set map[string]string) *quota.Config {
	t.Helper()
	var o quota.Overrides
	for k, v := range set {
		if err := o.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	return &quota.Config{Tenants: map[string]quota.Overrides{tenant: o}}
}

// newTenants makes o's tenants on an embedded NATS server without
// accounts (every space on the daemon's own connection, as in process)
// with quotas from o.Security.Quotas (nil: no quotas, as without an API).
func newTenants(t *testing.T, o Options) *Tenants {
	t.Helper()
	if o.DataDir == "" {
		o.DataDir = t.TempDir()
	}
	ts := New(o)
	srv := natstest.Start(t, natstest.Options{JetStream: true})
	nc, err := ts.Connect(srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ts.CloseSpaces()
		nc.Close()
	})
	if o.Security.Quotas != nil {
		ts.quotas = &quota.Resolver{Config: o.Security.Quotas}
	}
	return ts
}
