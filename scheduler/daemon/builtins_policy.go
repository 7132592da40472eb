package daemon

import (
	"slices"
	"strings"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors/plugin"
)

// A built-in connector runs inside the host process with the daemon's
// user: builtin:file reads and writes any path that user can, builtin:http
// listens on the machine's ports, and the Kafka, Pulsar and JetStream
// connectors reach any address. For the operator's own (default) tenant
// that is the point; for another tenant it would reach past every other
// fence (a deploy token could read the daemon's files). So in any other
// tenant a built-in whose config names a path or an address (a path field,
// or listen, url, brokers) is refused unless the deployment file's
// security.tenant_builtins lists it, as Kubernetes refuses hostPath
// volumes under its restricted pod security standard.

// hostReach names the field through which builtin name (of kind) reaches
// the machine ("" if none).
func hostReach(kind ardea.Kind, name string) string {
	spec, ok := plugin.Default().Lookup(plugin.Kind(kind), name)
	if !ok {
		return ""
	}
	for _, f := range spec.Fields {
		if f.Type == plugin.TypePath {
			return f.Name
		}
		switch f.Name {
		case "listen", "url", "brokers":
			return f.Name
		}
	}
	return ""
}

// checkBuiltins refuses, in a tenant other than the default one, the
// built-in connectors that reach the daemon's machine (hostReach) and that
// the deployment file does not allow tenants.
func (d *Daemon) checkBuiltins(tenant string, top *ardea.Topology) error {
	if tenant == d.defaultTenant() {
		return nil
	}
	for _, c := range top.Components {
		name, ok := strings.CutPrefix(c.Module, ardea.BuiltinPrefix)
		if !ok || slices.Contains(d.o.Security.TenantBuiltins, name) {
			continue
		}
		if field := hostReach(c.Kind, name); field != "" {
			return newErr(ErrForbidden, "component %s: %s reaches the daemon's machine (its %s field); tenant %s may use it only if the deployment file's security.tenant_builtins lists %q",
				c.Name, c.Module, field, tenant, name)
		}
	}
	return nil
}
