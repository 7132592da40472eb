package tenancy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/internal/jsretry"
	"github.com/ardea-dev/ardea/internal/natsauth"
	"github.com/ardea-dev/ardea/internal/quota"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/runtime"
)

// A tenant's NATS account and CPU cgroup, and its hosts' credentials:
// with process containers the embedded NATS server runs in operator
// mode, one account per tenant (its JetStream limits from its quotas), and
// every client needs a credential; a host's reaches its topology's
// subjects only (natsauth.HostPermissions).

// OpenAccounts starts NATS's accounts (operator mode), the default
// tenant's made: the manager keeps its keys under the data dir. It
// returns what the embedded server starts with (bus.ServerOptions).
//
// A node of a cluster (Options.Secret) derives the fixed keys from the
// secret and makes no tenant yet: ShareAccounts, once connected, does.
func (ts *Tenants) OpenAccounts() (*bus.Accounts, error) {
	dir := filepath.Join(ts.o.DataDir, "nats-auth")
	if !ts.o.Secret.IsZero() {
		m, err := natsauth.OpenShared(dir, ts.o.Secret, ts.o.Replicas)
		if err != nil {
			return nil, fmt.Errorf("server: NATS accounts: %w", err)
		}
		ts.accounts = m
		return m.ServerAccounts(), nil
	}
	m, err := natsauth.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("local: NATS accounts: %w", err)
	}
	if err := m.AddTenant(ts.o.Default, natsauth.Limits{}); err != nil {
		return nil, fmt.Errorf("local: NATS account of tenant %s: %w", ts.o.Default, err)
	}
	ts.accounts = m
	return m.ServerAccounts(), nil
}

// ShareAccounts makes a cluster node's tenants' accounts the cluster's
// (natsauth.AccountsBucket, in the "ardea" account, Replicas copies) and
// makes the default tenant's if no node has. JetStream's meta group may
// still be electing its leader when the nodes have just started: the
// bucket is asked for again until ctx ends. Nothing for a daemon alone.
func (ts *Tenants) ShareAccounts(ctx context.Context) error {
	m := ts.accounts
	if m == nil || ts.o.Secret.IsZero() {
		return nil
	}
	js, err := jetstream.New(ts.nc)
	if err != nil {
		return err
	}
	kv, err := jsretry.EnsureKeyValue(ctx, js, jetstream.KeyValueConfig{Bucket: natsauth.AccountsBucket,
		Description: "Ardea: the tenants' NATS accounts, shared by the cluster's nodes", History: 1,
		Storage: jetstream.FileStorage, Replicas: ts.o.Replicas})
	// Direct reads (any replica): a stale read only fails a
	// compare-and-set, which natsauth retries.
	if err != nil {
		return fmt.Errorf("server: NATS accounts bucket: %w", err)
	}
	if ts.o.OnTenant != nil {
		m.OnTenant(ts.o.OnTenant)
	}
	// Asked again while the cluster elects (Share applies nothing twice).
	if _, err := jsretry.RetryUnavailable(ctx, 10*time.Second, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, m.Share(ctx, kv, ts.log)
	}); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if err := m.AddTenant(ts.o.Default, natsauth.Limits{}); err != nil {
		return fmt.Errorf("server: NATS account of tenant %s: %w", ts.o.Default, err)
	}
	return nil
}

// Accounts is the NATS accounts' manager (nil: NATS without accounts, in
// process).
func (ts *Tenants) Accounts() *natsauth.Manager { return ts.accounts }

// Connect attaches the accounts (if any) to the started server and
// connects the daemon's own connection: the "ardea" account's user with
// accounts, else an unauthenticated in-process one. Spaces connect to srv
// from now on; the connection is the caller's to close (after
// CloseSpaces).
func (ts *Tenants) Connect(srv *bus.Server) (*nats.Conn, error) {
	ts.srv = srv
	if ts.accounts != nil {
		ts.accounts.Attach(srv.NATS())
	}
	opts := []nats.Option{nats.Name("ardea-local"), nats.InProcessServer(srv.NATS())}
	if m := ts.accounts; m != nil {
		c, err := m.AdminCreds()
		if err != nil {
			return nil, err
		}
		opts = append(opts, c.Options()...)
	}
	nc, err := nats.Connect(srv.ClientURL(), opts...)
	if err != nil {
		return nil, err
	}
	ts.nc = nc
	return nc, nil
}

