package natsauth

import (
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// resolver holds the accounts' JWTs the server resolves, by public key.
//
// It is not a server.MemAccResolver on purpose. The server treats that
// type as a static list: a route's subscription in an account it cannot
// resolve at that moment is dropped for good ("Unknown account ... for
// remote subject"). On a cluster, a tenant made on one node reaches the
// others through the accounts bucket's watch a little later, and the
// first interest of the tenant's clients (the reply inbox of every
// JetStream request) can arrive before it: the replies of that node's
// streams to those clients were then lost until they reconnected. With
// any other resolver type the server keeps such a subscription in a
// placeholder account and completes the account when it resolves.
//
// For the same reason a fetch of an account not held yet asks the other
// nodes (lookup, over core NATS: no JetStream involved, which may itself
// be waiting on this fetch) and waits for it: JetStream's stream
// placement on this node looks an account up once, and a replica whose
// account is missing then is never made (the stream keeps one copy
// fewer, and loses its quorum with one more node). A node that has just
// started can be asked before it can ask anyone: it waits for its lookup
// up to startWait, then up to wait. A server alone (wait zero) does not
// wait.
type resolver struct {
	wait      time.Duration
	startWait time.Duration

	mu      sync.Mutex
	jwts    map[string]string
	changed chan struct{} // closed and replaced on every Store and SetLookup
	lookup  func(name string) (string, error)
}

var _ server.AccountResolver = (*resolver)(nil)

func newResolver() *resolver {
	return &resolver{jwts: map[string]string{}, changed: make(chan struct{})}
}

// Fetch returns the JWT of the account with public key name.
func (r *resolver) Fetch(name string) (string, error) {
	var timeout <-chan time.Time
	asked := false
	for {
		r.mu.Lock()
		j, ok := r.jwts[name]
		changed, lookup := r.changed, r.lookup
		r.mu.Unlock()
		if ok {
			return j, nil
		}
		if r.wait <= 0 {
			return "", server.ErrMissingAccount
		}
		if lookup != nil && !asked {
			asked = true
			if j, err := lookup(name); err == nil && j != "" {
				return j, nil
			}
		}
		if timeout == nil {
			limit := r.wait
			if lookup == nil {
				limit = max(r.startWait, r.wait)
			}
			t := time.NewTimer(limit)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-changed:
		case <-timeout:
			return "", server.ErrMissingAccount
		}
	}
}

// jwt is the JWT held for name ("" if none).
func (r *resolver) jwt(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.jwts[name]
}

// setLookup makes misses ask the other nodes with f, and wakes the
// fetches waiting for it.
func (r *resolver) setLookup(f func(name string) (string, error)) {
	r.mu.Lock()
	r.lookup = f
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// Store keeps jwt as the account name's and wakes the fetches waiting.
func (r *resolver) Store(name, jwt string) error {
	r.mu.Lock()
	r.jwts[name] = jwt
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	return nil
}

func (r *resolver) IsReadOnly() bool           { return false }
func (r *resolver) Start(*server.Server) error { return nil }
func (r *resolver) IsTrackingUpdate() bool     { return false }
func (r *resolver) Reload() error              { return nil }
func (r *resolver) Close()                     {}
