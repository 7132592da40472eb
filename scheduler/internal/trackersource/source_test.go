package trackersource_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/internal/trackersource"
	"github.com/ardea-dev/ardea/scheduler/packing"
	"github.com/ardea-dev/ardea/scheduler/planner"
	"github.com/ardea-dev/ardea/scheduler/settings"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
	"github.com/ardea-dev/ardea/sinks"
)

var (
	submitted = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	started   = submitted.Add(time.Hour)
	errSpace  = errors.New("tenant space: store not ready")
)

// wordcount is a spout of words and a bolt counting them, count's
// parallelism given (a rescale changes it).
func wordcount(count int) *ardea.Topology {
	return &ardea.Topology{Name: "wc", Config: map[string]string{"topology.reliability": settings.AtLeastOnce, "topology.x": "1"},
		Components: []*ardea.Component{
			{Name: "words", Kind: ardea.Spout, Module: "builtin:generator", Parallelism: 1,
				Outputs: map[string][]string{"default": {"word"}, "control": {"op"}}},
			{Name: "count", Kind: ardea.Bolt, Module: "count.wasm", Parallelism: count, Config: map[string]string{"k": "v"},
				Outputs: map[string][]string{"default": {"word", "n"}},
				Inputs:  []ardea.Input{{From: "words", Grouping: ardea.GroupingFields, Fields: []string{"word"}}}},
		}}
}

// world is a tenant with topologies stored and running:
//   - wc: stored (count parallelism 2), running rescaled (3) in 2 containers;
//   - loading: stored and running, its manager not loaded yet;
//   - done: stored with an ended state, not running;
//   - elsewhere: stored and running, managed by another daemon now;
//   - broken: stored with a spec that no longer parses;
//   - gone: no stored state (submitted, never started here).
type world struct {
	store    *fakeStore
	managers fakeManagers
	cfg      trackersource.Config
}

func newWorld() *world {
	specs := map[string]*ardea.Topology{"wc-spec": wordcount(2)}
	rec := func(name, spec string) statemgr.Topology {
		return statemgr.Topology{Name: name, Spec: []byte(spec), SubmittedAt: submitted, SubmittedBy: "alice",
			Modules: map[string]string{"count": "sha-count"}}
	}
	store := &fakeStore{
		tops: map[string]statemgr.Topology{"wc": rec("wc", "wc-spec"), "loading": rec("loading", "wc-spec"),
			"done": rec("done", "wc-spec"), "elsewhere": rec("elsewhere", "wc-spec"), "broken": rec("broken", "garbage"),
			"gone": rec("gone", "wc-spec")},
		states: map[string]statemgr.ExecState{"wc": {State: api.StateRunning}, "loading": {State: api.StateRunning},
			"done": {State: api.StateFinished, Message: "input ended"}, "elsewhere": {State: api.StateRunning}},
	}
	p := &plan.Plan{Topology: "wc", Containers: 2,
		Components: []plan.Component{{Name: "words"}, {Name: "count"}},
		Tasks:      []plan.Task{{}, {Component: 0, Index: 0}, {Component: 1, Index: 0}, {Component: 1, Index: 1}, {Component: 1, Index: 2, Retired: true}, {Component: 7}, {Component: -1}}}
	wc := &fakeManager{name: "wc", hist: sinks.NewHistory(time.Minute),
		view: fakeView{top: wordcount(3), doc: ctl.PlanDoc{Plan: p, Active: true}, started: started, rev: 4},
		status: api.Status{Name: "wc", State: api.StateRunning, Message: "all containers up", PlanVersion: 4,
			Containers: []api.ContainerStatus{{ID: 1, Instances: make([]api.InstanceStatus, 2)}, {ID: 2, Instances: make([]api.InstanceStatus, 2)}}}}
	loading := &fakeManager{name: "loading", status: api.Status{Name: "loading", State: api.StateRunning}}
	managers := fakeManagers{running: map[string]*fakeManager{"wc": wc, "loading": loading}, lost: map[string]bool{"elsewhere": true}}
	return &world{store: store, managers: managers, cfg: trackersource.Config{
		Stores: fakeStores{store: store}, Managers: managers, Parse: parseFrom(specs),
		Languages: fakeLanguages{"sha-count": "rust"}, Nodes: fakeNodes{node: "n2"}, Logs: fakeLogs{},
	}}
}

