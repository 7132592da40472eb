// Package coordinator is Ardea's own: the topology manager's part of
// effectively once: a Coordinator begins checkpoints at an interval,
// collects each task's report, marks a checkpoint global once every task
// stored it, keeps the newest global ones (retention) and tells which is
// restorable (RestorableCheckpoint); LoadStates reads a container's states
// back.
//
// Goroutines: Run (the interval loop) runs on its caller's goroutine until
// its ctx ends. Locks: Coordinator.mu guards its tracker and counters, a
// leaf; callbacks (OnGlobal, take) are called without it.
package coordinator
