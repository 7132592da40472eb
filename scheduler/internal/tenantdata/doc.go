// Package tenantdata is Ardea's own (not a public API): the tenants' own
// JetStream streams and KV buckets, for their topologies' input and output
// (builtin:stream and builtin:kv: connectors/tenantstream.go,
// connectors/tenantkv.go), and what the API's stream and KV routes do with
// them (it implements httpapi.Streams and httpapi.Buckets).
//
// They live in the tenant's NATS account, made through the daemon's
// connection for the tenant (tenancy.Space.Conn), so a call acts on its
// principal's tenant's streams and buckets only: another tenant's of the
// name is not found, as a missing one. They count against the tenant's
// quota jetstream_disk: the account's limit bounds them all, and each
// one's size is bounded when it is made. A topology's hosts reach the
// streams and buckets it names and no other (natsauth.HostPermissions,
// from TopologyStreams and TopologyKV); at submit, Check refuses a
// topology that names one its tenant does not have, since its hosts may
// not make one.
//
// The daemon (scheduler/daemon) makes one Service over its
// tenancy.Tenants and hands it to the API's handlers; the package links
// neither the daemon, the topology manager nor the API's handlers
// (deps_test.go). Errors carry package api's kinds (api.Errorf), their
// texts what the API answers. A Service is safe for concurrent use and
// starts no goroutine.
package tenantdata
