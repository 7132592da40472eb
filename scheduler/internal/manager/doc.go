// Package manager is Ardea's own: the topology manager (TM): one Manager per
// topology, made and driven by the daemon (scheduler/daemon), which
// implements the narrow interfaces the manager declares (deps.go: the
// container Runtime, the tenant's Rates, the hosts' Credentials, the
// tenancy's Admission, the Modules checks, the DeadLetters, the metrics
// Exporter). It depends on the control protocol (scheduler/ctl), the state
// manager (scheduler/statemgr), the checkpoint coordinator
// (scheduler/internal/coordinator), the planner and the API's wire types
// (scheduler/api), never on the daemon (deps_test.go).
//
// A Manager is an actor (manager.go): one goroutine, its loop, owns every
// field; the containers' reports, the runtime's callbacks, a lost lock and
// the API's requests reach it as events in its mailbox (mailbox.go,
// events.go). It runs one mode at a time (state.go: the table of modes and
// the execution states they lead through; mode_*.go: one file per mode,
// the steady running and paused modes sharing mode_running.go), waits by staying in a mode while it handles
// heartbeat events (Manager.await, modes.go), and publishes a View of
// itself after every event (view.go), which is all the rest of the daemon
// reads. It talks to its containers only through the typed control gateway
// (ctl.Commands: over NATS, in process, or Config.Gateway) and receives
// their reports as a ctl.Manager; the plan it publishes is state in the
// state manager, which the containers watch. Effectively once it runs a
// checkpoint coordinator and rolls the topology back after a container's
// death (checkpoint.go, mode_rollingback.go).
//
// Requests (requests.go, swap.go, update.go, apply.go) are made from other
// goroutines: each prepares what it can from the view, under the tenant's
// quota lock when it adds to its usage (Admission), and sends the loop a
// command.
//
// Goroutines: a Manager owns its loop, its lock keeper and the side tasks
// its loop hands off (Manager.Go); Stop waits for them. Locks: none over
// its state, only credsMu (issuing a host's credential, IssueCredential,
// against revoking them) and effectMu (the cancel of the operation in
// flight, for urgent events).
//
// The process-free tests (fake_test.go) drive a Manager with a fake
// runtime and scripted hosts over the embedded state manager, in
// milliseconds.
package manager
