package manager

import (
	"context"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/checkpoint"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
	"github.com/ardea-dev/ardea/sinks"
)

// What a topology manager needs from outside, each as small as its uses:
// the daemon (scheduler/daemon) implements them and makes the managers.

// Runtime runs a topology's containers: as `ardea host` processes under
// the launcher, or as goroutines of the daemon's process (`ardea run`).
// Ids are the manager's ContainerID's (scheduler/internal/runtime); states and
// restarts follow the launcher's (a container that exits is restarted
// after a back-off until it fails too often in a row, then it is FAILED).
type Runtime interface {
	// StartContainer starts container c of m (launcher.ErrDuplicate if it
	// runs).
	StartContainer(ctx context.Context, m *Manager, c int) error
	Stop(ctx context.Context, id string) error
	Restart(ctx context.Context, id string) error
	Remove(ctx context.Context, id string) error
	Status(id string) (launcher.ProcessStatus, bool)
	List() []launcher.ProcessStatus
	// Kill ends a container that was declared lost (pid is its process
	// then): its replacement is started as after any exit.
	Kill(id string, pid int) error
}

// Rates are the tenant's bus rate shares (its quotas' rates split over
// its running containers).
type Rates interface {
	// Reshare computes every share of the tenant again and tells the
	// hosts (starting: a manager not yet registered that counts).
	Reshare(ctx context.Context, starting *Manager)
	// Resend tells m's hosts the tenant's current share again.
	Resend(m *Manager)
	// Share is the tenant's current share (ok false: none computed yet).
	Share() (tuplesPerSec, bytesPerSec float64, ok bool)
}

// Credentials are the hosts' NATS credentials.
type Credentials interface {
	// Revoke revokes every credential issued to m's hosts.
	Revoke(m *Manager)
}

// Footprint is what one topology runs: its components packed into
// containers. The zero Footprint runs nothing.
type Footprint struct {
	Top        *ardea.Topology
	Containers int
}

// Admission is the tenancy's say in a request that changes what a
// topology runs (swap, update, apply): its quotas and policy.
type Admission interface {
	// Lock takes the tenant's quota lock, held by a request from its
	// check until what it adds counts (the manager's loop never takes it).
	Lock() (unlock func())
	// Check refuses a changed topology the tenant's policy forbids (built-in
	// connectors that reach the machine, streams, KV buckets).
	Check(ctx context.Context, top *ardea.Topology) error
	// NewModules are the digests of mods the tenant's store does not hold
	// yet, and their bytes.
	NewModules(ctx context.Context, mods map[string][]byte) (map[string]bool, int64, error)
	// Admit is the quota check of a change from before to after that
	// stores storeBytes more.
	Admit(ctx context.Context, action string, before, after Footprint, storeBytes int64) error
	// DropModules deletes the modules of fresh that nothing refers to (a
	// refused or failed request's).
	DropModules(ctx context.Context, fresh map[string]bool)
}

// Modules checks and remembers the modules a swap or an apply brings.
type Modules interface {
	// Validate compiles a module as the hosts will and instantiates it
	// once as a component of kind.
	Validate(ctx context.Context, name string, kind ardea.Kind, data []byte) error
	// CheckManifest checks a module's manifest against component's place
	// in top.
	CheckManifest(ctx context.Context, top *ardea.Topology, component string, data []byte) error
	// Remember notes the module's source language (version: its digest).
	Remember(ctx context.Context, version string, data []byte)
}

// DeadLetters are the tenant's dead letters of bolts (effectively once).
type DeadLetters interface {
	// Ensure makes the tenant's dead-letter stream if it is missing.
	Ensure(ctx context.Context)
	// Remove removes m's topology's dead letters (a kill without keep).
	Remove(ctx context.Context, m *Manager)
}

// Exporter is where the containers' metrics go beside the manager's
// history: the daemon's Prometheus exposition (sinks.Prometheus).
type Exporter interface {
	// Put keeps b under tenant and returns the samples it refuses.
	Put(tenant string, b *sinks.Batch) []api.Exception
	// Forget drops a topology's series (container -1: every container).
	Forget(tenant, topology string, container int)
}

