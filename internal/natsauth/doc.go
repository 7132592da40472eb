// Package natsauth isolates tenants on the embedded NATS server: it runs
// the server in operator mode (decentralized JWT authentication) and
// issues the accounts and the user credentials Ardea's processes connect
// with.
//
// # Why operator mode with JWTs
//
// NATS offers two ways to give each tenant its own account: a static
// account configuration (accounts { A: { users: [...] } }) reloaded on
// every change, or operator mode, where the server trusts one operator
// key and every account and user is a JWT chained to it. Operator mode is
// what NATS itself recommends for multi-tenant deployments (Synadia's
// hosted NATS runs on it), and it fits Ardea's needs without a reload:
//
//   - accounts are added and changed at run time (a new tenant, new
//     JetStream limits, a revocation) by putting the account JWT into the
//     server's in-memory resolver (resolver, not a server.MemAccResolver: see resolver.go) and, for an
//     account the server already loaded, UpdateAccountClaims; a reload of
//     a static configuration would touch every connection;
//   - a user credential is a signed JWT carrying its own permissions, so
//     the daemon issues one per host process without telling the server,
//     and the server checks it at CONNECT (the client signs the server's
//     nonce with the user's seed, so a copied JWT alone is useless);
//   - revocation is part of the account JWT: RevokeHost adds the host
//     users' public keys, and the server drops their connections at once
//     and refuses their reconnects;
//   - JetStream limits (memory, disk, streams, consumers) are part of the
//     account JWT, and each account's JetStream lives in its own directory
//     under the store dir (<store>/jetstream/<account public key>), so a
//     tenant's buckets are invisible to the others' $JS.API.
//
// # Keys and the accounts
//
// Manager keeps, under its directory (mode 0700, one state file of mode
// 0600, written atomically): the operator's seed, the system account's
// seed, the "ardea" account's seed (the daemon's own things, e.g. an
// audit stream), and per tenant its account seed, JetStream limits,
// revocations and the host users issued per topology. Account keys are
// persisted so that a restarted daemon finds each tenant's JetStream data
// again (it is stored under the account's public key). User keys are not:
// a credential is issued when a process needs it. A tenant removed and
// created again gets a new account (and none of the old one's data).
//
// The system account ($SYS) has no JetStream and no credential is issued
// for it. No account imports or exports anything, so no subject crosses
// between accounts.
//
// # Credentials
//
// DaemonCreds(tenant): a user of the tenant's account without permission
// limits. The daemon manages the tenant's buckets with it and talks to the
// tenant's hosts (control subjects, replies). AdminCreds: the same in the
// "ardea" account.
//
// HostCreds(tenant, topology, io): a fresh user key per call, with
//
//   - publish and subscribe on ardea.<tenant>.<topology>.> (its data,
//     credit, ack and control subjects, internal/names.Subject);
//   - subscribe on its own inbox prefix _INBOX_<topology>.> (HostInboxPrefix;
//     the host's client must use nats.CustomInboxPrefix, ClientOptions does)
//     and nothing else, so it cannot read the daemon's or another
//     topology's inboxes;
//   - publishing a reply to a request it received (allow_responses, one
//     reply per request): the daemon's control requests reply to the
//     daemon's own inbox;
//   - the JetStream API of its tenant's buckets only, as narrow as the
//     host's reads and writes allow (HostPermissions lists them): stream
//     info of the tenant's buckets; direct gets of its own topology's keys
//     in the topologies and plans buckets; a watch (consumer create with a
//     filter subject) only on its own plan keys; reading artifacts; reading
//     and writing the handoff and checkpoint object stores (their chunk
//     subjects are random, so not per topology). No stream create, update,
//     delete, restore or purge but for the object stores it writes (an
//     object store overwrite purges the old chunks): only the daemon
//     manages buckets, so a host binds to existing buckets
//     (statemgr.Options.Bind, checkpoint.JetStreamOptions.Bind).
//   - HostCreds(tenant, topology, io): the tenant streams and KV buckets
//     its topology names (builtin:stream, names.TenantStream; builtin:kv,
//     names.TenantKV), each by its own subjects: publish (a bucket's
//     keys), stream info, durable consumers, next message and acks; never
//     a stream or bucket create, update, purge or delete.
//   - its topology's bolts' dead letters: on its own subjects
//     (names.DeadLetterSubject), captured by the tenant's dead-letter
//     stream (names.DeadLetterStream, made by the daemon), and that
//     stream's info; not its messages.
//   - HostCreds(tenant, topology, streams...): the tenant streams its
//     topology names (builtin:stream, names.TenantStream), each by its own
//     subjects: publish, stream info, durable consumers, next message and
//     acks; never a stream create, update, purge or delete.
//
// What stays shared inside a tenant: the artifacts (content-addressed
// modules: every host of the tenant may read every artifact), the handoff
// and checkpoint object stores (object names carry the topology, but the
// chunk subjects do not, so a host could read or overwrite another
// topology's objects of the same tenant), the consumers it creates on those
// object stores (their deliver subject is not checked by the server), and
// stream info (sizes, counts) of the tenant's buckets. Everything of another
// tenant, $SYS and the "ardea" account is out of reach: a different account
// is a different subject space, and the permissions fence a host into one
// topology's subjects.
//
// # Handing a credential to a process
//
// Never on a command line: WriteCreds writes the standard NATS creds file
// (JWT and seed) with mode 0600, and the process finds it through the
// environment (EnvCreds holds the file's path; EnvCredsData the content,
// for callers that cannot write a file). ClientOptionsFromEnv turns that
// into nats.Options; with neither variable set it returns none, and the
// client connects as before (a server without operator mode).
//
// # Server
//
// ServerAccounts returns the bus.Accounts for bus.ServerOptions: the
// operator, the system account and the resolver holding every account
// JWT. After the server started, Attach(server) lets the Manager push
// later account changes to it.
//
// # A cluster's nodes
//
// OpenShared opens a Manager for a node of a cluster (`ardea server`):
// the operator's, the system account's and the "ardea" account's keys are
// derived from the cluster's Secret (HKDF-SHA256, one label each), so
// every node trusts the same operator without copying keys, and nothing
// secret is written; the routes' password (Secret.RoutePassword) and
// the CA of the routes' TLS (Secret.RouteCA, bus.RouteCA) come from the
// same secret. Share then keeps the tenants' accounts in the
// replicated bucket AccountsBucket (the "ardea" account) instead of the
// state file: every change is a compare-and-set on the tenant's key,
// and a watch applies what any node writes to this node's server (a
// tenant made elsewhere connects here, a revocation made elsewhere drops
// the credential here). A tenant's JetStream limits are multiplied by
// the replicas, since every replica counts against the account.
//
// # Use
//
//	m, _ := natsauth.Open(filepath.Join(dataDir, "nats-auth"))
//	m.AddTenant("default", natsauth.Limits{})   // and each tenant; again to change limits
//	srv, _ := bus.StartServer(ctx, bus.ServerOptions{..., Accounts: m.ServerAccounts()})
//	m.Attach(srv.NATS())
//	dc, _ := m.DaemonCreds(tenant)              // the daemon's connection for that tenant
//	nc, _ := nats.Connect(url, dc.Options()...)
//	hc, _ := m.HostCreds(tenant, topology, io)  // per host process start
//	natsauth.WriteCreds(path, hc)               // 0600
//	env = append(env, natsauth.Env(path, hc)...) // the host reads it (ClientOptionsFromEnv)
//	m.RevokeHost(tenant, topology)              // when the topology is killed
//	m.Usage(tenant)                             // JetStream usage against the limits
//	m.RemoveTenant(tenant)
package natsauth
