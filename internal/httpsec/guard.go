// Package httpsec is the security layer of Ardea's HTTP API: one handler
// chain (Guard) that every request passes before it reaches the daemon's
// routes. In order, it
//
//   - sends the security headers on every answer (CSP, nosniff, frame
//     denial, no referrer, no-store, HSTS under TLS);
//   - refuses a Host that is not the API's own (421: DNS rebinding);
//   - refuses an Origin that is not the request's own origin, and a
//     cross-site or same-site Sec-Fetch-Site on a state-changing call or a
//     non-public route (403: cross-site requests);
//   - limits the body per route (413, naming the limit);
//   - takes state-changing calls (POST, PUT, PATCH, DELETE) only as
//     Content-Type application/json (415) with the token in the
//     Authorization header, never a cookie or a query parameter;
//   - authenticates the token (401 with WWW-Authenticate: Bearer) and puts
//     the principal into the request's context (auth.WithPrincipal);
//   - checks the route's scope from a route table (403).
//
// Browsers' EventSource cannot send headers, so the events stream also
// takes a ticket: short-lived, single-use, issued to an authenticated POST
// and good for the GET routes that say so (Tickets). See docs/security.md.
package httpsec

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/auth"
)

// Options configure a Guard.
type Options struct {
	// Listen is the address the API listens on (host:port). Its host and
	// the loopback names with its port are the API's own hosts. A wildcard
	// host (":7780", "0.0.0.0:7780", "[::]:7780") also admits any IP
	// literal with that port: an IP literal cannot be rebound, only a name.
	Listen string
	// Hosts are further names clients reach the API by: "name" (any port)
	// or "name:port", e.g. the name a reverse proxy serves it under.
	Hosts []string
	// Origins are further origins allowed to call the API from a browser
	// ("https://ardea.example.com"), e.g. behind a TLS-terminating proxy.
	// The request's own origin (scheme://Host) is always allowed.
	Origins []string
	// TLS says the API is served over TLS: the origin's scheme is https and
	// answers carry Strict-Transport-Security.
	TLS bool
	// Auth resolves tokens. Required.
	Auth auth.Authenticator
	// Routes is the route table (DefaultRoutes, plus any more).
	Routes []Route
	// PublicMetrics makes GET /metrics public (the deployment file says
	// so); otherwise it takes a metrics or admin token.
	PublicMetrics bool
	// MaxBody is the body limit of routes without their own; default
	// DefaultMaxBody.
	MaxBody int64
	// Tickets issues and redeems the events stream's tickets; nil makes
	// one with DefaultTicketTTL.
	Tickets *Tickets
	// Log gets a line per authentication backend failure; nil:
	// slog.Default().
	Log *slog.Logger
	// TenantRate bounds each tenant's authenticated calls per second
	// (TenantBurst at once; default twice the rate); 0: unlimited. Calls
	// with an admin token are not counted. Over it a call is refused with
	// 429 and Retry-After.
	TenantRate  float64
	TenantBurst int
	// TenantConcurrent bounds each tenant's Expensive calls in flight; 0:
	// DefaultTenantConcurrent, negative: unlimited. Admin tokens are not
	// counted. Over it a call is refused with 429 naming the limit.
	TenantConcurrent int
	// now is the limiter's clock (tests); nil: time.Now.
	now func() time.Time
}

// Guard is the security layer. Make one with New, wrap the API with Wrap.
type Guard struct {
	o        Options
	port     string
	hosts    map[string]bool // "host:port" and "host" (any port)
	local    map[string]bool // hosts admitted with the listen port
	wildcard bool
	origins  map[string]bool
	tickets  *Tickets
	limit    *tenantLimiter
	slots    *tenantSlots
	log      *slog.Logger
}

