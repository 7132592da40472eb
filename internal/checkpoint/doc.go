// Package checkpoint holds the building blocks of effectively-once
// processing (Heron's stateful processing, Chandy-Lamport snapshots with
// aligned barriers):
//
//   - Aligner, per task: which input channels are blocked while a checkpoint
//     barrier is being aligned, and when the task is aligned and must
//     snapshot its state and forward the barrier.
//   - Tracker, in the topology manager: which tasks have stored their
//     snapshot of a checkpoint, and the last global checkpoint (stored by
//     every task), the one every task restores after a failure.
//   - Store, with DirStore (a local directory) and JetStreamStore (a NATS
//     JetStream object store): the snapshots and the global marker, in a
//     checksummed envelope.
//
// Aligner and Tracker do no I/O and are not safe for concurrent use (one
// goroutine, or one mutex); the stores are safe for concurrent use.
// docs/delivery.md describes the protocol and the storage layout.
package checkpoint
