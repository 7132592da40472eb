package trackersource

import (
	"context"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
	"github.com/ardea-dev/ardea/sinks"
)

// What a Source reads, implemented by the daemon (scheduler/daemon).
// Every call acts in the tenant of ctx's principal.

// Stores finds the stored topologies.
type Stores interface {
	// Store is the state manager of the tenant ctx acts for (the error
	// of opening its space, as is).
	Store(ctx context.Context) (Store, error)
}

// Store is what a Source reads of a tenant's state manager
// (*statemgr.Store).
type Store interface {
	ListTopologies(ctx context.Context) ([]statemgr.Topology, error)
	GetTopology(ctx context.Context, name string) (statemgr.Topology, error)
	GetState(ctx context.Context, topology string) (statemgr.ExecState, error)
}

// Managers finds the running topology managers.
type Managers interface {
	// Running is the topology manager of topology name of the tenant ctx
	// acts for, if it runs here; else the error says why not (its text
	// names "another daemon" when one manages it now).
	Running(ctx context.Context, name string) (Manager, error)
}

// Manager is a running topology manager as the tracker reads it
// (scheduler/internal/manager's Manager).
type Manager interface {
	// View is the state its loop published last.
	View() View
	// Status is what `ardea status` shows.
	Status() api.Status
	// History keeps the containers' metrics and exceptions.
	History() *sinks.History
	// ContainerID is container c's id in the runtime (the logs').
	ContainerID(c int) string
}

// View is a manager's published view (immutable): one View answers one
// call, so what it reads of the topology and the plan agree.
type View interface {
	// Top is the topology it runs (nil until loaded).
	Top() *ardea.Topology
	// Doc is the plan document in use (its Plan nil until loaded).
	Doc() ctl.PlanDoc
	Started() time.Time
	PlanRevision() uint64
	// Containers is the plan's container count (0 before it is loaded).
	Containers() int
}

// Languages names uploaded modules' source languages.
type Languages interface {
	// Language is the language of the module stored under version (its
	// digest) in ctx's tenant, "wasm" when it is not known.
	Language(ctx context.Context, version string) string
}

// Nodes names where containers run.
type Nodes interface {
	// Node names the node container id runs on ("" when it is not
	// known, or on a daemon alone).
	Node(id string) string
}

// Logs reads containers' logs, wherever they run.
type Logs interface {
	// Logs is container id's last n log lines, oldest first.
	Logs(ctx context.Context, id string, n int) ([]string, error)
}

// Config is what a Source reads. Languages and Nodes may be nil (modules
// given as files are "wasm"; containers name no node); the rest are
// required.
type Config struct {
	Stores   Stores
	Managers Managers
	// Parse reads a stored topology's spec (the daemon's validation of a
	// stored topology: its modules are artifacts, not files).
	Parse     func(name string, spec []byte) (*ardea.Topology, error)
	Languages Languages
	Nodes     Nodes
	Logs      Logs
}
