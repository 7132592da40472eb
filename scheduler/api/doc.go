// Package api is the public API of an ardea daemon (`ardea local`, the
// daemon's HTTP API under /api/v1): its wire types (the requests, the
// answers, the status documents with the topology states and modes they
// show, the error type) and a Go client, Client. It is what a program
// imports to talk to a daemon: the ardea CLI's commands, benchmarks and
// deployment tools use it, and it links none of the daemon (no NATS, no
// wasm runtime, no connectors, no metrics sinks; deps_test.go keeps it
// so). The daemon, package scheduler/daemon, serves these types.
//
// A client is made for the daemon's address (DefaultListen by default)
// and, when the daemon checks tokens, a bearer token:
//
//	c := api.NewClient(api.DefaultListen)
//	c.Token = os.Getenv("ARDEA_TOKEN")
//	st, err := c.Status(ctx, "wordcount")
//	if api.NotFound(err) { ... }
//
// An error answer is an *APIError with the HTTP status; no daemon at the
// address is ErrUnreachable. Calls the tenant's API rate limit refuses
// (429) are sent again after the Retry-After the daemon names.
package api
