package daemon

import (
	"context"
	"fmt"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/scheduler/container/process"
	"github.com/ardea-dev/ardea/scheduler/internal/manager"
	"github.com/ardea-dev/ardea/scheduler/internal/tenancy"

	"github.com/nats-io/nats.go/jetstream"
)

// The daemon makes the topology managers (scheduler/internal/manager) and is what
// they use: each narrow interface a manager declares is implemented here
// by one small adapter over the daemon and the topology's tenant space.

// newTM makes the manager of topology name in sp.
func (d *Daemon) newTM(sp *tenancy.Space, name string) *manager.Manager {
	cfg := manager.Config{
		Name: name, Tenant: sp.Tenant(), Owner: d.id, Log: d.log, Store: sp.Store(), Conn: sp.Conn(),
		Runtime:     d.sup,
		Rates:       spaceRates{d, sp},
		Credentials: hostCredentials{d.ten},
		Admission:   spaceAdmission{d, sp},
		Modules:     moduleChecks{d},
		DeadLetters: spaceDeadLetters{d, sp},
		Exporter:    d.prom,
		Sinks:       d.o.MetricsSinks,
		LockTTL:     d.o.TMLockTTL,
		InProcess:   d.o.InProcess != nil, FailFast: d.ip.FailFast,
		Checkpoints: func(ctx context.Context) (checkpoint.Store, error) { return d.checkpointStore(ctx, sp) },
		Validation:  d.validateStored(),
	}
	if d.srv != nil {
		cfg.StorageFault = d.srv.JetStreamFault
		if d.ip.CheckpointStore == nil { // checkpoints in its JetStream
			cfg.HoldPrune = d.srv.LowOnSpace
		}
	}
	return manager.New(d.ctx, cfg)
}

// checkpointStore opens sp's tenant's store of effectively-once
// checkpoints: Options.CheckpointStore (in process), else the tenant's
// JetStream object store.
func (d *Daemon) checkpointStore(ctx context.Context, sp *tenancy.Space) (checkpoint.Store, error) {
	if s := d.ip.CheckpointStore; s != nil {
		return s, nil
	}
	js, err := jetstream.New(sp.Conn())
	if err != nil {
		return nil, fmt.Errorf("checkpoints: %w", err)
	}
	return checkpoint.NewJetStreamStore(ctx, js, checkpoint.JetStreamOptions{Bucket: process.CheckpointBucket(sp.Store().Tenant()), MaxBytes: checkpoint.DefaultMaxBytes, Replicas: d.node.Replicas()})
}

// validateStored validates a stored topology: its modules are artifacts,
// not files; built-in components are checked against the daemon's plugin
// environment (Options.Plugins).
func (d *Daemon) validateStored() ardea.ValidateOptions {
	return ardea.ValidateOptions{SkipModuleCheck: true, Builtins: d.plugins.Outputs, BuiltinConfig: d.plugins.ValidateConfig}
}

// parseSpec reads a stored topology.
func (d *Daemon) parseSpec(name string, spec []byte) (*ardea.Topology, error) {
	return manager.ParseSpec(name, spec, d.validateStored())
}

// spaceRates are a tenant's bus rate shares (tenancy's Reshare).
type spaceRates struct {
	d  *Daemon
	sp *tenancy.Space
}

func (r spaceRates) Reshare(ctx context.Context, starting *manager.Manager) {
	r.d.ten.Reshare(ctx, r.sp.Tenant(), topologyOfTM(starting))
}
func (r spaceRates) Resend(t *manager.Manager)       { r.sp.Resend(tmTopology{t}) }
func (r spaceRates) Share() (float64, float64, bool) { return r.sp.Share() }

// hostCredentials are the hosts' NATS credentials (tenancy's; issued by
// the daemon's hostCreds).
type hostCredentials struct{ ten *tenancy.Tenants }

func (c hostCredentials) Revoke(t *manager.Manager) { c.ten.RevokeHosts(tmTopology{t}) }

// spaceAdmission is a tenant's quotas and policy (tenancy's, and the
// tenant's streams and KV buckets: tenantdata's).
type spaceAdmission struct {
	d  *Daemon
	sp *tenancy.Space
}

func (a spaceAdmission) Lock() func() { return a.sp.LockQuota() }

func (a spaceAdmission) Check(ctx context.Context, top *ardea.Topology) error {
	if err := a.d.ten.CheckMachine(ctx, a.sp.Tenant(), top); err != nil {
		return err
	}
	return a.d.data.Check(ctx, a.sp, top)
}

func (a spaceAdmission) NewModules(ctx context.Context, mods map[string][]byte) (map[string]bool, int64, error) {
	return a.d.ten.NewModules(ctx, a.sp, mods)
}

func (a spaceAdmission) Admit(ctx context.Context, action string, before, after manager.Footprint, storeBytes int64) error {
	return a.d.ten.Admit(ctx, a.sp, action, tenancy.Footprint(before), tenancy.Footprint(after), storeBytes)
}

func (a spaceAdmission) DropModules(ctx context.Context, fresh map[string]bool) {
	a.d.ten.DropModules(ctx, a.sp, fresh)
}

// moduleChecks validate swapped-in and applied modules (validate.go,
// language.go).
type moduleChecks struct{ d *Daemon }

func (m moduleChecks) Validate(ctx context.Context, name string, kind ardea.Kind, data []byte) error {
	return m.d.validate(ctx, name, kind, data)
}

func (m moduleChecks) CheckManifest(ctx context.Context, top *ardea.Topology, component string, data []byte) error {
	return checkManifest(ctx, top, component, data)
}

func (m moduleChecks) Remember(ctx context.Context, version string, data []byte) {
	m.d.rememberLanguage(ctx, version, data)
}

// spaceDeadLetters are a tenant's bolts' dead letters (dlq_bolts.go; the
// places are tenancy's machine policy).
type spaceDeadLetters struct {
	d  *Daemon
	sp *tenancy.Space
}

func (l spaceDeadLetters) Ensure(ctx context.Context) { l.d.ensureDeadLetterStream(ctx, l.sp) }
func (l spaceDeadLetters) Remove(ctx context.Context, t *manager.Manager) {
	l.d.ten.RemoveDeadLetters(ctx, l.sp, tmTopology{t})
}
