// Package statemgr is Ardea's own (not a public API): the state manager:
// what the daemon, the topology managers (TMs) and the hosts share about
// submitted topologies, kept in NATS JetStream (Heron keeps it in ZooKeeper
// or on the local file system).
//
// Everything belongs to a tenant (Options.Tenant, default "default"); each
// tenant has its own buckets, so tenants can later be isolated by JetStream
// account or subject permissions ($KV.ardea_<tenant>_*.>, $O.ardea_<tenant>_*.>):
//
//	bucket (kind)                     key / object name                     value
//	ardea_<t>_topologies (KV)         <topology>                            JSON: name, spec (YAML), modules, submitter, options
//	ardea_<t>_plans (KV)              <topology>.packing, <topology>.physical   opaque plan bytes
//	ardea_<t>_state (KV)              <topology>                            JSON ExecState
//	ardea_<t>_tmlock (KV, msg TTLs)   <topology>                            JSON: owner, ttl, acquired
//	ardea_<t>_artifacts (object)      <sha256 hex>                          .wasm module; metadata ardea-name
//	ardea_<t>_handoff (object)        <topology>/<component>/<epoch>/<kg>   a key group's host-side state
//
// Names (tenant, topology, component) are letters, digits, '_' and '-', at
// most 128 bytes, the rule topology validation already applies. All
// buckets use file storage with one replica and keep one revision per key.
//
// Concurrency. Every method is safe for concurrent use, from any number of
// processes. The server orders writes per key; each KV entry carries a
// revision (its stream sequence). CreateTopology is create-only (ErrExists);
// UpdateTopology and SetState with a non-zero ExecState.Revision are
// compare-and-set on the revision (ErrConflict when someone wrote in
// between: re-read and retry); plan puts are last-writer-wins (only the
// lock-holding TM writes them). Reads are of the latest stored value. No
// operation spans keys atomically: DeleteTopology removes the lock, plans,
// state and handoff blobs, then the definition, so an interrupted delete
// leaves the topology listed and can be repeated.
//
// TM lock. AcquireTMLock creates <topology> in the tmlock bucket only if it
// is absent, with a per-message TTL (JetStream ≥ 2.11 "Nats-TTL", whole
// seconds, at least 1 s). Refresh rewrites the entry with a fresh TTL on
// condition that its revision is still the holder's; if the holder dies
// the server deletes the entry when the TTL runs out (leaving a delete
// marker for one minute, which is how watchers learn of it) and the next
// AcquireTMLock succeeds. A holder that finds its revision gone gets
// ErrLockLost and must stop acting as TM. Each acquisition records the
// new manager's epoch under <topology>.manager in the same bucket, so
// that Lock.Reacquire takes a lost lock back only if no other manager
// acquired it meanwhile. Like Heron's ephemeral node, the
// lock bounds but does not rule out overlap: a paused holder may act for up
// to one TTL after it lost the lock, so TM writes should be idempotent.
//
// Artifacts are content-addressed: PutArtifact stores once per content and
// GetArtifact re-checks the SHA-256. Two processes putting the same new
// content at the same moment may both write it (same bytes, same key); a
// reader racing that replacement can get a read error and should retry.
// Handoff blobs are keyed by the rescale epoch so a retried rescale never
// reads an older epoch's state. Object store values are chunked (128 KiB),
// so their size is bounded only by the server's JetStream limits; KV
// values (topology, state, plans) are bounded by the server's max payload
// (8 MiB for bus.StartServer, 1 MiB for a default nats-server).
//
// Durability: the buckets live in the server's JetStream store directory
// and survive server restarts; Open on existing buckets keeps their data.
package statemgr
