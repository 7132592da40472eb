package httpsec

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/ardea-dev/ardea/internal/auth"
)

// DefaultTenantRate and DefaultTenantBurst are a tenant's API call rate
// when the deployment file does not set security.api_rate: far above
// what the CLI and the UI send (the UI's live view makes a few calls a
// second per tab), low enough that one tenant's flood cannot take the
// daemon from the others, nor push the audit log's older records out.
const (
	DefaultTenantRate  = 100 // calls per second
	DefaultTenantBurst = 200
)

// tenantLimiter is a token bucket per tenant over the API's
// authenticated calls; admin tokens (the operator) are not limited.
// Kubernetes' API Priority and Fairness and NATS' per-account limits do
// the same: a tenant's excess waits or is refused, others go on.
type tenantLimiter struct {
	rate, burst float64
	now         func() time.Time

	mu      sync.Mutex
	buckets map[string]*apiBucket // by tenant; tenants are made by admins, so few
}

type apiBucket struct {
	tokens float64
	last   time.Time
}

// newTenantLimiter makes a limiter of rate calls/s with burst; nil for
// rate <= 0 (unlimited).
func newTenantLimiter(rate float64, burst int, now func() time.Time) *tenantLimiter {
	if rate <= 0 {
		return nil
	}
	if burst <= 0 {
		burst = int(math.Ceil(2 * rate))
	}
	if now == nil {
		now = time.Now
	}
	return &tenantLimiter{rate: rate, burst: float64(burst), now: now, buckets: map[string]*apiBucket{}}
}

// allow takes a call of p's tenant; when the bucket is empty it returns
// false and how long until a call would be allowed.
func (l *tenantLimiter) allow(p auth.Principal) (bool, time.Duration) {
	if l == nil || p.Scope == auth.ScopeAdmin {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.buckets[p.Tenant]
	if b == nil {
		b = &apiBucket{tokens: l.burst, last: now}
		l.buckets[p.Tenant] = b
	}
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = min(l.burst, b.tokens+dt*l.rate)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}

// tooManyCalls answers 429 naming the limit, with Retry-After in whole
// seconds (at least 1).
func (l *tenantLimiter) tooManyCalls(w http.ResponseWriter, p auth.Principal, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
	WriteError(w, &Error{Status: http.StatusTooManyRequests, Message: fmt.Sprintf(
		"tenant %s: API rate limit reached: %g calls/s, bursts of %g (security.api_rate in the deployment file); retry in %v",
		p.Tenant, l.rate, l.burst, wait.Round(time.Millisecond))})
}