func TestTopology(t *testing.T) {
	cfg := map[string]string{"topology.reliability": settings.AtLeastOnce, "topology.x": "1"}
	for _, tc := range []struct {
		name, topology string
		change         func(*world)
		want           api.TopologyInfo
		err            string
		kind           error
	}{
		{name: "running: the manager's state, containers and instances", topology: "wc",
			want: api.TopologyInfo{Name: "wc", State: "RUNNING", Message: "all containers up", Submitted: submitted, SubmittedBy: "alice",
				Started: started, Containers: 2, Instances: 4, PlanRevision: 4, Reliability: settings.AtLeastOnce, Config: cfg}},
		{name: "not running: the stored state", topology: "done",
			want: api.TopologyInfo{Name: "done", State: "FINISHED", Message: "input ended", Submitted: submitted, SubmittedBy: "alice",
				Reliability: settings.AtLeastOnce, Config: cfg}},
		{name: "no state stored", topology: "gone",
			want: api.TopologyInfo{Name: "gone", Submitted: submitted, SubmittedBy: "alice", Reliability: settings.AtLeastOnce, Config: cfg}},
		{name: "another daemon's: the stored state", topology: "elsewhere",
			want: api.TopologyInfo{Name: "elsewhere", State: "RUNNING", Submitted: submitted, SubmittedBy: "alice",
				Reliability: settings.AtLeastOnce, Config: cfg}},
		{name: "a bad reliability leaves it empty", topology: "done",
			change: func(w *world) {
				bad := wordcount(2)
				bad.Config = map[string]string{"topology.reliability": "sometimes"}
				w.cfg.Parse = parseFrom(map[string]*ardea.Topology{"wc-spec": bad})
			},
			want: api.TopologyInfo{Name: "done", State: "FINISHED", Message: "input ended", Submitted: submitted, SubmittedBy: "alice",
				Config: map[string]string{"topology.reliability": "sometimes"}}},
		{name: "unknown", topology: "nope", err: `no topology named "nope"`, kind: api.ErrNotFound},
		{name: "spec does not parse", topology: "broken", err: errParse.Error()},
		{name: "space does not open", topology: "wc", change: func(w *world) { w.cfg.Stores = fakeStores{err: errSpace} }, err: errSpace.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			if tc.change != nil {
				tc.change(w)
			}
			got, err := trackersource.New(w.cfg).Topology(context.Background(), tc.topology)
			checkErr(t, err, tc.err, tc.kind)
			if tc.err == "" && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Topology(%s) =\n %+v, want\n %+v", tc.topology, got, tc.want)
			}
		})
	}
}

func TestTopologies(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*world)
		want   []string
		err    string
	}{
		// broken is left out: one topology that does not parse does not
		// fail the list.
		{name: "every one that reads", want: []string{"done", "elsewhere", "gone", "loading", "wc"}},
		{name: "none", change: func(w *world) { w.store.tops = nil }, want: []string{}},
		{name: "list fails", change: func(w *world) { w.store.listErr = errors.New("kv: timeout") }, err: "kv: timeout"},
		{name: "space does not open", change: func(w *world) { w.cfg.Stores = fakeStores{err: errSpace} }, err: errSpace.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			if tc.change != nil {
				tc.change(w)
			}
			got, err := trackersource.New(w.cfg).Topologies(context.Background())
			checkErr(t, err, tc.err, nil)
			if tc.err != "" {
				return
			}
			names := []string{}
			for _, ti := range got {
				names = append(names, ti.Name)
			}
			if !reflect.DeepEqual(names, tc.want) {
				t.Errorf("Topologies = %v, want %v", names, tc.want)
			}
		})
	}
}

