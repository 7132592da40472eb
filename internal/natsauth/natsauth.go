package natsauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/ardea-dev/ardea/bus"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/names"
)

// AdminAccount is the name of the daemon's own account (not a tenant's).
const AdminAccount = "ardea"

// stateFile is the Manager's state under its directory.
const stateFile = "natsauth.json"

// Errors (wrapped with the name). Test with errors.Is.
var (
	// ErrNoTenant: the tenant has no account (AddTenant first).
	ErrNoTenant = errors.New("no such tenant account")
	// ErrInvalid: a tenant or topology name is malformed.
	ErrInvalid = errors.New("invalid name")
)

// Limits are a tenant account's JetStream limits. -1 is unlimited; 0
// takes the default (unlimited). JetStream is always enabled for a tenant.
type Limits struct {
	MemoryBytes int64 `json:"memory_bytes"`
	DiskBytes   int64 `json:"disk_bytes"`
	Streams     int64 `json:"streams"`
	Consumers   int64 `json:"consumers"`
}

// times is l with its byte limits n times larger (n copies of each
// stream; 0 or 1: as they are).
func (l Limits) times(n int) Limits {
	if n > 1 {
		if l.MemoryBytes > 0 {
			l.MemoryBytes *= int64(n)
		}
		if l.DiskBytes > 0 {
			l.DiskBytes *= int64(n)
		}
	}
	return l
}

func (l Limits) jetStream() jwt.JetStreamLimits {
	def := func(v int64) int64 {
		if v == 0 {
			return jwt.NoLimit
		}
		return v
	}
	return jwt.JetStreamLimits{MemoryStorage: def(l.MemoryBytes), DiskStorage: def(l.DiskBytes),
		Streams: def(l.Streams), Consumer: def(l.Consumers)}
}

// Manager owns the operator, the system account, the "ardea" account and
// one account per tenant (see the package doc). Its methods are safe for
// concurrent use; changes are persisted before they are pushed to the
// server.
type Manager struct {
	dir      string
	resolver *resolver

	mu       sync.Mutex
	st       state
	operator nkeys.KeyPair
	opClaims *jwt.OperatorClaims
	sys      nkeys.KeyPair
	admin    nkeys.KeyPair
	tenants  map[string]nkeys.KeyPair
	srv      *server.Server
	// shared: the tenants' accounts live in a bucket every node of a
	// cluster shares (Share), not in the state file; revs is the bucket
	// revision each tenant's state was applied at.
	shared *sharedAccounts
	revs   map[string]uint64
	// derived: the operator's and the two fixed accounts' keys come from
	// a cluster secret (OpenShared): nothing of them is written.
	derived bool
	// replicas multiplies the tenants' JetStream limits (OpenShared).
	replicas int
	// onTenant hears tenants new to this node (OnTenant).
	onTenant func(string)
}

// state is the persisted part (stateFile).
type state struct {
	Operator string                  `json:"operator_seed"`
	System   string                  `json:"system_seed"`
	Admin    string                  `json:"admin_seed"`
	Tenants  map[string]*tenantState `json:"tenants"`
}

type tenantState struct {
	Seed   string `json:"seed"`
	Limits Limits `json:"limits"`
	// Revoked: user public key -> unix seconds of its revocation.
	Revoked map[string]int64 `json:"revoked,omitempty"`
	// Hosts: topology -> the host users issued for it and not yet revoked.
	Hosts map[string][]string `json:"hosts,omitempty"`
}

// Open loads the keys and accounts kept under dir, creating dir (0700)
// and new keys on first use.
func Open(dir string) (*Manager, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("natsauth: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("natsauth: %w", err)
	}
	m := newManager(dir)
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := m.create(); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("natsauth: %w", err)
	default:
		if err := json.Unmarshal(b, &m.st); err != nil {
			return nil, fmt.Errorf("natsauth: %s: %w", filepath.Join(dir, stateFile), err)
		}
	}
	if m.st.Tenants == nil {
		m.st.Tenants = map[string]*tenantState{}
	}
	if m.operator, err = keyFrom(m.st.Operator, "operator"); err != nil {
		return nil, err
	}
	if m.sys, err = keyFrom(m.st.System, "system account"); err != nil {
		return nil, err
	}
	if m.admin, err = keyFrom(m.st.Admin, "ardea account"); err != nil {
		return nil, err
	}
	for t, ts := range m.st.Tenants {
		if m.tenants[t], err = keyFrom(ts.Seed, "tenant "+t); err != nil {
			return nil, err
		}
	}
	if err := m.init(); err != nil {
		return nil, err
	}
	return m, nil
}

