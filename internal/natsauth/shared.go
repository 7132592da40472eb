package natsauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/jsretry"
)

// AccountsBucket is the "ardea" account's KV bucket that holds the
// tenants' accounts when they are shared by a cluster's nodes (Share).
const AccountsBucket = "ardea_nats_accounts"

// sharedOpTimeout bounds one read or compare-and-set on the shared
// bucket (a cluster without a quorum does not answer).
const sharedOpTimeout = 30 * time.Second

// fetchWait bounds how long a node's server waits for an account its
// resolver does not hold yet (resolver): the accounts bucket's watch
// brings a tenant another node made in milliseconds.
const fetchWait = 3 * time.Second

// startFetchWait bounds the wait of a node that cannot ask the others yet
// (ServeLookups not called: its daemon is still connecting).
const startFetchWait = 30 * time.Second

// LookupSubject is the "ardea" account's subject on which the nodes of a
// cluster answer for the accounts' JWTs they hold (ServeLookups).
const LookupSubject = "ardea.accounts.lookup"

// lookupTimeout bounds a lookup: no answer means no node holds it.
const lookupTimeout = 2 * time.Second

// ServeLookups (a cluster's node) answers the other nodes' lookups of the
// accounts' JWTs this node holds, on nc (a connection in the "ardea"
// account, which only the nodes' daemons reach), and makes this node's
// server ask them for an account it does not hold (resolver). An account
// JWT is signed by the operator; a node's server checks it as any other.
// The subscription ends with nc.
func (m *Manager) ServeLookups(nc *nats.Conn) error {
	if _, err := nc.Subscribe(LookupSubject, func(msg *nats.Msg) {
		if j := m.resolver.jwt(string(msg.Data)); j != "" {
			_ = msg.Respond([]byte(j))
		}
	}); err != nil {
		return fmt.Errorf("natsauth: account lookups: %w", err)
	}
	if err := nc.FlushTimeout(lookupTimeout); err != nil {
		return fmt.Errorf("natsauth: account lookups: %w", err)
	}
	m.resolver.setLookup(func(name string) (string, error) {
		msg, err := nc.Request(LookupSubject, []byte(name), lookupTimeout)
		if err != nil {
			return "", err
		}
		return string(msg.Data), nil
	})
	return nil
}

// OpenShared is Open for a node of a cluster: the operator's and the two
// fixed accounts' keys are derived from the cluster's secret (every node
// derives the same), and the tenants' accounts are kept in the cluster's
// accounts bucket once Share is called, not in a file. dir is created as
// Open does (nothing secret is written there).
//
// replicas is the copies the cluster keeps of each stream: a tenant's
// JetStream limits are its bytes once, and the account's limits the
// server checks are that many times larger, since every replica counts
// against them.
func OpenShared(dir string, secret Secret, replicas int) (*Manager, error) {
	if secret.IsZero() {
		return nil, errors.New("natsauth: a cluster secret is required")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("natsauth: %w", err)
	}
	op, sys, admin, err := secret.keys()
	if err != nil {
		return nil, fmt.Errorf("natsauth: cluster keys: %w", err)
	}
	m := newManager(dir)
	m.derived = true
	m.resolver.wait = fetchWait
	m.resolver.startWait = startFetchWait
	m.replicas = max(replicas, 1)
	m.operator, m.sys, m.admin = op, sys, admin
	if err := m.init(); err != nil {
		return nil, err
	}
	return m, nil
}

// sharedAccounts is the cluster's accounts bucket and the watch that
// applies every change to it (Manager.Share).
type sharedAccounts struct {
	kv     jetstream.KeyValue
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	log    *slog.Logger
}

// Share keeps the tenants' accounts in kv from now on (AccountsBucket, in
// the "ardea" account, replicated over the cluster's nodes) and applies
// what any node writes there to this node's server: a tenant another
// node made can connect here, a revocation made there drops the
// credentials here. The tenants this Manager made before are written to
// the bucket unless another node made them first (then that node's
// account is the tenant's). When Share returns, every tenant in the bucket
// is known here. Close stops the watch.
func (m *Manager) Share(ctx context.Context, kv jetstream.KeyValue, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m.mu.Lock()
	if m.shared != nil {
		m.mu.Unlock()
		return errors.New("natsauth: already shared")
	}
	local := make(map[string]*tenantState, len(m.st.Tenants))
	for t, ts := range m.st.Tenants {
		local[t] = ts.clone()
	}
	m.mu.Unlock()
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	sh := &sharedAccounts{kv: kv, ctx: wctx, cancel: cancel, done: make(chan struct{}), log: log}
	for t, ts := range local {
		b, err := encodeTenant(ts)
		if err != nil {
			cancel()
			return err
		}
		if _, err := kv.Create(ctx, t, b); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			cancel()
			return fmt.Errorf("natsauth: share tenant %s's account: %w", t, err)
		}
	}
	w, err := kv.WatchAll(wctx)
	if err != nil {
		cancel()
		return fmt.Errorf("natsauth: watch the accounts bucket: %w", err)
	}
	// The bucket's present values, then a nil entry.
	for e := range w.Updates() {
		if e == nil {
			break
		}
		if err := m.applyEntry(e); err != nil {
			_ = w.Stop()
			cancel()
			return err
		}
	}
	m.mu.Lock()
	m.shared = sh
	m.mu.Unlock()
	go func() {
		defer close(sh.done)
		defer func() { _ = w.Stop() }()
		for {
			select {
			case <-wctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					if wctx.Err() == nil {
						log.Error("the NATS accounts bucket's watch ended; account changes of other nodes no longer reach this one")
					}
					return
				}
				if e == nil {
					continue
				}
				if err := m.applyEntry(e); err != nil {
					log.Error("apply a tenant's NATS account from the shared bucket", "tenant", e.Key(), "err", err)
				}
			}
		}
	}()
	return nil
}

