package api_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
)

// The client's own behaviour, against a stand-in server that answers as
// the daemon does at the HTTP level (what the daemon serves is tested in
// scheduler/daemon, through this client).

// TestNewClientBase: a "host:port" gets http://, a URL keeps its scheme,
// and a trailing slash goes.
func TestNewClientBase(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:7780":          "http://127.0.0.1:7780",
		"https://ardea.example/":  "https://ardea.example",
		"http://10.0.0.1:7780///": "http://10.0.0.1:7780",
	} {
		if got := api.NewClient(in).Base; got != want {
			t.Errorf("NewClient(%q).Base = %q, want %q", in, got, want)
		}
	}
}

// TestClientSendsTokenAndJSON: every call carries the token; a
// state-changing call is JSON even without a body (the API refuses other
// content types), a GET sets none.
func TestClientSendsTokenAndJSON(t *testing.T) {
	type seen struct{ method, path, auth, ctype string }
	got := make(chan seen, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"), r.Header.Get("Content-Type")}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"name":"wc","state":"PAUSED"}`))
	}))
	defer srv.Close()
	c := api.NewClient(srv.URL)
	c.Token = "tok"
	st, err := c.Action(context.Background(), "wc", "deactivate", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "wc" || st.State != api.StatePaused {
		t.Errorf("status %+v, want wc PAUSED", st)
	}
	if s := <-got; s != (seen{"POST", "/api/v1/topologies/wc/deactivate", "Bearer tok", "application/json"}) {
		t.Errorf("bodiless POST sent %+v", s)
	}
	if _, err := c.Status(context.Background(), "wc"); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != (seen{"GET", "/api/v1/topologies/wc", "Bearer tok", ""}) {
		t.Errorf("GET sent %+v", s)
	}
}

// TestClientErrors: an error answer is an *APIError with the status and
// the body's message (or the body's text when it is not the API's error
// shape); NotFound tells a 404.
func TestClientErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/gone") {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"status":404,"message":"no topology named \"gone\"","error":"no topology named \"gone\""}`))
			return
		}
		http.Error(w, "  upstream exploded  ", http.StatusBadGateway)
	}))
	defer srv.Close()
	c := api.NewClient(srv.URL)

	_, err := c.Status(context.Background(), "gone")
	var ae *api.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound || ae.Message != `no topology named "gone"` {
		t.Fatalf("404: %#v, want an *APIError 404 with the body's message", err)
	}
	if !api.NotFound(err) {
		t.Errorf("NotFound(%v) = false", err)
	}

	_, err = c.Status(context.Background(), "other")
	if !errors.As(err, &ae) || ae.Status != http.StatusBadGateway || ae.Message != "upstream exploded" {
		t.Fatalf("502: %#v, want an *APIError 502 with the body's text", err)
	}
	if api.NotFound(err) || api.NotFound(errors.New("not found")) {
		t.Errorf("NotFound is true for an error other than the daemon's 404")
	}
}

// TestClientUnreachable: no daemon at the address is ErrUnreachable,
// naming the address and how to start one.
func TestClientUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = api.NewClient(addr).List(context.Background())
	if !errors.Is(err, api.ErrUnreachable) {
		t.Fatalf("List against a closed port: %v, want ErrUnreachable", err)
	}
	for _, part := range []string{"http://" + addr, "ardea local", "ARDEA_SERVER"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not name %q", err, part)
		}
	}
}

// TestClientRetriesRateLimited: a call the tenant's rate limit refuses
// (429, nothing done) is sent again after the Retry-After the answer
// names, so it succeeds once the limit lets it through; a context that
// ends meanwhile ends the wait.
func TestClientRetriesRateLimited(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 || r.URL.Query().Get("always") != "" {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"status":429,"message":"tenant acme: over its API rate"}`))
			return
		}
		_, _ = w.Write([]byte(`[{"name":"wc","state":"RUNNING","containers":2,"instances":5}]`))
	}))
	defer srv.Close()
	c := api.NewClient(srv.URL)

	start := time.Now()
	tops, err := c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d requests, want the refused one and its retry", n)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("retried after %v, before the answer's Retry-After (1s)", waited)
	}
	if len(tops) != 1 || tops[0] != (api.Summary{Name: "wc", State: api.StateRunning, Containers: 2, Instances: 5}) {
		t.Errorf("topologies %+v", tops)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = c.Do(ctx, http.MethodGet, "/api/v1/topologies?always=1", nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a call refused until its context ended: %v, want the context's error", err)
	}
}
