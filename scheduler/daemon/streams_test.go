package daemon_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// TestTenantStreamQuota: a tenant's streams are bounded by its quota
// jetstream_disk: a stream asked bigger is refused naming the quota, one
// made without a size gets at most the quota, and the NATS account's
// limit refuses a second stream once the first reserved the whole quota.
func TestTenantStreamQuota(t *testing.T) {
	testutil.RacedToo(t)
	d := startDaemonWith(t, daemon.Options{})
	tok := newToken(t, d, "acme", auth.ScopeDeploy)
	ctx := t.Context()
	if err := d.Client().Do(ctx, http.MethodPut, "/api/v1/tenants/acme/quotas", map[string]string{"jetstream_disk": "8MiB"}, nil); err != nil {
		t.Fatal(err)
	}
	c := api.NewClient(strings.TrimPrefix(d.URL(), "http://"))
	c.Token = tok
	forbidden := func(what string, err error) {
		t.Helper()
		var ae *api.APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusForbidden || !strings.Contains(ae.Message, "jetstream_disk") {
			t.Fatalf("%s: %v, want 403 naming the quota jetstream_disk", what, err)
		}
	}
	var s api.StreamInfo
	forbidden("a 64 MiB stream", c.Do(ctx, http.MethodPost, "/api/v1/streams", api.CreateStreamRequest{Name: "big", MaxBytes: 64 << 20}, &s))
	if err := c.Do(ctx, http.MethodPost, "/api/v1/streams", api.CreateStreamRequest{Name: "small"}, &s); err != nil {
		t.Fatal(err)
	}
	if s.MaxBytes != 8<<20 {
		t.Fatalf("a stream made without a size under an 8 MiB quota: max_bytes %d", s.MaxBytes)
	}
	forbidden("a second stream past the quota", c.Do(ctx, http.MethodPost, "/api/v1/streams", api.CreateStreamRequest{Name: "more", MaxBytes: 1 << 20}, &s))
	// Names that are not names never reach JetStream.
	for _, name := range []string{"a.b", "*", ">", "KV_x y", ""} {
		err := c.Do(ctx, http.MethodPost, "/api/v1/streams", api.CreateStreamRequest{Name: name}, &s)
		var ae *api.APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, "stream name") {
			t.Fatalf("stream %q: %v, want 400 naming the stream name", name, err)
		}
	}
}
