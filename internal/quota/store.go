package quota

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/jsretry"

	"github.com/ardea-dev/ardea/internal/names"
)

// Bucket is the JetStream key-value bucket of the admin API's overrides,
// one key per tenant (its name), the value its Overrides as JSON. It
// belongs to the daemon's account: tenants' credentials cannot reach it.
const Bucket = "ardea_quotas"

// ErrInvalid is wrapped by the errors for a bad tenant name.
var ErrInvalid = errors.New("invalid")

// Store keeps the per-tenant overrides set through the admin API.
type Store struct {
	kv jetstream.KeyValue
}

// OpenStore opens (creating if needed) the overrides bucket, with
// replicas copies over a cluster's nodes (0 or 1: one).
func OpenStore(ctx context.Context, js jetstream.JetStream, replicas int) (*Store, error) {
	cfg := jetstream.KeyValueConfig{
		Bucket:      Bucket,
		Description: "Ardea quota overrides set through the admin API, key <tenant>",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	}
	kv, err := jsretry.Create(ctx, replicas, func(ctx context.Context) (jetstream.KeyValue, error) {
		return js.CreateOrUpdateKeyValue(ctx, cfg)
	})
	if err != nil {
		return nil, fmt.Errorf("quota: key-value bucket %s: %w", Bucket, err)
	}
	return &Store{kv: kv}, nil
}

func checkTenant(tenant string) error {
	if !names.Valid(tenant) {
		return fmt.Errorf("quota: tenant %q: want 1..%d letters, digits, '_' or '-': %w", tenant, names.MaxLen, ErrInvalid)
	}
	return nil
}

// Get returns tenant's overrides (none set: empty).
func (s *Store) Get(ctx context.Context, tenant string) (Overrides, error) {
	if err := checkTenant(tenant); err != nil {
		return Overrides{}, err
	}
	e, err := s.kv.Get(ctx, tenant)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Overrides{}, nil
	}
	if err != nil {
		return Overrides{}, fmt.Errorf("quota: tenant %s: read overrides: %w", tenant, err)
	}
	var o Overrides
	if err := json.Unmarshal(e.Value(), &o); err != nil {
		return Overrides{}, fmt.Errorf("quota: tenant %s: stored overrides: %w", tenant, err)
	}
	return o, nil
}

// Put replaces tenant's overrides; empty ones are deleted.
func (s *Store) Put(ctx context.Context, tenant string, o Overrides) error {
	if err := checkTenant(tenant); err != nil {
		return err
	}
	if o.Empty() {
		return s.Delete(ctx, tenant)
	}
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	if _, err := s.kv.Put(ctx, tenant, b); err != nil {
		return fmt.Errorf("quota: tenant %s: store overrides: %w", tenant, err)
	}
	return nil
}

// Delete removes tenant's overrides (when the tenant is deleted, or to
// fall back to the deployment file).
func (s *Store) Delete(ctx context.Context, tenant string) error {
	if err := checkTenant(tenant); err != nil {
		return err
	}
	if err := s.kv.Delete(ctx, tenant); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("quota: tenant %s: delete overrides: %w", tenant, err)
	}
	return nil
}

// Resolver gives each tenant's effective quotas: the built-in defaults
// (Defaults), under the deployment file's (Config), under the admin API's
// overrides (Store). Any may be empty or nil.
type Resolver struct {
	// Defaults are the built-in quotas of every tenant but Exempt
	// (Defaults(ThisMachine()) in the daemon).
	Defaults Overrides
	// Exempt is the tenant the built-in defaults do not apply to: the
	// daemon's default tenant, the operator's own (its admin token's).
	Exempt string
	Config *Config
	Store  *Store
}

// DefaultsFor are the built-in defaults that apply to tenant.
func (r *Resolver) DefaultsFor(tenant string) Overrides {
	if r == nil || tenant == r.Exempt {
		return Overrides{}
	}
	return r.Defaults
}

// For returns tenant's quotas: the built-in defaults, the file's default,
// its entry in the file, then its override from the admin API, each over
// the one before.
func (r *Resolver) For(ctx context.Context, tenant string) (Quotas, error) {
	var cfg *Config
	if r != nil {
		cfg = r.Config
	}
	q := cfg.Over(tenant, r.DefaultsFor(tenant).Over(Quotas{}))
	if r == nil || r.Store == nil {
		return q, nil
	}
	o, err := r.Store.Get(ctx, tenant)
	if err != nil {
		return Quotas{}, err
	}
	return o.Over(q), nil
}

// Check refuses add on top of tenant's usage if it passes one of the
// tenant's quotas (CheckAction under For's quotas); action names the
// request ("submit", "update").
func (r *Resolver) Check(ctx context.Context, tenant, action string, usage, add Usage) error {
	q, err := r.For(ctx, tenant)
	if err != nil {
		return err
	}
	return CheckAction(action, q, usage, add)
}
