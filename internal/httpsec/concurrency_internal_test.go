package httpsec

import (
	"sync"
	"testing"

	"github.com/ardea-dev/ardea/internal/auth"
)

// TestTenantSlots: each tenant has its own max expensive calls in flight,
// admin calls are not counted, a release frees a slot, and the counter
// holds under concurrent callers (the race lane runs it).
func TestTenantSlots(t *testing.T) {
	s := newTenantSlots(0)
	acme := auth.Principal{Tenant: "acme", Scope: auth.ScopeDeploy}
	globex := auth.Principal{Tenant: "globex", Scope: auth.ScopeDeploy}
	admin := auth.Principal{Tenant: auth.AdminTenant, Scope: auth.ScopeAdmin}
	for range DefaultTenantConcurrent {
		if !s.acquire(acme) {
			t.Fatal("acme refused below its max")
		}
	}
	if s.acquire(acme) {
		t.Fatal("acme got a slot past its max")
	}
	if !s.acquire(globex) || !s.acquire(admin) {
		t.Fatal("another tenant or the admin refused beside acme's held calls")
	}
	s.release(acme)
	if !s.acquire(acme) {
		t.Fatal("acme refused after a release")
	}

	// Concurrent callers never hold more than max at once.
	s = newTenantSlots(3)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		in, top int
	)
	for range 32 {
		wg.Go(func() {
			for range 200 {
				if !s.acquire(acme) {
					continue
				}
				mu.Lock()
				in++
				top = max(top, in)
				mu.Unlock()
				mu.Lock()
				in--
				mu.Unlock()
				s.release(acme)
			}
		})
	}
	wg.Wait()
	if top > 3 || top == 0 || len(s.inUse) != 0 {
		t.Fatalf("at most %d in flight (max 3), %v left in use", top, s.inUse)
	}
	if newTenantSlots(-1) != nil || !(*tenantSlots)(nil).acquire(acme) {
		t.Fatal("a negative max is not unlimited")
	}
}
