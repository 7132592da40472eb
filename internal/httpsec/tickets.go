package httpsec

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/ardea-dev/ardea/internal/auth"
)

// Tickets lets a browser open the events stream (EventSource cannot send
// an Authorization header). The page, holding the token, asks for a ticket
// with an authenticated JSON POST (/api/v1/tickets) and opens
// /api/v1/events?ticket=T. A ticket
//
//   - is good once: redeeming it removes it (an EventSource reconnect asks
//     for a new one);
//   - lives DefaultTicketTTL, and never past its token's expiry;
//   - opens only the GET routes marked Ticket (read-only), whatever the
//     token's scope: it can never change state;
//   - is 32 random bytes, and kept only as its SHA-256.
//
// Why not a cookie: a cookie is ambient authority, sent by the browser on
// every request to the origin, including ones another site starts, so every
// route would depend on refusing it; a ticket is presented deliberately by
// the page's script and is worth one read-only stream. A ticket in a URL
// can reach a log or a history, which is why it is single-use and
// short-lived, and why Referrer-Policy is no-referrer.
type Tickets struct {
	ttl time.Duration
	now func() time.Time

	mu sync.Mutex
	m  map[[sha256.Size]byte]ticket
}

type ticket struct {
	p       auth.Principal
	expires time.Time
}

// DefaultTicketTTL is how long a ticket may wait to be redeemed.
const DefaultTicketTTL = 30 * time.Second

// maxTickets bounds the outstanding tickets; past it Issue refuses (429)
// until some expire.
const maxTickets = 10000

// NewTickets returns an issuer of tickets that live ttl.
func NewTickets(ttl time.Duration) *Tickets {
	return &Tickets{ttl: ttl, now: time.Now, m: map[[sha256.Size]byte]ticket{}}
}

// Issue returns a new ticket for p and when it expires.
func (t *Tickets) Issue(p auth.Principal) (string, time.Time, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", time.Time{}, err
	}
	s := base64.RawURLEncoding.EncodeToString(raw[:])
	now := t.now()
	exp := now.Add(t.ttl)
	if !p.Expires.IsZero() && p.Expires.Before(exp) {
		exp = p.Expires
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.m) >= maxTickets/2 {
		for k, v := range t.m {
			if !now.Before(v.expires) {
				delete(t.m, k)
			}
		}
	}
	if len(t.m) >= maxTickets {
		return "", time.Time{}, &Error{Status: http.StatusTooManyRequests, Message: "too many outstanding tickets; try again shortly"}
	}
	t.m[sha256.Sum256([]byte(s))] = ticket{p: p, expires: exp}
	return s, exp, nil
}

// Redeem returns the ticket's principal and forgets the ticket. It fails
// for an unknown, used or expired ticket.
func (t *Tickets) Redeem(s string) (auth.Principal, bool) {
	k := sha256.Sum256([]byte(s))
	t.mu.Lock()
	tk, ok := t.m[k]
	delete(t.m, k)
	t.mu.Unlock()
	if !ok || !t.now().Before(tk.expires) {
		return auth.Principal{}, false
	}
	return tk.p, true
}

// TicketAnswer is what POST /api/v1/tickets answers.
type TicketAnswer struct {
	Ticket  string    `json:"ticket"`
	Expires time.Time `json:"expires"`
}

// Handler serves POST /api/v1/tickets behind the guard (which has
// authenticated the request): a ticket for the request's principal.
func (t *Tickets) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := auth.PrincipalFrom(r.Context())
		if !ok {
			WriteError(w, &Error{Status: http.StatusUnauthorized, Message: "no principal"})
			return
		}
		s, exp, err := t.Issue(p)
		if err != nil {
			WriteError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(TicketAnswer{Ticket: s, Expires: exp})
	})
}
