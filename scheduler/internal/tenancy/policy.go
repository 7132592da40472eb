package tenancy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/settings"
)

// A host process runs with the daemon's user: builtin:file reads and
// writes any path that user can, builtin:http listens on the machine's
// ports, the Kafka, Pulsar and JetStream connectors reach any address,
// and topology.bolt.dead_letter (topology-wide or in any component's
// config, a tenant's own wasm bolt's included) names a file the host
// appends to. For the operator's own (default) tenant that is the point;
// for another tenant it would reach past every other fence. So every
// setting that reaches the machine (settings.MachineReach: one list, from
// the typed settings keys and the built-ins' typed fields) goes through
// one policy (settings.MachinePolicy): in a tenant other than the default
// one it is refused, naming the component and the field, unless the
// deployment file allows it that tenant (security.tenant_allow: paths and
// host:port patterns; or security.tenant_builtins: a built-in whole), as
// Kubernetes refuses hostPath volumes under its restricted pod security
// standard. The host process checks the same policy again (it receives it
// from the daemon) when it loads the topology, and a confined tenant's
// bolts' dead letters go to a place the daemon chooses in the tenant's
// space (its dead-letter stream, in its NATS account and quota:
// deadletters.go), never to a file the tenant names.

// errForbidden is the kind of a refusal of what the tenant may not do
// (the API answers 403), e.g. a built-in connector that reaches the
// machine. It is the API's kind (api.ErrForbidden).
var errForbidden = api.ErrForbidden

// TenantAllow is what the admin allows one tenant to reach on the machine
// (the deployment file's security.tenant_allow.<tenant>).
type TenantAllow struct {
	// Paths: absolute files or directories (everything under them).
	Paths []string `yaml:"paths"`
	// Addresses: host:port patterns (path.Match wildcards) for brokers,
	// URLs' hosts and listen addresses.
	Addresses []string `yaml:"addresses"`
}

// deadLetterDir is where tenant's bolts' dead letters go without NATS
// accounts (in process): under the data dir, in a directory of the
// tenant's own. With accounts they go to its dead-letter stream.
func (ts *Tenants) deadLetterDir(tenant string) string {
	return filepath.Join(ts.o.DataDir, "dead-letters", tenant)
}

// MachinePolicy is tenant's policy (the zero policy, allowing everything,
// for the default tenant).
func (ts *Tenants) MachinePolicy(tenant string) settings.MachinePolicy {
	if tenant == ts.o.Default {
		return settings.MachinePolicy{}
	}
	a := ts.o.Security.TenantAllow[tenant]
	p := settings.MachinePolicy{Confined: true, Tenant: tenant, Paths: a.Paths, Addresses: a.Addresses,
		Builtins: ts.o.Security.TenantBuiltins}
	if ts.accounts != nil {
		p.DeadLetterStream = names.DeadLetterStream // in the tenant's account (deadletters.go)
	} else {
		p.DeadLetterDir = ts.deadLetterDir(tenant)
	}
	return p
}

// HostPolicyEnv hands tenant's policy to a host process (it checks the
// topology against it again, and places the dead letters by it), also the
// default tenant's: a host started without one for a tenant other than
// names.DefaultTenant confines it. It is an entry of the host's
// environment (settings.MachinePolicyEnv), not a flag: a command line is
// every local user's to read, and the policy names the paths and
// addresses the tenant may reach.
func (ts *Tenants) HostPolicyEnv(tenant string) (string, error) {
	return ts.MachinePolicy(tenant).Env()
}

// CheckMachine records in the call's audit record what top reaches on
// the machine, and refuses what tenant's policy does not allow
// (errForbidden, naming the component and the field).
func (ts *Tenants) CheckMachine(ctx context.Context, tenant string, top *ardea.Topology) error {
	reach := settings.MachineReach(top, ts.o.Plugins)
	audit.Param(ctx, "reaches", reachStrings(reach))
	err := ts.MachinePolicy(tenant).Check(reach)
	if errors.Is(err, settings.ErrMachine) {
		return api.Errorf(errForbidden, "%v", err)
	}
	return err
}

// AuditReach records in the call's audit record what top reaches on the
// machine (a running topology's, which an update runs again).
func (ts *Tenants) AuditReach(ctx context.Context, top *ardea.Topology) {
	audit.Param(ctx, "reaches", reachStrings(settings.MachineReach(top, ts.o.Plugins)))
}

// reachStrings renders reach for the audit record: one line each.
func reachStrings(reach []settings.Reach) []string {
	out := make([]string, 0, len(reach))
	for _, r := range reach {
		out = append(out, fmt.Sprintf("%s = %q (%s)", r.Where(), r.Value, r.Kind))
	}
	return out
}

// RemoveDeadLetters removes the dead letters the daemon kept for t's
// bolts (a killed topology's, unless its artifacts are kept): its subjects
// of the tenant's dead-letter stream in sp, or its directory, so that a
// topology submitted again under the name starts with none.
func (ts *Tenants) RemoveDeadLetters(ctx context.Context, sp *Space, t Topology) {
	p := ts.MachinePolicy(t.Tenant())
	if p.DeadLetterStream != "" {
		if err := purgeDeadLetters(ctx, sp, p.DeadLetterStream, t.Name()); err != nil {
			t.Log().Warn("remove the bolts' dead letters", "stream", p.DeadLetterStream, "err", err)
		}
	}
	if dir := p.TopologyDeadLetters(t.Name()); dir != "" {
		if err := os.RemoveAll(dir); err != nil {
			t.Log().Warn("remove the bolts' dead letters", "dir", dir, "err", err)
		}
	}
}