func newManager(dir string) *Manager {
	return &Manager{dir: dir, resolver: newResolver(), tenants: map[string]nkeys.KeyPair{},
		revs: map[string]uint64{}, st: state{Tenants: map[string]*tenantState{}}}
}

// init signs the operator and puts the accounts known so far into the
// resolver.
func (m *Manager) init() error {
	opPub, _ := m.operator.PublicKey()
	sysPub, _ := m.sys.PublicKey()
	m.opClaims = jwt.NewOperatorClaims(opPub)
	m.opClaims.Name = "ardea"
	m.opClaims.SystemAccount = sysPub
	// The server takes the decoded claims; encoding checks them.
	if _, err := m.opClaims.Encode(m.operator); err != nil {
		return fmt.Errorf("natsauth: operator JWT: %w", err)
	}
	sysClaims := jwt.NewAccountClaims(sysPub)
	sysClaims.Name = "SYS"
	if err := m.store(sysClaims); err != nil {
		return err
	}
	if err := m.store(m.adminClaims()); err != nil {
		return err
	}
	for t := range m.st.Tenants {
		if err := m.store(m.tenantClaims(t)); err != nil {
			return err
		}
	}
	return nil
}

func (m *Manager) create() error {
	var seeds [3]string
	for i, mk := range []func() (nkeys.KeyPair, error){nkeys.CreateOperator, nkeys.CreateAccount, nkeys.CreateAccount} {
		kp, err := mk()
		if err != nil {
			return fmt.Errorf("natsauth: %w", err)
		}
		seed, _ := kp.Seed()
		seeds[i] = string(seed)
	}
	m.st = state{Operator: seeds[0], System: seeds[1], Admin: seeds[2], Tenants: map[string]*tenantState{}}
	return m.save()
}

func keyFrom(seed, what string) (nkeys.KeyPair, error) {
	kp, err := nkeys.FromSeed([]byte(seed))
	if err != nil {
		return nil, fmt.Errorf("natsauth: the %s key: %w", what, err)
	}
	return kp, nil
}

// save writes the state atomically with mode 0600. Lock held (or not yet shared).
func (m *Manager) save() error {
	if m.derived {
		// A cluster's node: tenants live in the shared bucket (Share).
		return nil
	}
	b, err := json.MarshalIndent(&m.st, "", "  ")
	if err != nil {
		return fmt.Errorf("natsauth: %w", err)
	}
	if err := auth.WriteSecretFile(filepath.Join(m.dir, stateFile), b); err != nil {
		return fmt.Errorf("natsauth: %w", err)
	}
	return nil
}

func (m *Manager) adminClaims() *jwt.AccountClaims {
	pub, _ := m.admin.PublicKey()
	ac := jwt.NewAccountClaims(pub)
	ac.Name = AdminAccount
	ac.Limits.JetStreamLimits = Limits{}.jetStream()
	ac.Limits.DisallowBearer = true
	return ac
}

// tenantClaims builds tenant t's account JWT claims. Lock held.
func (m *Manager) tenantClaims(t string) *jwt.AccountClaims {
	ts := m.st.Tenants[t]
	pub, _ := m.tenants[t].PublicKey()
	ac := jwt.NewAccountClaims(pub)
	ac.Name = t
	ac.Limits.JetStreamLimits = ts.Limits.times(m.replicas).jetStream()
	ac.Limits.DisallowBearer = true
	for k, at := range ts.Revoked {
		ac.RevokeAt(k, time.Unix(at, 0))
	}
	return ac
}

// store signs the account claims with the operator key and puts them into
// the resolver; with a server attached, an account it already loaded is
// updated in place (limits, revocations: revoked users are disconnected).
// Lock held.
func (m *Manager) store(ac *jwt.AccountClaims) error {
	token, err := ac.Encode(m.operator)
	if err != nil {
		return fmt.Errorf("natsauth: account %s JWT: %w", ac.Name, err)
	}
	if err := m.resolver.Store(ac.Subject, token); err != nil {
		return fmt.Errorf("natsauth: account %s: %w", ac.Name, err)
	}
	if m.srv == nil {
		return nil
	}
	// Decode again: the server keeps the claims as signed.
	claims, err := jwt.DecodeAccountClaims(token)
	if err != nil {
		return fmt.Errorf("natsauth: account %s JWT: %w", ac.Name, err)
	}
	// LookupAccount loads an account the server does not know yet (from
	// the resolver, with these claims); updating it once more is a no-op.
	acc, err := m.srv.LookupAccount(ac.Subject)
	if err != nil {
		return fmt.Errorf("natsauth: account %s on the server: %w", ac.Name, err)
	}
	m.srv.UpdateAccountClaims(acc, claims)
	return nil
}