// tenantConn connects the daemon for tenant: its account's daemon user,
// made first if the tenant has no account yet (with its quota's JetStream
// limits).
func (ts *Tenants) tenantConn(ctx context.Context, tenant string) (*nats.Conn, error) {
	m := ts.accounts
	if err := m.AddTenant(tenant, ts.JetStreamLimits(ctx, tenant)); err != nil {
		return nil, err
	}
	c, err := m.DaemonCreds(tenant)
	if err != nil {
		return nil, err
	}
	return nats.Connect(ts.srv.ClientURL(), append(c.Options(), nats.Name("ardea-local-"+tenant), nats.InProcessServer(ts.srv.NATS()))...)
}

// JetStreamLimits are tenant's account limits from its quotas (none
// without quotas, or when they cannot be read: that is logged).
func (ts *Tenants) JetStreamLimits(ctx context.Context, tenant string) natsauth.Limits {
	if ts.quotas == nil {
		return natsauth.Limits{}
	}
	q, err := ts.quotas.For(ctx, tenant)
	if err != nil {
		ts.log.Warn("quotas of tenant", "tenant", tenant, "err", err)
		return natsauth.Limits{}
	}
	return natsauth.Limits{MemoryBytes: q.JetStreamMemory, DiskBytes: q.JetStreamDisk}
}

// removeAccount removes a deleted tenant's NATS account and CPU cgroup.
func (ts *Tenants) removeAccount(tenant string) {
	if m := ts.accounts; m != nil {
		if err := m.RemoveTenant(tenant); err != nil && !errors.Is(err, natsauth.ErrNoTenant) {
			ts.log.Error("remove the tenant's NATS account", "tenant", tenant, "err", err)
		}
	}
	if ts.cgroups != nil {
		if err := ts.cgroups.RemoveTenant(tenant); err != nil {
			ts.log.Warn("remove the tenant's CPU cgroup", "tenant", tenant, "err", err)
		}
	}
}

// HostCreds issues a host of t (its container's id: id) its NATS
// credential (t's tenant's account, io: the tenant streams and KV
// buckets its topology names) in a 0600 file, and returns the
// environment that hands it to the host (never its command line). No
// accounts: none. The daemon calls it through the manager's
// IssueCredential, which orders it against RevokeHosts.
func (ts *Tenants) HostCreds(t Topology, id string, io natsauth.TenantIO) ([]string, error) {
	cr, ok, err := ts.IssueHostCreds(t, io)
	if err != nil || !ok {
		return nil, err
	}
	return ts.WriteHostCreds(id, cr)
}

// IssueHostCreds issues a NATS credential for a host of t (ok false: the
// bus has no accounts, hosts connect without one).
func (ts *Tenants) IssueHostCreds(t Topology, io natsauth.TenantIO) (natsauth.Creds, bool, error) {
	m := ts.accounts
	if m == nil {
		return natsauth.Creds{}, false, nil
	}
	cr, err := m.HostCreds(t.Tenant(), t.Name(), io)
	if err != nil {
		return natsauth.Creds{}, false, fmt.Errorf("topology %s: NATS credential: %w", t.Name(), err)
	}
	return cr, true, nil
}

// WriteHostCreds writes container id's credential in a 0600 file of this
// node and returns the host's environment naming it.
func (ts *Tenants) WriteHostCreds(id string, cr natsauth.Creds) ([]string, error) {
	dir := filepath.Join(ts.o.DataDir, "creds")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, runtime.File(id)+".creds")
	if err := natsauth.WriteCreds(path, cr); err != nil {
		return nil, err
	}
	return natsauth.Env(path, cr), nil
}

// RevokeHostUsers revokes the credentials of t's hosts issued to users
// (a container moved off a lost node: placement).
func (ts *Tenants) RevokeHostUsers(tenant, topology string, users ...string) error {
	if ts.accounts == nil || len(users) == 0 {
		return nil
	}
	return ts.accounts.RevokeHostUsers(tenant, topology, users...)
}

// RevokeHosts revokes every NATS credential issued to t's hosts and
// removes their files: once a topology is killed, FINISHED or FAILED (a
// terminal state, no host of it runs again), a credential of its hosts
// can no longer connect.
func (ts *Tenants) RevokeHosts(t Topology) {
	m := ts.accounts
	if m == nil {
		return
	}
	if err := m.RevokeHost(t.Tenant(), t.Name()); err != nil {
		t.Log().Error("revoke the hosts' NATS credentials", "err", err)
	}
	matches, _ := filepath.Glob(filepath.Join(ts.o.DataDir, "creds", runtime.File(runtime.Prefix(t.Tenant(), t.Name()))+"*.creds"))
	for _, f := range matches {
		_ = os.Remove(f)
	}
}

