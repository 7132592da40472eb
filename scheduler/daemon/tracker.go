package daemon

import (
	"context"

	"github.com/ardea-dev/ardea/scheduler/internal/logtail"
	"github.com/ardea-dev/ardea/scheduler/internal/manager"
	"github.com/ardea-dev/ardea/scheduler/internal/trackersource"
)

// The tracker API's source is scheduler/internal/trackersource's; the
// daemon gives it the narrow interfaces it declares, each a small adapter
// over the daemon and the tenant space of the call.

// newTrackerSource is the tracker's source over d's stored topologies
// and running managers.
func newTrackerSource(d *Daemon) *trackersource.Source {
	return trackersource.New(trackersource.Config{
		Stores:    trackerStores{d},
		Managers:  trackerManagers{d},
		Parse:     d.parseSpec,
		Languages: trackerLanguages{d},
		Nodes:     trackerNodes{d},
		Logs:      trackerLogs{d},
	})
}

// trackerStores are the tenants' state managers (their spaces').
type trackerStores struct{ d *Daemon }

func (s trackerStores) Store(ctx context.Context) (trackersource.Store, error) {
	sp, err := s.d.space(ctx)
	if err != nil {
		return nil, err
	}
	return sp.Store(), nil
}

// trackerManagers are the daemon's running TMs (get: none, or one that
// lost its lock to another daemon, is an error).
type trackerManagers struct{ d *Daemon }

func (ms trackerManagers) Running(ctx context.Context, name string) (trackersource.Manager, error) {
	t, err := ms.d.get(ctx, name)
	if err != nil {
		return nil, err // a nil interface, not a nil TM
	}
	return trackedTM{t}, nil
}

// trackedTM is a TM as the tracker reads it: its View is the interface's.
type trackedTM struct{ *manager.Manager }

func (t trackedTM) View() trackersource.View { return t.Manager.View() }

// trackerLanguages are the uploaded modules' languages (language.go),
// "wasm" when the tenant's space cannot be opened.
type trackerLanguages struct{ d *Daemon }

func (l trackerLanguages) Language(ctx context.Context, version string) string {
	sp, err := l.d.space(ctx)
	if err != nil {
		return "wasm"
	}
	return l.d.languageOf(ctx, sp, version)
}

// trackerNodes name a cluster node's containers' nodes (the cluster
// node's runtime, read per call: it is set as the daemon starts).
type trackerNodes struct{ d *Daemon }

func (n trackerNodes) Node(id string) string { return n.d.node.ContainerNode(id) }

// trackerLogs are the containers' whole logs (no filter), wherever they
// run (logs.go).
type trackerLogs struct{ d *Daemon }

func (l trackerLogs) Logs(ctx context.Context, id string, n int) ([]string, error) {
	return l.d.containerLogs(ctx, id, n, logtail.Filter{})
}
