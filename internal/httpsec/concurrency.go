package httpsec

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/ardea-dev/ardea/internal/auth"
)

// DefaultTenantConcurrent is how many expensive calls (Route.Expensive:
// submit, apply, update, swap) of one tenant the API serves at once when
// Options.TenantConcurrent is 0. Each parses a topology, decodes up to a
// route's body of modules and plans containers in the daemon, outside the
// tenant's CPU and memory quotas; the rate limit bounds how many start per
// second, this bounds how many run at once (as Kubernetes' API Priority
// and Fairness bounds each flow's seats).
const DefaultTenantConcurrent = 2

// tenantSlots counts each tenant's expensive calls in flight; admin tokens
// (the operator) are not counted.
type tenantSlots struct {
	max int

	mu    sync.Mutex
	inUse map[string]int // by tenant
}

// newTenantSlots makes the counter: 0 takes DefaultTenantConcurrent, a
// negative max is unlimited (nil).
func newTenantSlots(max int) *tenantSlots {
	switch {
	case max < 0:
		return nil
	case max == 0:
		max = DefaultTenantConcurrent
	}
	return &tenantSlots{max: max, inUse: map[string]int{}}
}

// acquire takes a slot of p's tenant, or reports that all are taken. The
// caller calls release once the call has been answered.
func (s *tenantSlots) acquire(p auth.Principal) bool {
	if s == nil || p.Scope == auth.ScopeAdmin {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inUse[p.Tenant] >= s.max {
		return false
	}
	s.inUse[p.Tenant]++
	return true
}

func (s *tenantSlots) release(p auth.Principal) {
	if s == nil || p.Scope == auth.ScopeAdmin {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inUse[p.Tenant]--; s.inUse[p.Tenant] <= 0 {
		delete(s.inUse, p.Tenant)
	}
}

// busy answers 429 naming the limit.
func (s *tenantSlots) busy(w http.ResponseWriter, r *http.Request, p auth.Principal) {
	w.Header().Set("Retry-After", "1")
	WriteError(w, &Error{Status: http.StatusTooManyRequests, Message: fmt.Sprintf(
		"tenant %s: %s %s refused: at most %d submit, apply, update and swap calls of a tenant run at once (httpsec.DefaultTenantConcurrent); retry once one has finished",
		p.Tenant, r.Method, truncate(r.URL.Path, 100), s.max)})
}
