package trackersource_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/internal/trackersource"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
	"github.com/ardea-dev/ardea/sinks"
)

// Fakes of the interfaces a Source reads (deps.go): a tenant's store, the
// running managers, their views, languages, nodes and logs, all in
// memory. Every fake records nothing it is not asked.

// fakeStore is a tenant's state manager.
type fakeStore struct {
	tops    map[string]statemgr.Topology
	states  map[string]statemgr.ExecState
	listErr error
}

func (s *fakeStore) ListTopologies(context.Context) ([]statemgr.Topology, error) {
	if s.listErr != nil {
		return nil, s.listErr
	}
	out := []statemgr.Topology{}
	for _, name := range slices.Sorted(maps.Keys(s.tops)) {
		out = append(out, s.tops[name])
	}
	return out, nil
}

func (s *fakeStore) GetTopology(_ context.Context, name string) (statemgr.Topology, error) {
	if t, ok := s.tops[name]; ok {
		return t, nil
	}
	return statemgr.Topology{}, fmt.Errorf("topology %s: %w", name, statemgr.ErrNotFound)
}

func (s *fakeStore) GetState(_ context.Context, name string) (statemgr.ExecState, error) {
	if st, ok := s.states[name]; ok {
		return st, nil
	}
	return statemgr.ExecState{}, fmt.Errorf("state %s: %w", name, statemgr.ErrNotFound)
}

// fakeStores opens store, or fails with err (a space that cannot open).
type fakeStores struct {
	store *fakeStore
	err   error
}

func (s fakeStores) Store(context.Context) (trackersource.Store, error) {
	if s.err != nil {
		return nil, s.err
	}
	return s.store, nil
}

// fakeManagers are the running managers by name; lost names a topology
// another daemon manages now (the daemon's error text for it).
type fakeManagers struct {
	running map[string]*fakeManager
	lost    map[string]bool
}

func (ms fakeManagers) Running(_ context.Context, name string) (trackersource.Manager, error) {
	if ms.lost[name] {
		return nil, api.Errorf(api.ErrBadState, "topology %s is managed by another daemon now (this one lost its manager lock: x)", name)
	}
	if m, ok := ms.running[name]; ok {
		return m, nil
	}
	return nil, api.Errorf(api.ErrNotFound, "no running topology named %q", name)
}

// fakeManager is a running manager named name.
type fakeManager struct {
	name   string
	view   fakeView
	status api.Status
	hist   *sinks.History
}

func (m *fakeManager) View() trackersource.View { return m.view }
func (m *fakeManager) Status() api.Status       { return m.status }
func (m *fakeManager) History() *sinks.History  { return m.hist }
func (m *fakeManager) ContainerID(c int) string { return fmt.Sprintf("t.%s.%d", m.name, c) }

// fakeView is a published view.
type fakeView struct {
	top     *ardea.Topology
	doc     ctl.PlanDoc
	started time.Time
	rev     uint64
}

func (v fakeView) Top() *ardea.Topology { return v.top }
func (v fakeView) Doc() ctl.PlanDoc     { return v.doc }
func (v fakeView) Started() time.Time   { return v.started }
func (v fakeView) PlanRevision() uint64 { return v.rev }
func (v fakeView) Containers() int {
	if v.doc.Plan == nil {
		return 0
	}
	return v.doc.Plan.Containers
}

// fakeLanguages knows modules' languages by version; "wasm" otherwise.
type fakeLanguages map[string]string

func (l fakeLanguages) Language(_ context.Context, version string) string {
	if s, ok := l[version]; ok {
		return s
	}
	return "wasm"
}

// fakeNodes place every container on node.
type fakeNodes struct{ node string }

func (n fakeNodes) Node(id string) string { return n.node + ":" + id }

// fakeLogs answer every container's log with its id and n, or err.
type fakeLogs struct{ err error }

func (l fakeLogs) Logs(_ context.Context, id string, n int) ([]string, error) {
	if l.err != nil {
		return nil, l.err
	}
	return []string{fmt.Sprintf("%s last %d", id, n)}, nil
}

// errParse is what parse answers for a spec it does not know.
var errParse = errors.New("spec does not parse")

// parseFrom parses a spec by looking it up: the spec's text names the
// topology built in code.
func parseFrom(tops map[string]*ardea.Topology) func(string, []byte) (*ardea.Topology, error) {
	return func(_ string, spec []byte) (*ardea.Topology, error) {
		if t, ok := tops[string(spec)]; ok {
			return t, nil
		}
		return nil, errParse
	}
}
