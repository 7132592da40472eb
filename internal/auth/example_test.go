package auth_test

import (
	"context"
	"fmt"
	"log"
	"net/http"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/auth"
)

// How a daemon wires the store: open it on its JetStream, bootstrap the
// admin token, mount the admin API behind its authenticating middleware
// (which calls the store's Authenticate and auth.WithPrincipal).
func Example() {
	ctx := context.Background()
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		log.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	store, err := auth.Open(ctx, js, auth.Options{
		TenantInUse: func(ctx context.Context, tenant string) error { return nil }, // refuse while it has topologies
	})
	if err != nil {
		log.Fatal(err)
	}
	boot, err := store.Bootstrap(ctx, "/var/lib/ardea")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("admin token in", boot.Path)

	mux := http.NewServeMux()
	store.Handler().Register(mux)
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := auth.BearerToken(r.Header)
		p, err := store.Authenticate(r.Context(), tok)
		if err != nil {
			http.Error(w, "unauthenticated", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	})
	log.Fatal(http.ListenAndServe("127.0.0.1:7780", api))
}
