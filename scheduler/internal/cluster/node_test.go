package cluster

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/tenancy"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// TestTopologyInPath: a request is about one topology only under
// /api/v1/topologies/{name}.
func TestTopologyInPath(t *testing.T) {
	for _, c := range []struct {
		path, name string
		ok         bool
	}{
		{"/api/v1/topologies/wc", "wc", true},
		{"/api/v1/topologies/wc/logs", "wc", true},
		{"/api/v1/topologies/", "", false},
		{"/api/v1/topologies", "", false},
		{"/api/v1/nodes", "", false},
	} {
		if name, ok := topologyInPath(c.path); name != c.name || ok != c.ok {
			t.Errorf("topologyInPath(%q) = %q, %v; want %q, %v", c.path, name, ok, c.name, c.ok)
		}
	}
}

// alone is a daemon alone's Self and Managers.
type alone struct{}

func (alone) URL() string        { return "http://127.0.0.1:1" }
func (alone) NATSURL() string    { return "nats://127.0.0.1:2" }
func (alone) ClusterURL() string { return "" }
func (alone) Containers() []launcher.ProcessStatus {
	return []launcher.ProcessStatus{{ID: "a", State: launcher.StateRunning}, {ID: "b", State: launcher.StateBackoff}}
}
func (alone) Held() []string                   { return []string{"t/b", "t/a"} }
func (alone) Manages(tenant, name string) bool { return false }
func (alone) Release(tenant, name string) bool { return true }
func (alone) Resume(context.Context, *tenancy.Space, statemgr.Topology, statemgr.ExecState) error {
	return nil
}

// TestAlone: a daemon alone's node lists itself only (named "local",
// its runtime's running containers, its topologies sorted), forwards
// nothing and closes without a cluster.
func TestAlone(t *testing.T) {
	n := New(context.Background(), Options{Self: alone{}, Managers: alone{}})
	if n.Clustered() || n.Name() != "" || n.Replicas() != 1 {
		t.Fatalf("a daemon alone's node: clustered %v, name %q, replicas %d", n.Clustered(), n.Name(), n.Replicas())
	}
	nodes, err := n.Nodes(context.Background())
	if err != nil || len(nodes) != 1 {
		t.Fatalf("nodes: %v %v, want itself only", nodes, err)
	}
	self := nodes[0]
	if self.Name != "local" || self.Containers != 1 || self.Health != api.NodeUp || strings.Join(self.Topologies, ",") != "t/a,t/b" {
		t.Errorf("itself: %+v", self)
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	rec := httptest.NewRecorder()
	n.Forward(next).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/topologies/wc", nil))
	if rec.Code != http.StatusTeapot {
		t.Errorf("a daemon alone answers every request itself: %d", rec.Code)
	}
	n.WatchLocks(nil) // nothing to watch
	n.OpenTenant("t")
	n.Close(context.Background())
}
