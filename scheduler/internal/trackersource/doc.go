// Package trackersource is Ardea's own (not a public API): the tracker's
// source (ui.Source and ui.InstanceNamer), what the tracker REST API and
// the web UI (package ui) read of the topologies a daemon runs: a
// topology's info and config, its logical, packing and physical plans,
// its task names, its topology manager's metrics history and a
// container's last log lines.
//
// A Source reads the stored topology (the tenant's state manager) and the
// running topology manager's published view, and nothing else; what it
// needs of them is the narrow interfaces it declares (deps.go), which the
// daemon (scheduler/daemon/tracker.go) implements by small adapters. It
// links neither the daemon, the manager nor a runtime (deps_test.go), so
// its logic is tested against fakes of those interfaces.
//
// Every call acts in the tenant of ctx's principal, which the interfaces
// resolve: another tenant's topology is not found, as a missing one.
// Errors carry package api's kinds (api.Errorf): ui maps ErrNotFound to
// 404.
package trackersource
