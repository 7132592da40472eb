package quota

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"

	"github.com/ardea-dev/ardea/internal/auth"
)

// MaxBodyBytes bounds a PUT's body.
const MaxBodyBytes = 64 << 10

// HandlerOptions are what the admin handler needs beside the quotas.
type HandlerOptions struct {
	// Resolver gives the quotas; its Store receives PUTs (required).
	Resolver *Resolver
	// Usage, if set, gives a tenant's usage for GET and PUT answers.
	Usage func(ctx context.Context, tenant string) (Usage, error)
	// Exists, if set, answers 404 for a tenant it does not know.
	Exists func(ctx context.Context, tenant string) (bool, error)
}

// TenantQuotas is the answer of GET and PUT /api/v1/tenants/{name}/quotas.
type TenantQuotas struct {
	Tenant string `json:"tenant"`
	// Quotas are the effective quotas (0: unlimited).
	Quotas Quotas `json:"quotas"`
	// Defaults are the built-in quotas the tenant gets (sized from the
	// machine; none for the daemon's default tenant), File what the
	// deployment file sets over them (its default with the tenant's entry
	// over it), Override what the admin API set over that.
	Defaults Overrides `json:"defaults"`
	File     Overrides `json:"file"`
	Override Overrides `json:"override"`
	Usage    *Usage    `json:"usage,omitempty"`
}

// Handler serves the admin API's quotas:
//
//	GET /api/v1/tenants/{name}/quotas   the tenant's quotas, where they come from, its usage
//	PUT /api/v1/tenants/{name}/quotas   replace the tenant's override: a JSON object of
//	                                    quotas, values as in the deployment file
//	                                    ({"cpu": 0.5, "instances": 8, "bytes_per_second": "16MiB"});
//	                                    {} falls back to the deployment file
//
// Both take a principal (auth.PrincipalFrom) whose scope allows admin:
// 401 without one, 403 with another scope.
func Handler(o HandlerOptions) http.Handler {
	h := &handler{o: o}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/tenants/{name}/quotas", h.get)
	mux.HandleFunc("PUT /api/v1/tenants/{name}/quotas", h.put)
	return mux
}

type handler struct{ o HandlerOptions }

// admit checks the principal and the tenant; it answers and returns false
// when the request may not go on.
func (h *handler) admit(w http.ResponseWriter, r *http.Request) (string, bool) {
	p, ok := auth.PrincipalFrom(r.Context())
	if !ok {
		writeError(w, http.StatusUnauthorized, auth.ErrUnauthenticated.Error())
		return "", false
	}
	if !p.Scope.Allows(auth.ScopeAdmin) {
		writeError(w, http.StatusForbidden, fmt.Sprintf("%s: quotas take a token with scope admin", auth.ErrForbidden))
		return "", false
	}
	tenant := r.PathValue("name")
	if err := checkTenant(tenant); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return "", false
	}
	if h.o.Exists != nil {
		ok, err := h.o.Exists(r.Context(), tenant)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return "", false
		}
		if !ok {
			writeError(w, http.StatusNotFound, fmt.Sprintf("tenant %s not found", tenant))
			return "", false
		}
	}
	return tenant, true
}

func (h *handler) get(w http.ResponseWriter, r *http.Request) {
	tenant, ok := h.admit(w, r)
	if !ok {
		return
	}
	h.answer(w, r, tenant)
}

func (h *handler) put(w http.ResponseWriter, r *http.Request) {
	tenant, ok := h.admit(w, r)
	if !ok {
		return
	}
	if h.o.Resolver == nil || h.o.Resolver.Store == nil {
		writeError(w, http.StatusInternalServerError, "quota: no store for overrides")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "quotas: want a JSON body (Content-Type: application/json)")
		return
	}
	var o Overrides
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err := dec.Decode(&o); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("quotas: body over %d bytes", MaxBodyBytes))
			return
		}
		writeError(w, http.StatusBadRequest, "quotas: "+err.Error())
		return
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "quotas: one JSON object, nothing after it")
		return
	}
	if err := h.o.Resolver.Store.Put(r.Context(), tenant, o); err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	h.answer(w, r, tenant)
}

func (h *handler) answer(w http.ResponseWriter, r *http.Request, tenant string) {
	ctx := r.Context()
	out := TenantQuotas{Tenant: tenant}
	var cfg *Config
	if h.o.Resolver != nil {
		cfg = h.o.Resolver.Config
	}
	if cfg != nil {
		file := Overrides{Quotas: cfg.For(tenant)}
		for i, f := range fields {
			if cfg.Default.Has(f.name) || cfg.Tenants[tenant].Has(f.name) {
				file.set |= 1 << i
			}
		}
		out.File = file
	}
	if h.o.Resolver != nil && h.o.Resolver.Store != nil {
		o, err := h.o.Resolver.Store.Get(ctx, tenant)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		out.Override = o
	}
	out.Defaults = h.o.Resolver.DefaultsFor(tenant)
	out.Quotas = out.Override.Over(out.File.Over(out.Defaults.Over(Quotas{})))
	if h.o.Usage != nil {
		u, err := h.o.Usage(ctx, tenant)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		out.Usage = &u
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(out)
}

// writeError answers in the API's error shape (api.ErrorBody: status, message,
// error), without importing ui, which may show quotas one day.
func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(struct {
		Status  int    `json:"status"`
		Message string `json:"message"`
		Error   string `json:"error"`
	}{code, msg, msg})
}
