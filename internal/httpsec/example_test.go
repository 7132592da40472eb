package httpsec_test

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/httpsec"
)

// Example is how the daemon puts its API behind the security layer and
// the audit log (compiled, not run: it needs a daemon).
func Example() {
	var (
		ctx   context.Context    // the daemon's
		nc    *nats.Conn         // the daemon's own connection (the ardea account)
		store auth.Authenticator // the token store (*auth.Store)
		mux   *http.ServeMux     // the daemon's routes
		log   *slog.Logger
	)
	alog, err := audit.Open(ctx, nc, audit.Options{MaxAge: audit.DefaultMaxAge, MaxBytes: audit.DefaultMaxBytes})
	if err != nil {
		panic(err)
	}
	cert, err := httpsec.GenerateSelfSigned("/var/lib/ardea", []string{"ardea.example.com"}) // ardea local --tls
	if err != nil {
		panic(err)
	}
	guard, err := httpsec.New(httpsec.Options{
		Listen: "127.0.0.1:7780",
		Hosts:  []string{"ardea.example.com"},
		TLS:    true,
		Auth:   store,
		Routes: httpsec.DefaultRoutes(), // plus any route the daemon adds
		Log:    log,
	})
	if err != nil {
		panic(err)
	}
	mux.Handle("GET /healthz", httpsec.Health())
	mux.Handle("POST /api/v1/tickets", guard.Tickets().Handler())
	mux.Handle("GET /api/v1/audit", audit.Handler(alog))
	// In a handler: decode strictly, then say what the audit log keeps.
	mux.HandleFunc("POST /api/v1/topologies/{name}/swap", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Component string `json:"component"`
			Module    []byte `json:"module"`
		}
		if err := httpsec.DecodeJSON(w, r, 0, &req); err != nil {
			httpsec.WriteError(w, err)
			return
		}
		audit.Param(r.Context(), "component", req.Component)
		audit.Param(r.Context(), "module", req.Module) // its size and sha256, never the bytes
		p, _ := auth.PrincipalFrom(r.Context())        // its tenant owns the topology, or 404
		_ = p
	})
	srv := &http.Server{
		Addr:      "127.0.0.1:7780",
		Handler:   audit.Middleware(alog, log, guard.Wrap(mux)),
		TLSConfig: cert.Config,
	}
	log.Info("API", "addr", "https://127.0.0.1:7780", "fingerprint", cert.Fingerprint)
	_ = srv.ListenAndServeTLS("", "")
}
