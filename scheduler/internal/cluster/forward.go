package cluster

import (
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
)

// forwardedBy is the header a node sets on a request it forwards to the
// node that manages the topology; a request that carries it is answered
// where it lands, never forwarded again.
const forwardedBy = "X-Ardea-Forwarded-By"

// Forward (a cluster's node) sends a request about one topology
// (/api/v1/topologies/{name}[/...]) that this node does not manage to the
// node that does (the holder of its TM lock, at the API address that node
// reports in the nodes bucket), with the caller's token: every node
// answers for every topology. The guard has checked the token here
// already, and the managing node checks it again. A topology no node
// manages (finished, or between two managers) is answered here.
func (n *Node) Forward(next http.Handler) http.Handler {
	if n.set == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := topologyInPath(r.URL.Path)
		if !ok || r.Header.Get(forwardedBy) != "" {
			next.ServeHTTP(w, r)
			return
		}
		target := n.managerAPI(r, name)
		if target == nil {
			next.ServeHTTP(w, r)
			return
		}
		p := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(target)
				pr.Out.Header.Set(forwardedBy, n.set.Name)
			},
			ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
				n.log.Warn("forward a request to the topology's node", "topology", name, "node", target.Host, "err", err)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadGateway)
				_, _ = w.Write([]byte(`{"error":"topology ` + name + ` is managed by another node, which did not answer"}`))
			},
		}
		p.ServeHTTP(w, r)
	})
}

// managerAPI is the API URL of the node that manages topology name in the
// tenant r acts for, nil when it is this node or none.
func (n *Node) managerAPI(r *http.Request, name string) *url.URL {
	tenant := n.o.Tenants.TenantOf(r.Context())
	if n.o.Managers.Manages(tenant, name) {
		return nil
	}
	sp := n.o.Tenants.Lookup(tenant)
	if sp == nil {
		return nil
	}
	owner, err := sp.Store().TMLocation(r.Context(), name)
	if err != nil {
		return nil
	}
	node, ok := strings.CutPrefix(owner, ownerPrefix)
	if !ok || node == n.set.Name {
		return nil
	}
	api := n.nodeAPI(r.Context(), node)
	if api == "" {
		return nil
	}
	u, err := url.Parse(api)
	if err != nil {
		return nil
	}
	return u
}

// topologyInPath is {name} of /api/v1/topologies/{name}[/...].
func topologyInPath(path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, "/api/v1/topologies/")
	if !ok || rest == "" {
		return "", false
	}
	name, _, _ := strings.Cut(rest, "/")
	return name, name != ""
}