// ServerAccounts is the operator mode for bus.ServerOptions.Accounts.
func (m *Manager) ServerAccounts() *bus.Accounts {
	sysPub, _ := m.sys.PublicKey()
	return &bus.Accounts{Operator: m.opClaims, SystemAccount: sysPub, Resolver: m.resolver}
}

// Attach makes later account changes (limits, revocations) take effect on
// the running server at once. Call it after bus.StartServer with
// ServerAccounts.
func (m *Manager) Attach(s *server.Server) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.srv = s
}

// AddTenant creates tenant's account with these JetStream limits, or sets
// the limits of an existing one. It is idempotent.
func (m *Manager) AddTenant(tenant string, l Limits) error {
	if !names.Valid(tenant) {
		return fmt.Errorf("natsauth: tenant %q: %w", tenant, ErrInvalid)
	}
	return m.mutate(tenant, func(ts *tenantState) (*tenantState, error) {
		if ts == nil {
			kp, err := nkeys.CreateAccount()
			if err != nil {
				return nil, fmt.Errorf("natsauth: tenant %s: %w", tenant, err)
			}
			seed, _ := kp.Seed()
			ts = &tenantState{Seed: string(seed)}
		}
		ts.Limits = l
		return ts, nil
	})
}

// RemoveTenant revokes every user of tenant's account (their connections
// are dropped) and forgets the account. Its JetStream files stay under the
// store dir (<store>/jetstream/<account key>) for the operator to remove.
func (m *Manager) RemoveTenant(tenant string) error {
	// Every JWT issued up to now; a second later so that one issued in
	// this second is covered too (the account is gone afterwards anyway).
	err := m.mutate(tenant, func(ts *tenantState) (*tenantState, error) {
		if ts == nil {
			return nil, fmt.Errorf("natsauth: tenant %q: %w", tenant, ErrNoTenant)
		}
		if ts.Revoked == nil {
			ts.Revoked = map[string]int64{}
		}
		ts.Revoked[jwt.All] = nowPlusSecond()
		return ts, nil
	})
	if err != nil {
		return err
	}
	return m.mutate(tenant, func(*tenantState) (*tenantState, error) { return nil, nil })
}

// Tenants lists the tenants that have an account, sorted.
func (m *Manager) Tenants() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.st.Tenants))
}

// AccountKey is tenant's account public key (its JetStream directory name).
func (m *Manager) AccountKey(tenant string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	kp := m.tenants[tenant]
	if kp == nil {
		return "", fmt.Errorf("natsauth: tenant %q: %w", tenant, ErrNoTenant)
	}
	return kp.PublicKey()
}

// DaemonCreds issues a user of tenant's account without permission limits:
// the daemon's connection for that tenant (its buckets, its hosts'
// control subjects).
func (m *Manager) DaemonCreds(tenant string) (Creds, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	kp := m.tenants[tenant]
	if kp == nil {
		return Creds{}, fmt.Errorf("natsauth: tenant %q: %w", tenant, ErrNoTenant)
	}
	return issue(kp, "daemon", nil, "")
}

// AdminCreds issues a user of the "ardea" account without permission
// limits (the daemon's own streams, e.g. the audit log).
func (m *Manager) AdminCreds() (Creds, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return issue(m.admin, "daemon", nil, "")
}

// HostCreds issues a fresh host user for (tenant, topology) with
// HostPermissions, and records it so that RevokeHost can revoke it.
// io names the tenant streams and KV buckets the topology reads or writes
// (builtin:stream, builtin:kv); the credential reaches those only.
func (m *Manager) HostCreds(tenant, topology string, io TenantIO) (Creds, error) {
	if !names.Valid(topology) {
		return Creds{}, fmt.Errorf("natsauth: topology %q: %w", topology, ErrInvalid)
	}
	m.mu.Lock()
	kp := m.tenants[tenant]
	m.mu.Unlock()
	if kp == nil {
		return Creds{}, fmt.Errorf("natsauth: tenant %q: %w", tenant, ErrNoTenant)
	}
	perms := HostPermissions(tenant, topology, io)
	c, err := issue(kp, "host:"+topology, &perms, HostInboxPrefix(topology))
	if err != nil {
		return Creds{}, err
	}
	err = m.mutate(tenant, func(ts *tenantState) (*tenantState, error) {
		if ts == nil {
			return nil, fmt.Errorf("natsauth: tenant %q: %w", tenant, ErrNoTenant)
		}
		if ts.Hosts == nil {
			ts.Hosts = map[string][]string{}
		}
		ts.Hosts[topology] = append(ts.Hosts[topology], c.User)
		return ts, nil
	})
	if err != nil {
		return Creds{}, err
	}
	return c, nil
}

