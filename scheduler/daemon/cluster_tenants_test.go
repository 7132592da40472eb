package daemon_test

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// TestClusterTenantsApartThroughAnyNode: a tenant's deploy token reaches
// its own topologies through every node of a cluster (the node that
// manages one answers, or is asked by the node the call came to) and
// never another tenant's, whichever node manages it. acme and globex
// each run a topology named "shared" (acme's split one task, globex's
// three), and acme one named "only-acme":
//   - through each node, each tenant's status of "shared" is its own;
//   - logs of globex's third split task (split/2, which acme's "shared"
//     has not) reach globex through each node and never acme;
//   - globex reading, logging, killing or swapping "only-acme" through
//     each node is told it does not exist, as for a name no one uses,
//     and acme's topology keeps running;
//   - a deploy token cannot list the cluster's nodes (which name every
//     tenant's topologies).
func TestClusterTenantsApartThroughAnyNode(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "three cluster nodes and ardea host processes")
	t.Parallel()
	nodes := startNodes(t, 3)
	admin := clusterAdmin(t, nodes)
	as := func(d *daemon.Daemon, token string) *api.Client {
		c := d.Client()
		c.Token = token
		return c
	}
	ctx := t.Context()
	tokens := map[string]string{}
	for _, tenant := range []string{"acme", "globex"} {
		c := as(nodes[0], admin)
		var tn auth.Tenant
		if err := c.Do(ctx, http.MethodPost, "/api/v1/tenants", auth.CreateTenantRequest{Name: tenant}, &tn); err != nil {
			t.Fatalf("create tenant %s: %v", tenant, err)
		}
		var nt auth.NewToken
		if err := c.Do(ctx, http.MethodPost, "/api/v1/tokens", auth.CreateTokenRequest{Tenant: tenant, Scope: auth.ScopeDeploy, Name: "test"}, &nt); err != nil {
			t.Fatalf("a deploy token of %s: %v", tenant, err)
		}
		tokens[tenant] = nt.Secret
	}
	submit := func(d *daemon.Daemon, tenant, name string, splits int) {
		req := api.SubmitRequest{Name: name, Spec: wcSpec(t, name, splits, generatorSpout("1", "0"), ""), Modules: wcModules(t)}
		if _, err := as(d, tokens[tenant]).Submit(ctx, req); err != nil {
			t.Fatalf("%s submits %s through %s: %v", tenant, name, d.NodeName(), err)
		}
	}
	submit(nodes[0], "acme", "shared", 1)
	submit(nodes[1], "globex", "shared", 3)
	submit(nodes[2], "acme", "only-acme", 1)
	splits := func(st api.Status) int {
		for _, c := range st.Components {
			if c.Name == "split" {
				return c.Parallelism
			}
		}
		return -1
	}
	running := func(st api.Status) bool {
		n := 0
		for _, c := range st.Containers {
			if c.Host == api.HostRunning && len(c.Instances) > 0 {
				n++
			}
		}
		return st.State == api.StateRunning && n == len(st.Containers) && n > 0
	}
	for _, tenant := range []string{"acme", "globex"} {
		for _, name := range []string{"shared", "only-acme"} {
			if tenant == "globex" && name == "only-acme" {
				continue
			}
			testutil.Eventually(t, fmt.Sprintf("%s's %s runs", tenant, name), func() (bool, string) {
				st, err := as(nodes[2], tokens[tenant]).Status(ctx, name)
				if err != nil {
					return false, err.Error()
				}
				return running(st), fmt.Sprintf("%+v", st)
			})
		}
	}
	_, missingErr := as(nodes[0], tokens["globex"]).Status(ctx, "no-such")
	if !isNotFound(missingErr) {
		t.Fatalf("globex's status of a name no one uses: %v, want 404", missingErr)
	}
	missing := strings.ReplaceAll(missingErr.Error(), "no-such", "X")
	for _, d := range nodes {
		for tenant, want := range map[string]int{"acme": 1, "globex": 3} {
			st, err := as(d, tokens[tenant]).Status(ctx, "shared")
			if err != nil || splits(st) != want {
				t.Errorf("through %s, %s's shared has %d split tasks (%v), want its own %d", d.NodeName(), tenant, splits(st), err, want)
			}
		}
		testutil.Eventually(t, fmt.Sprintf("globex reads its split/2's log through %s", d.NodeName()), func() (bool, string) {
			lines, err := as(d, tokens["globex"]).Logs(ctx, "shared", "split/2", 50)
			return err == nil && len(lines) > 0, fmt.Sprint(len(lines), err)
		})
		if lines, err := as(d, tokens["acme"]).Logs(ctx, "shared", "split/2", 50); len(lines) > 0 {
			t.Errorf("through %s, acme read %d lines of a split/2 its shared has not (%v): %q", d.NodeName(), len(lines), err, lines)
		}
		g := as(d, tokens["globex"])
		_, err := g.Status(ctx, "only-acme")
		if !isNotFound(err) || strings.ReplaceAll(err.Error(), "only-acme", "X") != missing {
			t.Errorf("through %s, globex's status of acme's only-acme: %v (a missing name: %v)", d.NodeName(), err, missingErr)
		}
		if lines, err := g.Logs(ctx, "only-acme", "", 50); !isNotFound(err) || len(lines) > 0 {
			t.Errorf("through %s, globex's logs of acme's only-acme: %d lines, %v", d.NodeName(), len(lines), err)
		}
		if lines, err := g.ContainerLogs(ctx, "only-acme", 1, 50); !isNotFound(err) || len(lines) > 0 {
			t.Errorf("through %s, globex's container logs of acme's only-acme: %d lines, %v", d.NodeName(), len(lines), err)
		}
		if _, err := g.Action(ctx, "only-acme", "kill", nil, nil); !isNotFound(err) {
			t.Errorf("through %s, globex killing acme's only-acme: %v", d.NodeName(), err)
		}
		if _, err := g.Swap(ctx, "only-acme", api.SwapRequest{Component: "split", Module: wcModules(t)["split"]}); !isNotFound(err) {
			t.Errorf("through %s, globex swapping acme's only-acme: %v", d.NodeName(), err)
		}
		list, err := g.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(list, func(s api.Summary) bool { return s.Name == "only-acme" }) {
			t.Errorf("through %s, globex lists acme's only-acme: %+v", d.NodeName(), list)
		}
		if _, err := g.Nodes(ctx); !hasStatus(err, http.StatusForbidden) {
			t.Errorf("through %s, a deploy token lists the nodes: %v, want 403", d.NodeName(), err)
		}
	}
	st, err := as(nodes[1], tokens["acme"]).Status(ctx, "only-acme")
	if err != nil || !running(st) {
		t.Fatalf("acme's only-acme after globex's attempts: %+v %v", st, err)
	}
}

func isNotFound(err error) bool { return hasStatus(err, http.StatusNotFound) }

func hasStatus(err error, status int) bool {
	var ae *api.APIError
	return errors.As(err, &ae) && ae.Status == status
}
