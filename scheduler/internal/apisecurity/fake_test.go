package apisecurity

import (
	"context"
	"errors"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/quota"
)

// fakeTenants records the tenants the daemon is told are deleted.
type fakeTenants struct {
	mu      sync.Mutex
	deleted []string
}

func (*fakeTenants) Default() string                     { return "default" }
func (*fakeTenants) InUse(context.Context, string) error { return nil }
func (f *fakeTenants) Deleted(tenant string) {
	f.mu.Lock()
	f.deleted = append(f.deleted, tenant)
	f.mu.Unlock()
}
func (f *fakeTenants) got() []string { f.mu.Lock(); defer f.mu.Unlock(); return f.deleted }

var _ Tenants = (*fakeTenants)(nil)

// fakeQuotas records what the quotas' wrapper applies.
type fakeQuotas struct {
	accounts bool
	limitErr error
	limited  []string
	reshared []string
}

func (*fakeQuotas) Open(context.Context, jetstream.JetStream) error { return nil }
func (*fakeQuotas) Resolver() *quota.Resolver                       { return nil }
func (*fakeQuotas) Usage(context.Context, string) (quota.Usage, error) {
	return quota.Usage{}, nil
}
func (f *fakeQuotas) Accounts() bool { return f.accounts }
func (f *fakeQuotas) LimitAccount(_ context.Context, tenant string) error {
	f.limited = append(f.limited, tenant)
	return f.limitErr
}
func (f *fakeQuotas) Reshare(_ context.Context, tenant string) {
	f.reshared = append(f.reshared, tenant)
}

var _ Quotas = (*fakeQuotas)(nil)

// fakeKnown knows the tenants of its map; err, if set, is every lookup's.
type fakeKnown struct {
	tenants map[string]bool
	err     error
}

func (f fakeKnown) Tenant(_ context.Context, name string) (auth.Tenant, error) {
	if f.err != nil {
		return auth.Tenant{}, f.err
	}
	if !f.tenants[name] {
		return auth.Tenant{}, auth.ErrNotFound
	}
	return auth.Tenant{Name: name}, nil
}

var errStore = errors.New("bucket unavailable")
