package httpapi

import (
	"context"

	"github.com/ardea-dev/ardea/scheduler/api"
)

// What the handlers need, by concern: the daemon's topologies
// (scheduler/daemon) and the tenants' streams and KV buckets
// (scheduler/internal/tenantdata). Every call acts in the tenant of ctx's
// principal (auth.PrincipalFrom), which the backend resolves: a topology,
// stream or bucket of another tenant is not found, as a missing one.
// Errors carry package api's kinds (api.Errorf), or wrap one ErrorKind
// classifies.

// Backends are the operations the routes call, one interface a concern,
// each implemented by whoever holds that concern. All three are required.
type Backends struct {
	Topologies Topologies
	Streams    Streams
	Buckets    Buckets
}

// Topologies are the operations on the caller's topologies (the routes
// under /api/v1/topologies).
type Topologies interface {
	// Summaries lists the topologies, sorted by name.
	Summaries(ctx context.Context) ([]api.Summary, error)
	// Submit checks, stores and starts a topology; ManagerStatus is then
	// what a submit answers: the running topology's status as its manager
	// reports it.
	Submit(ctx context.Context, req api.SubmitRequest) error
	ManagerStatus(ctx context.Context, name string) (api.Status, error)
	// Status is a topology's status, running or stored.
	Status(ctx context.Context, name string) (api.Status, error)
	// SetActive, Kill, Restart and Update are the actions of POST
	// .../{name}/{action}; Kill keeps the topology's artifacts if keep.
	SetActive(ctx context.Context, name string, active bool) (api.Status, error)
	Kill(ctx context.Context, name string, keep bool) error
	Restart(ctx context.Context, name string, container int) (api.Status, error)
	Update(ctx context.Context, name string, req api.UpdateRequest) (api.Status, error)
	// Logs returns the last log lines q selects.
	Logs(ctx context.Context, name string, q LogQuery) ([]string, error)
	// Swap, RollbackModule and ModuleHistory: a component's module
	// versions.
	Swap(ctx context.Context, name string, req api.SwapRequest) (api.SwapResult, error)
	RollbackModule(ctx context.Context, name, component, by string) (api.SwapResult, error)
	ModuleHistory(ctx context.Context, name string) ([]api.ModuleVersion, error)
	Apply(ctx context.Context, name string, req api.ApplyRequest) (api.ApplyResult, error)
	// DeadLetters lists (or with replay replays) the dead letters of every
	// component that keeps them, or of component only.
	DeadLetters(ctx context.Context, name, component string, replay bool) (api.DeadLetterResult, error)
}

// LogQuery selects a topology's log lines (GET .../logs): each selected
// container's last Lines lines, those of Component only if it is set
// (and of its instance Index if HasIndex); the containers are Container's
// if HasContainer, else the instance's, else all.
type LogQuery struct {
	Lines        int
	Component    string
	Index        int
	HasIndex     bool
	Container    int
	HasContainer bool
}

// Streams are the caller's tenant streams (/api/v1/streams).
type Streams interface {
	ListStreams(ctx context.Context) ([]api.StreamInfo, error)
	CreateStream(ctx context.Context, req api.CreateStreamRequest) (api.StreamInfo, error)
	StreamInfo(ctx context.Context, name string) (api.StreamInfo, error)
	DeleteStream(ctx context.Context, name string) error
	Publish(ctx context.Context, name string, msgs []string) (api.PublishResult, error)
	ReadStream(ctx context.Context, name string, from uint64, limit int) (api.StreamRead, error)
}

// Buckets are the caller's tenant KV buckets (/api/v1/kv).
type Buckets interface {
	ListKV(ctx context.Context) ([]api.KVInfo, error)
	CreateKV(ctx context.Context, req api.CreateKVRequest) (api.KVInfo, error)
	KVInfo(ctx context.Context, name string) (api.KVInfo, error)
	DeleteKV(ctx context.Context, name string) error
	KVKeys(ctx context.Context, name, filter string, limit int) (api.KVKeys, error)
	GetKV(ctx context.Context, name, key string) (api.KVEntry, error)
	PutKV(ctx context.Context, name, key, value string) (api.KVEntry, error)
	DeleteKVKey(ctx context.Context, name, key string, purge bool) error
}

// ErrorKind returns which of package api's kinds err is when err wraps
// an error of a package the handlers do not link (the state manager's,
// the supervisor's, the quotas'), the first in writeErr's order; nil for
// none (err is then answered by its api kind, or 500).
type ErrorKind func(err error) error
