// Package httpapi is Ardea's own: the HTTP handlers of the daemon's API
// (`ardea local`), its topology, stream and KV routes. A handler decodes
// the request (path values, query, the JSON body), calls the backend and
// encodes its answer or error in the API's shapes (scheduler/api's wire
// types, api.ErrorBody), nothing else: what a call does is the backend's,
// which the package declares as narrow interfaces, one per concern
// (deps.go: Backends), acting in the tenant of the call's principal: the
// daemon implements Topologies, scheduler/internal/tenantdata Streams and
// Buckets.
//
// The daemon composes the rest around Handler.Register's routes: the
// tracker and the web UI (package ui), GET /metrics, the admin routes
// (tokens, tenants, quotas, the audit log), and in front of them all the
// guard (internal/httpsec: host, origin, content type, body size, token,
// scope, rate) and the audit log (internal/audit). A handler only names
// its call and parameters for the audit record and takes who calls from
// the authenticated principal (internal/auth).
//
// Errors: the backend's errors carry one of package api's kinds (api.Errorf)
// or wrap an error the backend classifies (ErrorKind); writeErr
// (handler.go) maps each kind to its status code.
package httpapi