// Close stops Share's watch and waits for it. The Manager keeps working
// on what it knows.
func (m *Manager) Close() {
	m.mu.Lock()
	sh := m.shared
	m.mu.Unlock()
	if sh == nil {
		return
	}
	sh.cancel()
	<-sh.done
}

func (m *Manager) applyEntry(e jetstream.KeyValueEntry) error {
	switch e.Operation() {
	case jetstream.KeyValueDelete, jetstream.KeyValuePurge:
		return m.apply(e.Key(), nil, e.Revision())
	}
	ts, err := decodeTenant(e.Key(), e.Value())
	if err != nil {
		return err
	}
	m.mu.Lock()
	known, hook := m.st.Tenants[e.Key()] != nil, m.onTenant
	m.mu.Unlock()
	if err := m.apply(e.Key(), ts, e.Revision()); err != nil {
		return err
	}
	if !known && hook != nil {
		hook(e.Key())
	}
	return nil
}

// OnTenant sets f to hear each tenant that another node (or this one)
// adds to the shared bucket, once this node knows it; f runs on the
// watch's goroutine and must not block. Call it before Share.
func (m *Manager) OnTenant(f func(tenant string)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onTenant = f
}

// mutate is Manager.mutate on the shared bucket.
//
// While the cluster's JetStream is unavailable (an election after a node
// was lost) it asks again, for sharedOpTimeout at most.
func (sh *sharedAccounts) mutate(m *Manager, tenant string, f func(*tenantState) (*tenantState, error)) error {
	ctx, cancel := context.WithTimeout(sh.ctx, sharedOpTimeout)
	defer cancel()
	_, err := jsretry.RetryUnavailable(ctx, sharedOpTimeout/4, func(ctx context.Context) (struct{}, error) {
		for {
			err := sh.try(ctx, tenant, f, m)
			if !errors.Is(err, errConflict) {
				return struct{}{}, err
			}
		}
	})
	return err
}

var errConflict = errors.New("changed by another node")

func (sh *sharedAccounts) try(ctx context.Context, tenant string, f func(*tenantState) (*tenantState, error), m *Manager) error {
	var cur *tenantState
	var rev uint64
	e, err := sh.kv.Get(ctx, tenant)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		return fmt.Errorf("natsauth: tenant %s's account: %w", tenant, err)
	default:
		rev = e.Revision()
		if cur, err = decodeTenant(tenant, e.Value()); err != nil {
			return err
		}
	}
	next, err := f(cur)
	if err != nil {
		return err
	}
	var nrev uint64
	switch {
	case next == nil && cur == nil:
		return nil
	case next == nil:
		err = sh.kv.Delete(ctx, tenant, jetstream.LastRevision(rev))
		if err == nil {
			// The delete marker's revision is not returned: the watch
			// applies it; forget the tenant here now.
			return m.forget(tenant)
		}
	default:
		b, eerr := encodeTenant(next)
		if eerr != nil {
			return eerr
		}
		if cur == nil {
			nrev, err = sh.kv.Create(ctx, tenant, b)
		} else {
			nrev, err = sh.kv.Update(ctx, tenant, b, rev)
		}
	}
	if err != nil {
		if isConflict(err) {
			return errConflict
		}
		return fmt.Errorf("natsauth: tenant %s's account: %w", tenant, err)
	}
	return m.apply(tenant, next, nrev)
}

// forget drops tenant here after this node deleted it from the bucket
// (its users were revoked by the update before).
func (m *Manager) forget(tenant string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.st.Tenants, tenant)
	delete(m.tenants, tenant)
	return nil
}

func isConflict(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		// The second is what a replicated bucket answers.
		return true
	}
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}

func nowPlusSecond() int64 { return time.Now().Add(time.Second).Unix() }