func TestLogicalPlan(t *testing.T) {
	goDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(goDir, "go.mod"), []byte("module c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	words := api.LogicalComponent{Name: "words", Kind: "spout", Module: "builtin:generator", Language: "builtin", Parallelism: 1,
		Config: map[string]string{}, Inputs: []api.LogicalInput{},
		Outputs: []api.LogicalStream{{Name: "default", Fields: []string{"word"}}, {Name: "control", Fields: []string{"op"}}}}
	count := func(par int, lang string) api.LogicalComponent {
		return api.LogicalComponent{Name: "count", Kind: "bolt", Module: "count.wasm", Language: lang, Version: "sha-count",
			Parallelism: par, Config: map[string]string{"k": "v"},
			Outputs: []api.LogicalStream{{Name: "default", Fields: []string{"word", "n"}}},
			Inputs:  []api.LogicalInput{{From: "words", Stream: "default", Grouping: ardea.GroupingFields, Fields: []string{"word"}}}}
	}
	for _, tc := range []struct {
		name, topology string
		change         func(*world)
		want           []api.LogicalComponent
		err            string
		kind           error
	}{
		{name: "running: the manager's topology (rescaled)", topology: "wc", want: []api.LogicalComponent{words, count(3, "rust")}},
		{name: "loading: the stored topology", topology: "loading", want: []api.LogicalComponent{words, count(2, "rust")}},
		{name: "not running: the stored topology", topology: "done", want: []api.LogicalComponent{words, count(2, "rust")}},
		{name: "an uploaded module that does not say", topology: "done",
			change: func(w *world) { w.cfg.Languages = fakeLanguages{} }, want: []api.LogicalComponent{words, count(2, "wasm")}},
		{name: "no languages", topology: "done",
			change: func(w *world) { w.cfg.Languages = nil }, want: []api.LogicalComponent{words, count(2, "wasm")}},
		{name: "no version: not looked up", topology: "done",
			change: func(w *world) { w.store.tops["done"] = statemgr.Topology{Name: "done", Spec: []byte("wc-spec")} },
			want:   []api.LogicalComponent{words, func() api.LogicalComponent { c := count(2, "wasm"); c.Version = ""; return c }()}},
		{name: "a source folder's language", topology: "done",
			change: func(w *world) {
				top := wordcount(2)
				top.Components[1].Module = goDir
				w.cfg.Parse = parseFrom(map[string]*ardea.Topology{"wc-spec": top})
			},
			want: []api.LogicalComponent{words, func() api.LogicalComponent { c := count(2, "go"); c.Module = goDir; return c }()}},
		{name: "a source folder that is gone", topology: "done",
			change: func(w *world) {
				top := wordcount(2)
				top.Components[1].Module = filepath.Join(goDir, "missing")
				w.cfg.Parse = parseFrom(map[string]*ardea.Topology{"wc-spec": top})
			},
			want: []api.LogicalComponent{words, func() api.LogicalComponent {
				c := count(2, "rust")
				c.Module = filepath.Join(goDir, "missing")
				return c
			}()}},
		{name: "unknown", topology: "nope", err: `no topology named "nope"`, kind: api.ErrNotFound},
		{name: "spec does not parse", topology: "broken", err: errParse.Error()},
		{name: "space does not open", topology: "wc", change: func(w *world) { w.cfg.Stores = fakeStores{err: errSpace} }, err: errSpace.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			if tc.change != nil {
				tc.change(w)
			}
			got, err := trackersource.New(w.cfg).LogicalPlan(context.Background(), tc.topology)
			checkErr(t, err, tc.err, tc.kind)
			if tc.err != "" {
				return
			}
			want := api.LogicalPlan{Topology: tc.topology, Components: tc.want}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("LogicalPlan(%s) =\n %+v, want\n %+v", tc.topology, got, want)
			}
		})
	}
}

// notRunningCases are the answers of every call that reads a running
// manager, for topologies without one here.
var notRunningCases = []struct {
	name, topology string
	change         func(*world)
	err            string
	kind           error
}{
	{name: "ended", topology: "done", kind: api.ErrNotFound,
		err: "topology done is not running (it finished, failed or was killed): it has no live plan or metrics"},
	{name: "another daemon's", topology: "elsewhere", kind: api.ErrBadState,
		err: "topology elsewhere is managed by another daemon now (this one lost its manager lock: x)"},
	{name: "no state stored", topology: "gone", kind: api.ErrNotFound, err: `no running topology named "gone"`},
	{name: "unknown", topology: "nope", kind: api.ErrNotFound, err: `no running topology named "nope"`},
	{name: "space does not open", topology: "done", change: func(w *world) { w.cfg.Stores = fakeStores{err: errSpace} }, err: errSpace.Error()},
}

func TestNotRunning(t *testing.T) {
	calls := map[string]func(*trackersource.Source, string) error{
		"PackingPlan": func(s *trackersource.Source, n string) error {
			_, err := s.PackingPlan(context.Background(), n)
			return err
		},
		"PhysicalPlan": func(s *trackersource.Source, n string) error {
			_, err := s.PhysicalPlan(context.Background(), n)
			return err
		},
		"InstanceNames": func(s *trackersource.Source, n string) error {
			_, err := s.InstanceNames(context.Background(), n)
			return err
		},
		"History": func(s *trackersource.Source, n string) error {
			_, err := s.History(context.Background(), n)
			return err
		},
		"ContainerLogs": func(s *trackersource.Source, n string) error {
			_, err := s.ContainerLogs(context.Background(), n, 1, 10)
			return err
		},
	}
	for call, f := range calls {
		for _, tc := range notRunningCases {
			t.Run(call+"/"+tc.name, func(t *testing.T) {
				w := newWorld()
				if tc.change != nil {
					tc.change(w)
				}
				checkErr(t, f(trackersource.New(w.cfg), tc.topology), tc.err, tc.kind)
			})
		}
	}
}

func TestNotLoadedYet(t *testing.T) {
	s := trackersource.New(newWorld().cfg)
	want := `topology "loading" is not loaded yet`
	_, err := s.PackingPlan(context.Background(), "loading")
	checkErr(t, err, want, api.ErrNotFound)
	_, err = s.InstanceNames(context.Background(), "loading")
	checkErr(t, err, want, api.ErrNotFound)
	// Without a plan the manager has no containers.
	_, err = s.ContainerLogs(context.Background(), "loading", 1, 10)
	checkErr(t, err, "topology loading has containers 1..0, not 1", api.ErrNotFound)
}

