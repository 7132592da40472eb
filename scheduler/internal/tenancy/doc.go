// Package tenancy is Ardea's own: it holds what a daemon keeps per tenant
// and decides for one. A tenant's space (its NATS connection, its state
// manager's buckets, its quota lock and bus rate share: Space, opened on
// first use by Tenants.Space), its quotas and the one admission every
// request that changes what a tenant runs passes (submit, update, apply,
// swap, the resume of a stored topology at daemon start: Admit), the
// shares of its bus rates among its running containers (Reshare), the
// NATS operator mode that gives each tenant an account and each host a
// credential of its topology's subjects only (OpenAccounts, HostCreds,
// RevokeHosts), its CPU cgroup, the built-in and machine policy of what a
// tenant's topologies may reach on the machine (MachinePolicy,
// CheckMachine), and where its bolts' dead letters go (its dead-letter
// stream or directory). The deployment file's security: section
// (ParseSecurity) configures it and the API's security beside it.
//
// The daemon (scheduler/daemon) makes one Tenants and holds it; it runs
// the topology managers and tells tenancy about them through the narrow
// interfaces of deps.go (Topologies, Topology), so tenancy never links
// the daemon, the topology manager or the WebAssembly runtime
// (deps_test.go). The daemon's adapters make scheduler/internal/manager's Rates,
// Credentials, Admission and DeadLetters of a Tenants and a Space.
//
// Concurrency: a Tenants and its Spaces are safe for concurrent use; no
// goroutine is started here. Locks, in the order they are taken:
//
//   - a Space's quota lock (LockQuota) is held by a request from its quota
//     check (Admit) until what it adds counts (the topology manager
//     registered, the change stored), so two requests cannot both pass a
//     quota only one fits; a request may hold it while it waits for a
//     topology manager's answer (no manager's loop takes it);
//   - a Space's rate lock serialises telling the tenant's hosts their
//     share (Reshare, Space.Resend), so that the last share computed is
//     the last sent; it is held while those requests go out (each round
//     bounded by rateTimeout);
//   - the daemon's own lock, taken by Topologies.Of to list a tenant's
//     managers (never while it calls into Tenants);
//   - Tenants' open lock serialises opening a space (a connection, the
//     state manager's buckets), so two first requests of a tenant open it
//     once; Tenants' lock guards the map of open spaces and is a leaf.
package tenancy
