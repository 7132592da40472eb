package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
)

// The admin API's routes (Handler). Every route but whoami takes a
// principal with ScopeAdmin.
var adminRoutes = []string{
	"GET /api/v1/whoami",
	"POST /api/v1/tenants",
	"GET /api/v1/tenants",
	"GET /api/v1/tenants/{name}",
	"DELETE /api/v1/tenants/{name}",
	"POST /api/v1/tokens",
	"GET /api/v1/tokens",
	"GET /api/v1/tokens/{id}",
	"DELETE /api/v1/tokens/{id}",
}

// MaxRequestBody bounds an admin API request's body; a larger one is
// answered 413.
const MaxRequestBody = 64 << 10

// Handler serves the admin API on a Store:
//
//	GET    /api/v1/whoami            the caller's principal (any scope)
//	POST   /api/v1/tenants           {"name"} -> Tenant (201)
//	GET    /api/v1/tenants           -> []Tenant
//	GET    /api/v1/tenants/{name}    -> Tenant
//	DELETE /api/v1/tenants/{name}    -> TenantDeleted (revokes its tokens)
//	POST   /api/v1/tokens            CreateTokenRequest -> NewToken (201; the secret, once)
//	GET    /api/v1/tokens[?tenant=T] -> []Token
//	GET    /api/v1/tokens/{id}       -> Token
//	DELETE /api/v1/tokens/{id}       -> Token (revoked)
//
// It does not authenticate: the API's middleware puts the principal into
// the request's context (WithPrincipal) before. Without one a request is
// answered 401; without ScopeAdmin, 403. Bodies are JSON
// (Content-Type application/json, else 415), at most MaxRequestBody
// bytes (else 413), unknown fields refused (400). Errors are the API's
// one shape, {"status", "message", "error"} (as ui.WriteErrorCode).
type Handler struct {
	s   *Store
	mux *http.ServeMux
}