func TestPackingPlan(t *testing.T) {
	got, err := trackersource.New(newWorld().cfg).PackingPlan(context.Background(), "wc")
	if err != nil {
		t.Fatal(err)
	}
	// The running (rescaled) topology packed into the plan's containers.
	_, want, err := planner.PackPlan(wordcount(3), 2)
	if err != nil {
		t.Fatal(err)
	}
	pp, ok := got.(*packing.Plan)
	if !ok || !reflect.DeepEqual(pp, want) {
		t.Fatalf("PackingPlan = %#v, want %#v", got, want)
	}
	if n := len(pp.Containers[0].Instances) + len(pp.Containers[1].Instances); n != 4 {
		t.Errorf("packed %d instances, want 4 (1 words, 3 count)", n)
	}
}

func TestInstanceNames(t *testing.T) {
	got, err := trackersource.New(newWorld().cfg).InstanceNames(context.Background(), "wc")
	if err != nil {
		t.Fatal(err)
	}
	// Tasks[0] is unused; a retired task keeps its name; tasks of no
	// component are left out.
	want := map[int]string{1: "words/0", 2: "count/0", 3: "count/1", 4: "count/2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("InstanceNames = %v, want %v", got, want)
	}
}

func TestPhysicalPlan(t *testing.T) {
	for _, tc := range []struct {
		name         string
		nodes        trackersource.Nodes
		node1, node2 string
	}{
		{name: "a cluster names each container's node", nodes: fakeNodes{node: "n2"}, node1: "n2:t.wc.1", node2: "n2:t.wc.2"},
		{name: "a daemon alone names none", nodes: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			w.cfg.Nodes = tc.nodes
			got, err := trackersource.New(w.cfg).PhysicalPlan(context.Background(), "wc")
			if err != nil {
				t.Fatal(err)
			}
			m, ok := got.(map[string]any)
			if !ok {
				t.Fatalf("PhysicalPlan = %T, want a JSON object", got)
			}
			cs, _ := m["containers"].([]api.ContainerStatus)
			if m["topology"] != "wc" || m["state"] != api.StateRunning || m["plan_revision"] != uint64(4) || len(m) != 4 || len(cs) != 2 {
				t.Fatalf("PhysicalPlan = %+v", m)
			}
			if cs[0].Node != tc.node1 || cs[1].Node != tc.node2 || cs[0].ID != 1 || cs[1].ID != 2 {
				t.Errorf("containers %+v, want nodes %q and %q", cs, tc.node1, tc.node2)
			}
		})
	}
}

func TestHistory(t *testing.T) {
	w := newWorld()
	got, err := trackersource.New(w.cfg).History(context.Background(), "wc")
	if err != nil || got != w.managers.running["wc"].hist {
		t.Errorf("History = %p, %v; want the manager's %p", got, err, w.managers.running["wc"].hist)
	}
}

func TestContainerLogs(t *testing.T) {
	errLogs := errors.New("node n2 unreachable")
	for _, tc := range []struct {
		name      string
		container int
		logs      trackersource.Logs
		want      []string
		err       string
		kind      error
	}{
		{name: "first", container: 1, logs: fakeLogs{}, want: []string{"t.wc.1 last 10"}},
		{name: "last", container: 2, logs: fakeLogs{}, want: []string{"t.wc.2 last 10"}},
		{name: "zero", container: 0, logs: fakeLogs{}, err: "topology wc has containers 1..2, not 0", kind: api.ErrNotFound},
		{name: "past the last", container: 3, logs: fakeLogs{}, err: "topology wc has containers 1..2, not 3", kind: api.ErrNotFound},
		{name: "the log's error, as is", container: 1, logs: fakeLogs{err: errLogs}, err: errLogs.Error(), kind: errLogs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			w.cfg.Logs = tc.logs
			got, err := trackersource.New(w.cfg).ContainerLogs(context.Background(), "wc", tc.container, 10)
			checkErr(t, err, tc.err, tc.kind)
			if tc.err == "" && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ContainerLogs = %q, want %q", got, tc.want)
			}
		})
	}
}

// checkErr checks err's text is want ("": no error), and that it is of
// kind, if one is given.
func checkErr(t *testing.T, err error, want string, kind error) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("error %v, want none", err)
	case want == "":
	case err == nil:
		t.Fatalf("no error, want %q", want)
	case err.Error() != want:
		t.Fatalf("error %q, want %q", err, want)
	case kind != nil && !errors.Is(err, kind):
		t.Fatalf("error %q is not %v", err, kind)
	}
}
