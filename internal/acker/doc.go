// Package acker tracks tuple trees for at-least-once delivery with the XOR
// scheme of Apache Storm and Heron.
//
// Every tuple that belongs to a tree (an edge) gets a random nonzero 64-bit
// id; the tuple id of ABI v1 input records is that edge id. A tree is keyed
// by its RootID (the spout task and a random key) and holds one 64-bit value,
// the XOR of every edge id it has heard of. An edge id is XORed in twice:
// once when the tuple is created (by the spout through Ledger.Start, by a
// bolt through the accumulator of the input it is anchored on) and once when
// it is acked. So the value is 0 exactly when every edge has been acked
// (with probability 1 - 2^-64 per update), whatever order the updates
// arrive in.
//
// What lives where:
//
//   - Ledger: one per container, in the stream manager, for the container's
//     spout tasks (Heron keeps it in the spout's stream manager). It holds
//     the XOR value, the spout's message id and the start time of every
//     pending tree, decides Acked, Failed or TimedOut, and counts pending
//     trees per spout task for max_spout_pending.
//   - Anchors: one per bolt task, in the stream manager of the bolt's
//     container (input side). It keeps, per in-flight input tuple id, the
//     roots that came with the tuple and the XOR of the edges emitted
//     anchored on it, and turns an ack or fail of the input into the
//     updates for the roots' ledgers.
//   - Batch and DecodeMessage: the wire format of those updates between
//     containers (many entries in one message).
//
// Concurrency: Ledger, Anchors and Batch are not safe for concurrent use.
// Drive each from one goroutine, or guard it with one mutex (the stream
// manager's NATS callback and a task's runner may share a Ledger that way).
// None of their methods blocks or calls out, so a leaf mutex suffices.
//
// docs/delivery.md describes the protocol, the wire format and the figures.
package acker