// SecureHost gives a host process of t what its tenant's quotas ask: its
// share of the tenant's bus rates (flags) and the tenant's CPU cgroup.
// The share counts t's containers even before its manager is registered
// (a topology being submitted).
func (ts *Tenants) SecureHost(ctx context.Context, t Topology, spec *launcher.ProcessSpec) error {
	if err := ts.HostRates(ctx, t, spec); err != nil {
		return err
	}
	return ts.HostCgroup(ctx, t.Tenant(), spec)
}

// HostRates adds to spec the flags of a host of t's share of its
// tenant's bus rates (the topology manager's part of SecureHost).
func (ts *Tenants) HostRates(ctx context.Context, t Topology, spec *launcher.ProcessSpec) error {
	if ts.quotas == nil {
		return nil
	}
	tenant := t.Tenant()
	q, err := ts.quotas.For(ctx, tenant)
	if err != nil {
		return fmt.Errorf("topology %s: quotas of tenant %s: %w", t.Name(), tenant, err)
	}
	if q.TuplesPerSecond > 0 || q.BytesPerSecond > 0 {
		u, err := ts.Usage(ctx, tenant)
		if err != nil {
			return err
		}
		n := int(u.Containers)
		if !ts.counted(t) { // a topology being submitted: its containers count too
			f, _ := t.Footprint()
			n += f.Containers
		}
		n = max(n, 1)
		tps, bps := quota.ContainerRates(q, n)
		spec.Args = append(spec.Args, "--max-tuples-per-second", strconv.FormatFloat(tps, 'f', -1, 64),
			"--max-bytes-per-second", strconv.FormatFloat(bps, 'f', -1, 64))
	}
	return nil
}

// HostCgroup puts a host of tenant into the tenant's CPU cgroup on this
// node, if its quotas limit CPU (the part of SecureHost of the node that
// runs the host).
func (ts *Tenants) HostCgroup(ctx context.Context, tenant string, spec *launcher.ProcessSpec) error {
	if ts.quotas == nil || ts.cgroups == nil {
		return nil
	}
	q, err := ts.quotas.For(ctx, tenant)
	if err != nil {
		return fmt.Errorf("quotas of tenant %s: %w", tenant, err)
	}
	if q.CPU > 0 {
		sl, err := ts.cgroups.Tenant(tenant, q.CPU)
		if err != nil {
			return fmt.Errorf("CPU cgroup of tenant %s: %w", tenant, err)
		}
		spec.Cgroup = sl
	}
	return nil
}

// counted says whether t is among its tenant's registered topologies.
func (ts *Tenants) counted(t Topology) bool {
	if ts.o.Topologies == nil {
		return false
	}
	for _, o := range ts.o.Topologies.Of(t.Tenant()) {
		if o == t {
			return true
		}
	}
	return false
}

// OpenCgroups sets up the tenants' CPU cgroups (process containers with
// an API: the quotas' cpu).
func (ts *Tenants) OpenCgroups() {
	ts.cgroups = launcher.NewCgroups(launcher.CgroupOptions{Logger: ts.log, Root: cgroupRoot(ts.o.DataDir)})
}

// CloseCgroups removes the tenants' CPU cgroups (after their processes
// stopped).
func (ts *Tenants) CloseCgroups() error {
	if ts.cgroups == nil {
		return nil
	}
	return ts.cgroups.Close()
}

// CPUQuotas reports how tenants' CPU quotas are enforced: the cgroup
// version in use (1 or 2), or 0 with the reason they are not.
func (ts *Tenants) CPUQuotas() (version int, reason string) {
	return ts.cgroups.Version(), ts.cgroups.Reason()
}

// cgroupRoot is the cgroup this daemon makes its tenants' CPU cgroups
// under: ardea/<a digest of its data dir>. Two daemons on one machine
// (two data dirs) neither share a tenant's CPU quota nor remove each
// other's cgroups when they stop; the same daemon started again reuses
// its own.
func cgroupRoot(dataDir string) string {
	if abs, err := filepath.Abs(dataDir); err == nil {
		dataDir = abs
	}
	sum := sha256.Sum256([]byte(dataDir))
	return launcher.DefaultCgroupRoot + "/d-" + hex.EncodeToString(sum[:6])
}