// RevokeHost revokes every host credential issued for (tenant, topology):
// the server drops their connections and refuses them from now on. Call
// it when the topology is killed. Credentials issued later are valid.
func (m *Manager) RevokeHost(tenant, topology string) error {
	return m.mutate(tenant, func(ts *tenantState) (*tenantState, error) {
		if ts == nil {
			return nil, fmt.Errorf("natsauth: tenant %q: %w", tenant, ErrNoTenant)
		}
		users := ts.Hosts[topology]
		if len(users) == 0 {
			return ts, nil
		}
		if ts.Revoked == nil {
			ts.Revoked = map[string]int64{}
		}
		// The server revokes a user's JWTs issued at or before the time;
		// each host user has its own key, so a later one is not affected.
		now := time.Now().Unix()
		for _, u := range users {
			ts.Revoked[u] = now
		}
		delete(ts.Hosts, topology)
		return ts, nil
	})
}

// RevokeHostUsers revokes the host credentials of tenant's topology whose
// users (Creds.User, public keys) are users, and only those: a container
// moved off a node that is lost cannot connect with its old credential
// when the node comes back, while its replacement's credential and the
// other containers' keep working. Users not issued for the topology are
// ignored.
func (m *Manager) RevokeHostUsers(tenant, topology string, users ...string) error {
	return m.mutate(tenant, func(ts *tenantState) (*tenantState, error) {
		if ts == nil {
			return nil, fmt.Errorf("natsauth: tenant %q: %w", tenant, ErrNoTenant)
		}
		hosts := ts.Hosts[topology]
		kept := hosts[:0:0]
		now := time.Now().Unix()
		for _, u := range hosts {
			if !slices.Contains(users, u) {
				kept = append(kept, u)
				continue
			}
			if ts.Revoked == nil {
				ts.Revoked = map[string]int64{}
			}
			ts.Revoked[u] = now
		}
		if len(kept) == len(hosts) {
			return ts, nil
		}
		ts.Hosts[topology] = kept
		return ts, nil
	})
}

// issue creates a user key and its JWT signed by account.
func issue(account nkeys.KeyPair, name string, perms *jwt.Permissions, inbox string) (Creds, error) {
	ukp, err := nkeys.CreateUser()
	if err != nil {
		return Creds{}, fmt.Errorf("natsauth: %w", err)
	}
	upub, _ := ukp.PublicKey()
	seed, _ := ukp.Seed()
	uc := jwt.NewUserClaims(upub)
	uc.Name = name
	if perms != nil {
		uc.Permissions = *perms
	}
	token, err := uc.Encode(account)
	if err != nil {
		return Creds{}, fmt.Errorf("natsauth: user %s JWT: %w", name, err)
	}
	return Creds{JWT: token, Seed: string(seed), User: upub, InboxPrefix: inbox}, nil
}

// Usage is a tenant account's JetStream usage against its limits.
type Usage struct {
	MemoryBytes, DiskBytes uint64
	Streams, Consumers     int
	Limits                 Limits
}

// Usage reports tenant's JetStream usage on the attached server.
func (m *Manager) Usage(tenant string) (Usage, error) {
	m.mu.Lock()
	kp, srv := m.tenants[tenant], m.srv
	var l Limits
	if ts := m.st.Tenants[tenant]; ts != nil {
		l = ts.Limits
	}
	m.mu.Unlock()
	if kp == nil {
		return Usage{}, fmt.Errorf("natsauth: tenant %q: %w", tenant, ErrNoTenant)
	}
	if srv == nil {
		return Usage{}, errors.New("natsauth: no server attached")
	}
	pub, _ := kp.PublicKey()
	acc, err := srv.LookupAccount(pub)
	if err != nil {
		return Usage{}, fmt.Errorf("natsauth: tenant %q: %w", tenant, err)
	}
	st := acc.JetStreamUsage()
	return Usage{MemoryBytes: st.Memory, DiskBytes: st.Store, Streams: st.Streams, Consumers: st.Consumers, Limits: l}, nil
}