// Config makes a Manager: the topology, its tenant's space and what the
// manager uses. Nil interfaces are no-ops but Runtime, which is required.
type Config struct {
	Name   string
	Tenant string
	// Owner names the daemon in the TM lock (stable across its restarts).
	Owner string
	Log   *slog.Logger
	// Store is the tenant's state manager; Conn its NATS connection (the
	// control subjects, the checkpoint store).
	Store *statemgr.Store
	Conn  *nats.Conn

	Runtime     Runtime
	Rates       Rates
	Credentials Credentials
	Admission   Admission
	Modules     Modules
	DeadLetters DeadLetters
	Exporter    Exporter
	// Sinks hear every metrics batch the manager receives.
	Sinks map[string]sinks.Sink
	// StorageFault reports the embedded JetStream's fault, if any
	// (status).
	StorageFault func() (error, time.Time)
	// HoldPrune, if set, is asked before old checkpoints are deleted
	// (coordinator.Coordinator.HoldPrune).
	HoldPrune func() error

	// LockTTL is the TM lock's TTL (10s).
	LockTTL time.Duration
	// InProcess: the containers run in process (a ctl.Local gateway);
	// FailFast names a container's failure as the topology's.
	InProcess bool
	FailFast  bool
	// Checkpoints opens the store of the tenant's effectively-once
	// checkpoints (the TM of an effectively-once topology calls it once,
	// as it starts).
	Checkpoints func(ctx context.Context) (checkpoint.Store, error)
	// Validation validates a stored topology (ParseSpec; a rescale's):
	// its modules are artifacts, not files; its built-in connectors'.
	Validation ardea.ValidateOptions
	// Gateway, if set, is how the manager reaches its containers instead
	// of NATS or in process (tests drive it with scripted hosts).
	Gateway func(*Manager) ctl.Commands
}

// defaults makes the nil interfaces but Runtime no-ops.
func (c *Config) defaults() {
	if c.Rates == nil {
		c.Rates = noRates{}
	}
	if c.Credentials == nil {
		c.Credentials = noCredentials{}
	}
	if c.Admission == nil {
		c.Admission = noAdmission{}
	}
	if c.Modules == nil {
		c.Modules = noModules{}
	}
	if c.DeadLetters == nil {
		c.DeadLetters = noDeadLetters{}
	}
	if c.Exporter == nil {
		c.Exporter = noExporter{}
	}
}

type (
	noRates       struct{}
	noCredentials struct{}
	noAdmission   struct{}
	noModules     struct{}
	noDeadLetters struct{}
	noExporter    struct{}
)

func (noRates) Reshare(context.Context, *Manager)                {}
func (noRates) Resend(*Manager)                                  {}
func (noRates) Share() (float64, float64, bool)                  { return 0, 0, false }
func (noCredentials) Revoke(*Manager)                            {}
func (noAdmission) Lock() func()                                 { return func() {} }
func (noAdmission) Check(context.Context, *ardea.Topology) error { return nil }
func (noAdmission) NewModules(context.Context, map[string][]byte) (map[string]bool, int64, error) {
	return nil, 0, nil
}
func (noAdmission) Admit(context.Context, string, Footprint, Footprint, int64) error { return nil }
func (noAdmission) DropModules(context.Context, map[string]bool)                     {}
func (noModules) Validate(context.Context, string, ardea.Kind, []byte) error         { return nil }
func (noModules) CheckManifest(context.Context, *ardea.Topology, string, []byte) error {
	return nil
}
func (noModules) Remember(context.Context, string, []byte)  {}
func (noDeadLetters) Ensure(context.Context)                {}
func (noDeadLetters) Remove(context.Context, *Manager)      {}
func (noExporter) Put(string, *sinks.Batch) []api.Exception { return nil }
func (noExporter) Forget(string, string, int)               {}
