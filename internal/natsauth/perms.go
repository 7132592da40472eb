package natsauth

import (
	"time"

	"github.com/nats-io/jwt/v2"

	"github.com/ardea-dev/ardea/internal/names"
)

// HostInboxPrefix is the inbox prefix of topology's host users: replies to
// their requests (JetStream API calls, publish acks) and their watches'
// deliveries come on <prefix>.>, the only inbox they may subscribe to.
func HostInboxPrefix(topology string) string { return "_INBOX_" + topology }

// Buckets are tenant's JetStream streams as the state manager
// (scheduler/statemgr: ardea_<tenant>_<kind>) and the checkpoint store
// (scheduler/container/process.CheckpointBucket) name them: key-value
// buckets are streams KV_<bucket>, object stores OBJ_<bucket>.
type Buckets struct {
	Topologies, Plans, State, TMLock string // key-value buckets
	Artifacts, Handoff, Checkpoints  string // object stores
}

// TenantBuckets returns tenant's bucket names.
func TenantBuckets(tenant string) Buckets {
	b := func(kind string) string { return "ardea_" + tenant + "_" + kind }
	return Buckets{Topologies: b("topologies"), Plans: b("plans"), State: b("state"), TMLock: b("tmlock"),
		Artifacts: b("artifacts"), Handoff: b("handoff"), Checkpoints: "ardea_checkpoints_" + tenant}
}

// TenantIO names the tenant's own streams and KV buckets a topology reads
// or writes (builtin:stream, names.TenantStream; builtin:kv,
// names.TenantKV): its hosts' credential reaches those and no other.
type TenantIO struct {
	Streams []string
	KV      []string
}

// HostPermissions are the permissions of a host user of (tenant,
// topology) (package doc, "Credentials"). The host's JetStream use, as
// the state manager and the checkpoint store do it with nats.go's
// jetstream package:
//
//   - binding to the tenant's buckets: stream info of each;
//   - its topology's record and plans: a direct get of the last message on
//     the key's subject ($JS.API.DIRECT.GET.<stream>.<subject>), and the
//     physical plan watch: an ordered consumer whose create request names
//     its filter subject ($JS.API.CONSUMER.CREATE.<stream>.<name>.<filter>),
//     so both are fenced to the topology's keys;
//   - artifacts (read), key-group handoff and checkpoints (read and
//     write): an object's metadata and its chunks by direct gets, or
//     message gets from the leader on a cluster (objread: no consumer), a put publishes chunks and metadata on the
//     bucket's subjects and purges an overwritten object's old chunks;
//   - the tenant streams and KV buckets its topology names (io): see
//     below;
//   - its topology's bolts' dead letters: publishing on its own subjects
//     (names.DeadLetterSubject, captured by the tenant's dead-letter
//     stream), and that stream's info;
//   - deleting the consumers it made (the client deletes its ordered
//     consumer when the plan watch ends; consumer names are random, so
//     this is per stream, not per consumer).
func HostPermissions(tenant, topology string, io TenantIO) jwt.Permissions {
	if tenant == "" {
		tenant = names.DefaultTenant
	}
	b := TenantBuckets(tenant)
	own := names.Subject(tenant, topology, ">")
	inbox := HostInboxPrefix(topology) + ".>"
	const api = "$JS.API."
	kv := func(bucket string) string { return "KV_" + bucket }
	obj := func(bucket string) string { return "OBJ_" + bucket }

	var p jwt.Permissions
	// own covers its topology's bolts' dead letters
	// (names.DeadLetterSubject); of the tenant's dead-letter stream it may
	// read the info only (a refused dead letter names the stream's bound),
	// never another topology's messages.
	p.Pub.Allow.Add(own, api+"STREAM.INFO."+names.DeadLetterStream)
	for _, s := range []string{kv(b.Topologies), kv(b.Plans), kv(b.State), kv(b.TMLock),
		obj(b.Artifacts), obj(b.Handoff), obj(b.Checkpoints)} {
		p.Pub.Allow.Add(api + "STREAM.INFO." + s)
	}
	p.Pub.Allow.Add(
		api+"DIRECT.GET."+kv(b.Topologies)+".$KV."+b.Topologies+"."+topology,
		api+"DIRECT.GET."+kv(b.Plans)+".$KV."+b.Plans+"."+topology+".>",
		api+"CONSUMER.CREATE."+kv(b.Plans)+".*.$KV."+b.Plans+"."+topology+".>",
		api+"CONSUMER.DELETE."+kv(b.Plans)+".*",
	)
	// Object stores: gets of metadata and chunks (objread), direct or,
	// on a cluster, from the stream's leader (jsretry.LeaderObjectStore:
	// a message get names its sequence or subject in its body, which is
	// what a direct get by sequence already reaches); writes where the
	// host writes.
	for _, o := range []string{b.Artifacts, b.Handoff, b.Checkpoints} {
		p.Pub.Allow.Add(
			api+"DIRECT.GET."+obj(o),                 // an object's chunks, by sequence
			api+"DIRECT.GET."+obj(o)+".$O."+o+".M.*", // an object's metadata
			api+"STREAM.MSG.GET."+obj(o),             // either, from the leader
		)
	}
	for _, o := range []string{b.Handoff, b.Checkpoints} {
		p.Pub.Allow.Add("$O."+o+".C.*", "$O."+o+".M.*")
		p.Pub.Allow.Add(api + "STREAM.PURGE." + obj(o))
	}
	// The tenant streams its topology names (builtin:stream,
	// names.TenantStream): publish to them, bind to them, make and use
	// durable pull consumers on them and ack their messages. Never create,
	// update or delete a stream (the tenant does that through the daemon's
	// API, which fixes the stream's configuration), nor touch another
	// stream of the account: NATS wildcards are whole tokens, so each
	// stream is named.
	for _, name := range io.Streams {
		if !names.Valid(name) {
			continue
		}
		st, subject := names.TenantStream(name)
		p.Pub.Allow.Add(
			subject,
			api+"STREAM.INFO."+st,
			api+"CONSUMER.CREATE."+st+".>",
			api+"CONSUMER.INFO."+st+".*",
			api+"CONSUMER.MSG.NEXT."+st+".*",
			"$JS.ACK."+st+".>",
		)
	}
	// The tenant KV buckets its topology names (builtin:kv,
	// names.TenantKV): bind to them (stream info), write their keys (a put,
	// a delete or purge marker: publishes on $KV.<bucket>.<key>), and
	// follow them through durable pull consumers on their streams, acking
	// the updates. Never create, update, purge or delete a bucket, nor
	// read another bucket of the account.
	for _, name := range io.KV {
		if !names.Valid(name) {
			continue
		}
		_, st, keys := names.TenantKV(name)
		p.Pub.Allow.Add(
			keys+">",
			api+"STREAM.INFO."+st,
			api+"CONSUMER.CREATE."+st+".>",
			api+"CONSUMER.INFO."+st+".*",
			api+"CONSUMER.MSG.NEXT."+st+".*",
			"$JS.ACK."+st+".>",
		)
	}
	p.Sub.Allow.Add(own, inbox)
	// Replies to the daemon's control requests (to its inbox): one per
	// request received, within a minute.
	p.Resp = &jwt.ResponsePermission{MaxMsgs: 1, Expires: time.Minute}
	return p
}
