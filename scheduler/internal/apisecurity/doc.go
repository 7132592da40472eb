// Package apisecurity is Ardea's own (not a public API): the daemon API's
// security: its token store and the admin token made at the first start,
// the guard (host, origin, content type, body size, token, scope and
// per-tenant rate checks before any route), the audit log that hears every
// state-changing or refused call, the API's TLS certificate, and the admin
// routes (tokens and tenants, a tenant's quotas, the audit log, tickets,
// health).
//
// One Layer holds them. The daemon (scheduler/daemon) opens it at start
// (Open: the token store, the admin token, the audit log, then the
// tenants' quotas), hands it the API's routes (Handler: the TLS
// certificate, the guard, the admin routes beside the daemon's, the guard
// and the audit log around them) and delegates its public accessors to it
// (AdminToken, TLSFingerprint, Client, LoginToken).
//
// What the Layer needs of the daemon is the narrow interfaces it declares
// (deps.go): the tenants (the default one, whether one may be deleted,
// what the daemon drops once one is) and their quotas (served and set by
// the admin routes; a change reaches the tenant's NATS account and its
// rate shares at once). The daemon implements them by small adapters over
// scheduler/internal/tenancy (scheduler/daemon/security.go). The package
// links neither the daemon, its topology managers, tenancy nor a runtime
// (deps_test.go), so its logic is tested against fakes of those
// interfaces; the HTTP answers end to end are scheduler/daemon's tests.
//
// Locks and goroutines: a Layer has no lock and starts no goroutine of
// its own (the token store, the guard and the audit log have theirs).
// Its fields are set by Open and Handler, both called by the daemon's
// Start before the API serves, and only read after. Tenants.Deleted takes
// the daemon's lock (Daemon.mu) and releases it before it calls tenancy;
// nothing here holds a lock while calling the interfaces.
package apisecurity