// Handler returns the admin API's handler on s.
func (s *Store) Handler() *Handler {
	h := &Handler{s: s, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /api/v1/whoami", h.whoami)
	h.mux.HandleFunc("POST /api/v1/tenants", h.admin(h.createTenant))
	h.mux.HandleFunc("GET /api/v1/tenants", h.admin(h.listTenants))
	h.mux.HandleFunc("GET /api/v1/tenants/{name}", h.admin(h.getTenant))
	h.mux.HandleFunc("DELETE /api/v1/tenants/{name}", h.admin(h.deleteTenant))
	h.mux.HandleFunc("POST /api/v1/tokens", h.admin(h.createToken))
	h.mux.HandleFunc("GET /api/v1/tokens", h.admin(h.listTokens))
	h.mux.HandleFunc("GET /api/v1/tokens/{id}", h.admin(h.getToken))
	h.mux.HandleFunc("DELETE /api/v1/tokens/{id}", h.admin(h.revokeToken))
	return h
}

// ServeHTTP serves the admin routes; any other path is 404.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Register adds the admin routes to mux (the API's), each served by h.
func (h *Handler) Register(mux *http.ServeMux) {
	for _, p := range adminRoutes {
		mux.Handle(p, h.mux)
	}
}

// Routes lists the admin API's patterns (method and path), as Register
// adds them.
func Routes() []string { return append([]string(nil), adminRoutes...) }

// CreateTenantRequest is POST /api/v1/tenants's body.
type CreateTenantRequest struct {
	Name string `json:"name"`
}

// TenantDeleted is DELETE /api/v1/tenants/{name}'s answer.
type TenantDeleted struct {
	Tenant        string `json:"tenant"`
	RevokedTokens int    `json:"revoked_tokens"`
}

// CreateTokenRequest is POST /api/v1/tokens's body. ExpiresIn is a
// lifetime as ParseExpiry reads it ("30d", "720h"); empty never expires.
type CreateTokenRequest struct {
	Tenant    string `json:"tenant"`
	Scope     Scope  `json:"scope"`
	Name      string `json:"name,omitempty"`
	ExpiresIn string `json:"expires_in,omitempty"`
}

// NewToken is POST /api/v1/tokens's answer: the token and, this once,
// its secret.
type NewToken struct {
	Token
	Secret string `json:"secret"`
}

func (h *Handler) whoami(w http.ResponseWriter, r *http.Request) {
	p, ok := PrincipalFrom(r.Context())
	if !ok {
		writeError(w, http.StatusUnauthorized, "unauthenticated: send a token (Authorization: Bearer ...)")
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// admin wraps a route that takes ScopeAdmin; it passes the principal on.
func (h *Handler) admin(f func(http.ResponseWriter, *http.Request, Principal)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, ok := PrincipalFrom(r.Context())
		switch {
		case !ok:
			writeError(w, http.StatusUnauthorized, "unauthenticated: send a token (Authorization: Bearer ...)")
			return
		case !p.Scope.Allows(ScopeAdmin):
			writeError(w, http.StatusForbidden, fmt.Sprintf("forbidden: managing tenants and tokens takes scope admin; this token has %s", p.Scope))
			return
		}
		f(w, r, p)
	}
}

func (h *Handler) createTenant(w http.ResponseWriter, r *http.Request, p Principal) {
	var req CreateTenantRequest
	if !decode(w, r, &req) {
		return
	}
	t, err := h.s.CreateTenant(r.Context(), req.Name, p.String())
	if err != nil {
		writeStoreError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, t)
}

func (h *Handler) listTenants(w http.ResponseWriter, r *http.Request, _ Principal) {
	ts, err := h.s.Tenants(r.Context())
	if err != nil {
		writeStoreError(w, err)
		return
	}
	if ts == nil {
		ts = []Tenant{}
	}
	writeJSON(w, http.StatusOK, ts)
}

func (h *Handler) getTenant(w http.ResponseWriter, r *http.Request, _ Principal) {
	t, err := h.s.Tenant(r.Context(), r.PathValue("name"))
	if err != nil {
		writeStoreError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (h *Handler) deleteTenant(w http.ResponseWriter, r *http.Request, p Principal) {
	name := r.PathValue("name")
	n, err := h.s.DeleteTenant(r.Context(), name, p.String())
	if err != nil {
		writeStoreError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, TenantDeleted{Tenant: name, RevokedTokens: n})
}

func (h *Handler) createToken(w http.ResponseWriter, r *http.Request, p Principal) {
	var req CreateTokenRequest
	if !decode(w, r, &req) {
		return
	}
	ttl, err := ParseExpiry(req.ExpiresIn)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	t, secret, err := h.s.CreateToken(r.Context(), TokenSpec{Tenant: req.Tenant, Scope: req.Scope, Name: req.Name, TTL: ttl, By: p.String()})
	if err != nil {
		writeStoreError(w, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, NewToken{Token: t, Secret: secret})
}

func (h *Handler) listTokens(w http.ResponseWriter, r *http.Request, _ Principal) {
	tenant := r.URL.Query().Get("tenant")
	if tenant != "" {
		if _, err := h.s.getTenant(r.Context(), tenant); err != nil {
			writeStoreError(w, err)
			return
		}
	}
	ts, err := h.s.Tokens(r.Context(), tenant)
	if err != nil {
		writeStoreError(w, err)
		return
	}
	if ts == nil {
		ts = []Token{}
	}
	writeJSON(w, http.StatusOK, ts)
}

func (h *Handler) getToken(w http.ResponseWriter, r *http.Request, _ Principal) {
	t, err := h.s.Token(r.Context(), r.PathValue("id"))
	if err != nil {
		writeStoreError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (h *Handler) revokeToken(w http.ResponseWriter, r *http.Request, p Principal) {
	t, err := h.s.RevokeToken(r.Context(), r.PathValue("id"), p.String())
	if err != nil {
		writeStoreError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// decode reads a JSON body into v, answering the error itself.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "the request body must be JSON (Content-Type: application/json)")
		return false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxRequestBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", tooBig.Limit))
			return false
		}
		writeError(w, http.StatusBadRequest, "request body: "+err.Error())
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "request body: more than one JSON value")
		return false
	}
	return true
}

// writeStoreError answers a Store error with its status.
func writeStoreError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrInvalid):
		code = http.StatusBadRequest
	case errors.Is(err, ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, ErrExists), errors.Is(err, ErrInUse):
		code = http.StatusConflict
	}
	writeError(w, code, err.Error())
}

// apiError is the API's error shape (api.ErrorBody's: this package does not
// import ui, which will want to import auth for the UI's login).
type apiError struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
	Error   string `json:"error"`
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, apiError{Status: code, Message: msg, Error: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