// New checks o and returns its guard.
func New(o Options) (*Guard, error) {
	if o.Auth == nil {
		return nil, errors.New("httpsec: no Authenticator")
	}
	if len(o.Routes) == 0 {
		return nil, errors.New("httpsec: no routes (use DefaultRoutes)")
	}
	host, port, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("httpsec: listen address %q: %w", o.Listen, err)
	}
	if o.MaxBody == 0 {
		o.MaxBody = DefaultMaxBody
	}
	g := &Guard{o: o, port: port, hosts: map[string]bool{}, origins: map[string]bool{},
		local: map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}, tickets: o.Tickets, log: o.Log,
		limit: newTenantLimiter(o.TenantRate, o.TenantBurst, o.now), slots: newTenantSlots(o.TenantConcurrent)}
	if g.tickets == nil {
		g.tickets = NewTickets(DefaultTicketTTL)
	}
	if g.log == nil {
		g.log = slog.Default()
	}
	switch ip := net.ParseIP(host); {
	case host == "" || ip != nil && ip.IsUnspecified():
		g.wildcard = true
	default:
		g.local[canonHost(host)] = true
	}
	for _, h := range o.Hosts {
		if strings.Contains(h, "/") || h == "" {
			return nil, fmt.Errorf("httpsec: host %q: want name or name:port", h)
		}
		if hh, pp, err := net.SplitHostPort(h); err == nil {
			g.hosts[canonHost(hh)+":"+pp] = true
		} else {
			g.hosts[canonHost(h)] = true
		}
	}
	for _, s := range o.Origins {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("httpsec: origin %q: want scheme://host[:port]", s)
		}
		g.origins[u.Scheme+"://"+strings.ToLower(u.Host)] = true
	}
	routes := make([]Route, len(o.Routes))
	copy(routes, o.Routes)
	for i := range routes {
		if o.PublicMetrics && routes[i].Pattern == "GET /metrics" {
			routes[i].Scope, routes[i].Public = "", true
		}
	}
	// Validate the table now; Wrap builds the real one around its handler.
	if _, err := newRouteTable(routes, func(Route) http.Handler { return http.NotFoundHandler() }); err != nil {
		return nil, fmt.Errorf("httpsec: %w", err)
	}
	g.o.Routes = routes
	return g, nil
}

// Tickets returns the guard's ticket issuer (its Handler serves POST
// /api/v1/tickets).
func (g *Guard) Tickets() *Tickets { return g.tickets }

// Wrap returns next behind the guard.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	rt, err := newRouteTable(g.o.Routes, func(rt Route) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { g.serve(w, r, rt, next) })
	})
	if err != nil {
		panic(err) // New checked the same table
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.headers(w, r)
		if msg, ok := g.hostOK(r.Host); !ok {
			WriteError(w, &Error{Status: http.StatusMisdirectedRequest, Message: msg})
			return
		}
		rt.mux.ServeHTTP(w, r)
	})
}

// headers sets the security headers every answer carries.
func (g *Guard) headers(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-store") // the UI's assets set their own
	if g.o.TLS {
		h.Set("Strict-Transport-Security", "max-age=31536000")
	}
}

// ContentSecurityPolicy is the API's and UI's policy: everything from the
// API's own origin only; no inline or evaluated script; inline style
// attributes allowed (the UI's charts colour their legends with them), no
// inline style elements; no framing, no plugins, no <base>, forms post
// only here.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; style-src-elem 'self'; " +
	"style-src-attr 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src 'none'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// canonHost lower-cases a host and drops a trailing dot and IPv6 brackets.
func canonHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
}

// hostOK checks the Host header against the allow-list.
func (g *Guard) hostOK(hostHeader string) (string, bool) {
	h, p := splitHostPort(hostHeader, g.scheme())
	refuse := fmt.Sprintf("host %q is not this API's (DNS rebinding protection): call it as 127.0.0.1:%s or localhost:%s, or add the name to the daemon's allowed hosts", truncate(hostHeader, 100), g.port, g.port)
	if h == "" {
		return refuse, false
	}
	if g.hosts[h] || g.hosts[h+":"+p] {
		return "", true
	}
	if p != g.port {
		return refuse, false
	}
	if g.local[h] || (g.wildcard && net.ParseIP(h) != nil) {
		return "", true
	}
	return refuse, false
}

