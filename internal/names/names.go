// Package names holds the one rule for the names Ardea puts into NATS
// subjects, KV keys and object names: topologies, components, streams,
// tenants.
package names

import "strings"

// MaxLen is the longest name accepted.
const MaxLen = 128

// Valid reports whether s is 1..MaxLen letters, digits, '_' or '-'.
func Valid(s string) bool {
	if s == "" || len(s) > MaxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-') {
			return false
		}
	}
	return true
}

// DefaultTenant is the tenant of everything that names none: a plan, a
// state manager, a host, a daemon started without --tenant.
const DefaultTenant = "default"

// Subject is the one builder of Ardea's NATS subjects:
//
//	ardea.<tenant>.<topology>.<tokens...>
//
// Tenant and topology come first so that a tenant's traffic is fenced by
// one permission (ardea.<tenant>.>). An empty tenant means DefaultTenant.
// It does not check the tokens (bus.NewSubjects and the callers'
// validation do).
func Subject(tenant, topology string, tokens ...string) string {
	if tenant == "" {
		tenant = DefaultTenant
	}
	var b strings.Builder
	b.WriteString("ardea.")
	b.WriteString(tenant)
	b.WriteByte('.')
	b.WriteString(topology)
	for _, t := range tokens {
		b.WriteByte('.')
		b.WriteString(t)
	}
	return b.String()
}

// A tenant stream is a JetStream stream a tenant made for its own input
// and output (`ardea stream create NAME`, builtin:stream). It lives in the
// tenant's NATS account, so no other tenant can name it; inside the
// account its stream and subject carry prefixes no bucket of Ardea's uses
// (KV_..., OBJ_..., ardea....), so a name never reaches the daemon's own.
const (
	// TenantStreamPrefix starts the JetStream stream name of a tenant
	// stream.
	TenantStreamPrefix = "STREAM_"
	// TenantSubjectPrefix starts the one subject a tenant stream captures.
	TenantSubjectPrefix = "stream."
)

// TenantStream returns the JetStream stream and the subject of the tenant
// stream name (Valid names only).
func TenantStream(name string) (stream, subject string) {
	return TenantStreamPrefix + name, TenantSubjectPrefix + name
}

// A tenant KV bucket is a JetStream key-value bucket a tenant made for its
// own input and output (`ardea kv create NAME`, builtin:kv). Like a
// tenant stream it lives in the tenant's NATS account; inside the account
// its bucket name carries a prefix none of Ardea's buckets uses (they are
// ardea_..., ardea_checkpoints_...), so a name never reaches the
// daemon's own.
const (
	// TenantKVPrefix starts the JetStream bucket name of a tenant KV
	// bucket: NAME is the bucket tenant_NAME, the stream KV_tenant_NAME
	// with the subjects $KV.tenant_NAME.>.
	TenantKVPrefix = "tenant_"
)

// TenantKV returns the JetStream bucket, its stream and its subject
// prefix (keys follow it: $KV.<bucket>.<key>) of the tenant KV bucket name
// (Valid names only).
func TenantKV(name string) (bucket, stream, subjectPrefix string) {
	bucket = TenantKVPrefix + name
	return bucket, "KV_" + bucket, "$KV." + bucket + "."
}

// A tenant's bolt dead letters (effectively once, a tuple a wasm bolt gave
// up after topology.bolt.max_tuple_rollbacks) go, under the daemon, to one
// JetStream stream of the tenant's NATS account that the daemon makes:
// DeadLetterStream, capturing DeadLetterSubjects. Each dead letter is one
// message on DeadLetterSubject, written once (its subject names the
// tuple's hash). The subjects are under the topology's own
// (ardea.<tenant>.<topology>.>), which only that topology's hosts may
// publish to.
const (
	// DeadLetterStream is the stream (one per tenant account).
	DeadLetterStream = "ARDEA_DLQ"
	// deadLetterToken follows the topology in a dead letter's subject.
	deadLetterToken = "dlq"
)

// DeadLetterSubject is the subject of the dead letter of the tuple hash
// (16 hex digits) of topology's bolt component:
//
//	ardea.<tenant>.<topology>.dlq.<component>.<hash>
//
// With hash "*" or ">" it matches the component's; with component ">"
// (and no hash) the topology's.
func DeadLetterSubject(tenant, topology, component string, hash ...string) string {
	return Subject(tenant, topology, append([]string{deadLetterToken, component}, hash...)...)
}

// TopologyDeadLetters matches every dead letter of topology.
func TopologyDeadLetters(tenant, topology string) string {
	return Subject(tenant, topology, deadLetterToken, ">")
}

// DeadLetterSubjects are the subjects DeadLetterStream captures: every
// topology's of tenant.
func DeadLetterSubjects(tenant string) string { return TopologyDeadLetters(tenant, "*") }