// originOK checks a browser's Origin: the request's own origin or a
// configured one.
func (g *Guard) originOK(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	o = strings.ToLower(o)
	if g.origins[o] {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Scheme != g.scheme() || u.Path != "" || u.User != nil {
		return false
	}
	oh, op := splitHostPort(u.Host, u.Scheme)
	rh, rp := splitHostPort(r.Host, g.scheme())
	return oh != "" && oh == rh && op == rp
}

// scheme is the API's URL scheme.
func (g *Guard) scheme() string {
	if g.o.TLS {
		return "https"
	}
	return "http"
}

// splitHostPort splits a Host header or an origin's host into its
// canonical host and its port, the scheme's default when it has none.
func splitHostPort(hostport, scheme string) (string, string) {
	h, p, err := net.SplitHostPort(hostport)
	if err != nil {
		h, p = hostport, ""
	}
	if p == "" {
		p = "80"
		if scheme == "https" {
			p = "443"
		}
	}
	return canonHost(h), p
}

// StateChanging reports whether method changes state (needs JSON and the
// Authorization header).
func StateChanging(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// serve applies the rules of route rt, then calls next.
func (g *Guard) serve(w http.ResponseWriter, r *http.Request, rt Route, next http.Handler) {
	unsafe := StateChanging(r.Method)
	audit.SetCall(r.Context(), rt.Action, firstWildcard(r, rt.Pattern))
	if err := checkPath(r, rt.Pattern); err != nil {
		WriteError(w, err)
		return
	}

	if !g.originOK(r) {
		WriteError(w, &Error{Status: http.StatusForbidden, Message: fmt.Sprintf(
			"origin %q may not call this API (cross-site request protection)", truncate(r.Header.Get("Origin"), 100))})
		return
	}
	if site := r.Header.Get("Sec-Fetch-Site"); (site == "cross-site" || site == "same-site") && (unsafe || !rt.Public) {
		WriteError(w, &Error{Status: http.StatusForbidden, Message: "a " + site +
			" browser request may not call this API (cross-site request protection)"})
		return
	}

	max := rt.MaxBody
	if max == 0 {
		max = g.o.MaxBody
	}
	if r.ContentLength > max {
		WriteError(w, tooLarge(r, max))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, max)

	if unsafe {
		if err := jsonContentType(r); err != nil {
			WriteError(w, err)
			return
		}
	}
	if r.URL.Query().Has("token") || r.URL.Query().Has("access_token") {
		unauthorized(w, `a token in the URL is not accepted (it ends up in logs and histories): send "Authorization: Bearer TOKEN"`, true)
		return
	}

	if rt.Public {
		next.ServeHTTP(w, r)
		return
	}

	p, ok := g.authenticate(w, r, rt, unsafe)
	if !ok {
		return
	}
	audit.SetPrincipal(r.Context(), p)
	if ok, wait := g.limit.allow(p); !ok {
		g.limit.tooManyCalls(w, p, wait)
		return
	}
	if !rt.AnyScope && !p.Scope.Allows(rt.Scope) {
		WriteError(w, &Error{Status: http.StatusForbidden, Message: fmt.Sprintf(
			"%v: token %s has scope %s; %s %s needs %s", auth.ErrForbidden, p.TokenID, p.Scope, r.Method, r.URL.Path, rt.Scope)})
		return
	}
	if rt.Expensive {
		if !g.slots.acquire(p) {
			g.slots.busy(w, r, p)
			return
		}
		defer g.slots.release(p)
	}
	next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
}

// authenticate resolves the request's credential: the Authorization
// header, or on a Ticket route's GET a ticket. It answers the refusal
// itself.
func (g *Guard) authenticate(w http.ResponseWriter, r *http.Request, rt Route, unsafe bool) (auth.Principal, bool) {
	ticket := r.URL.Query().Get("ticket")
	hdr := r.Header.Get("Authorization")
	switch {
	case hdr == "" && ticket != "":
		if unsafe || !rt.Ticket {
			unauthorized(w, fmt.Sprintf("a ticket is accepted only by the events stream, not %s %s: send \"Authorization: Bearer TOKEN\"", r.Method, r.URL.Path), true)
			return auth.Principal{}, false
		}
		p, ok := g.tickets.Redeem(ticket)
		if !ok {
			unauthorized(w, "the ticket is unknown, used or expired: ask for a new one (POST /api/v1/tickets)", true)
			return auth.Principal{}, false
		}
		return p, true
	case hdr == "":
		unauthorized(w, `no token: send "Authorization: Bearer TOKEN" (ardea token create; the CLI takes --token, ARDEA_TOKEN or ardea login)`, false)
		return auth.Principal{}, false
	}
	scheme, tok, _ := strings.Cut(hdr, " ")
	tok = strings.TrimSpace(tok)
	if !strings.EqualFold(scheme, "Bearer") || tok == "" {
		unauthorized(w, `the Authorization header must be "Bearer TOKEN"`, true)
		return auth.Principal{}, false
	}
	p, err := g.o.Auth.Authenticate(r.Context(), tok)
	switch {
	case err == nil:
		return p, true
	case errors.Is(err, auth.ErrUnauthenticated):
		unauthorized(w, "invalid token: "+err.Error(), true)
	case errors.Is(err, auth.ErrForbidden):
		WriteError(w, &Error{Status: http.StatusForbidden, Message: err.Error()})
	default:
		g.log.Error("httpsec: authentication failed", "err", err)
		WriteError(w, &Error{Status: http.StatusServiceUnavailable, Message: "authentication is unavailable; try again"})
	}
	return auth.Principal{}, false
}

// unauthorized answers 401 with a Bearer challenge (RFC 6750).
func unauthorized(w http.ResponseWriter, msg string, invalid bool) {
	c := `Bearer realm="ardea"`
	if invalid {
		c += `, error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", c)
	WriteError(w, &Error{Status: http.StatusUnauthorized, Message: msg})
}

// jsonContentType refuses a state-changing request that is not JSON:
// forms and text/plain are what a cross-site page can send without a
// preflight.
func jsonContentType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil || mt != "application/json" {
		return &Error{Status: http.StatusUnsupportedMediaType, Message: fmt.Sprintf(
			"%s %s takes Content-Type application/json, not %q (a state-changing call is JSON, even without a body)", r.Method, r.URL.Path, truncate(ct, 100))}
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return &Error{Status: http.StatusUnsupportedMediaType, Message: fmt.Sprintf("charset %q: JSON is UTF-8", truncate(cs, 40))}
	}
	return nil
}

func tooLarge(r *http.Request, max int64) *Error {
	return &Error{Status: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf(
		"request body too large: %s %s takes at most %d bytes (%s)", r.Method, r.URL.Path, max, human(max))}
}

func human(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " B"
}

// firstWildcard is the value of the pattern's first {wildcard}: the
// call's target (a topology, tenant or token).
func firstWildcard(r *http.Request, pattern string) string {
	i := strings.IndexByte(pattern, '{')
	if i < 0 {
		return ""
	}
	j := strings.IndexAny(pattern[i:], ".}")
	if j < 0 {
		return ""
	}
	return r.PathValue(pattern[i+1 : i+j])
}

// checkPath refuses control characters anywhere in the path, and a
// wildcard's value (a topology's, tenant's or token's name) that is "." or
// "..", or holds a "/" (an escaped %2F): no handler should have to think
// about them.
func checkPath(r *http.Request, pattern string) error {
	bad := func(s string) bool {
		return strings.IndexFunc(s, func(c rune) bool { return c < 0x20 || c == 0x7f }) >= 0
	}
	if bad(r.URL.Path) {
		return &Error{Status: http.StatusBadRequest, Message: fmt.Sprintf("path %q: control characters", truncate(r.URL.Path, 100))}
	}
	for rest := pattern; ; {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			return nil
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return nil
		}
		name := strings.TrimSuffix(rest[i+1:i+j], "...")
		rest = rest[i+j+1:]
		if name == "$" {
			continue
		}
		if v := r.PathValue(name); v == "." || v == ".." || strings.Contains(v, "/") {
			return &Error{Status: http.StatusBadRequest, Message: fmt.Sprintf("path: %s %q is not a name", name, truncate(v, 100))}
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Error is an answer with a status; the API's handlers write it with
// WriteError.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return e.Message }

// StatusOf returns err's status if it is an *Error, else 500.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return http.StatusInternalServerError
}

// WriteError answers err in the API's error shape ({"status", "message",
// "error"}, as api.ErrorBody), with StatusOf(err).
func WriteError(w http.ResponseWriter, err error) {
	code := StatusOf(err)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(struct {
		Status  int    `json:"status"`
		Message string `json:"message"`
		Error   string `json:"error"`
	}{code, err.Error(), err.Error()})
}

// Health serves GET /healthz: {"status":"ok"}.
func Health() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
}
