package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// TestAuditFloodKeepsAuthenticatedRecords is issue 30's audit wipe: calls
// without a token and with 200 KB paths, enough to fill the audit log's
// size many times over had each been stored whole. After the flood, the
// tenant's earlier submit is still in the log as the API (and so `ardea
// audit`) reads it; every record is within audit.MaxRecordBytes with its
// path cut; the refusals past the burst are summarized, not recorded one
// by one, and the summary counts them all.
func TestAuditFloodKeepsAuthenticatedRecords(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	const (
		flood = 40
		burst = 5
	)
	d := startDaemonWith(t, daemon.Options{Security: daemon.Security{Audit: audit.Options{
		MaxBytes:     1 << 20,
		RefusedRate:  1e-3, // one record in 1000 s after the burst: the flood is summarized
		RefusedBurst: burst,
	}}})
	acme := newToken(t, d, "acme", auth.ScopeDeploy)
	spec := "name: small\nspouts:\n  - {name: s, module: builtin:generator}\n"
	if code, body := call(t, d, http.MethodPost, "/api/v1/topologies", acme, api.SubmitRequest{Name: "small", Spec: spec}, nil); code != http.StatusCreated {
		t.Fatalf("submit: %d %s", code, body)
	}

	long := strings.Repeat("a", 200_000)
	for range flood {
		code, _ := call(t, d, http.MethodPost, "/api/v1/topologies/"+long+"/kill", "", struct{}{}, nil)
		if code != http.StatusUnauthorized {
			t.Fatalf("a call without a token: %d, want 401", code)
		}
	}

	var recs []audit.Record
	if err := d.Client().Do(context.Background(), http.MethodGet, "/api/v1/audit?limit=10000", nil, &recs); err != nil {
		t.Fatal(err)
	}
	var submitted bool
	var one, suppressed, summaries int
	for _, r := range recs {
		data, _ := json.Marshal(r)
		if len(data) > audit.MaxRecordBytes {
			t.Errorf("a record of %d bytes (bound %d): %.200s", len(data), audit.MaxRecordBytes, data)
		}
		switch {
		case r.Action == audit.ActionSubmit && r.Target == "small" && r.Tenant == "acme" && r.Result.Code == http.StatusCreated:
			submitted = true
		case r.Action == audit.ActionRefusedSummary:
			summaries++
			n, _ := r.Params["suppressed"].(float64)
			suppressed += int(n)
			if !strings.Contains(r.Result.Error, "refused calls from 127.0.0.1 were not recorded one by one") {
				t.Errorf("summary: %q", r.Result.Error)
			}
		case r.Result.Code == http.StatusUnauthorized && r.Action == audit.ActionKill:
			one++
			if len(r.Path) > 300 || len(r.Target) > 300 || !strings.Contains(r.Path, "(200024 bytes)") {
				t.Errorf("a refused call's path is not cut: %d bytes (%.80s...), target %d bytes", len(r.Path), r.Path, len(r.Target))
			}
		}
	}
	if !submitted {
		t.Errorf("acme's submit is gone from the audit log after the flood (%d records)", len(recs))
	}
	if one != burst || suppressed != flood-burst || summaries != 1 {
		t.Errorf("the flood of %d: %d recorded one by one (want %d), %d summarized in %d summaries (want %d in 1)",
			flood, one, burst, suppressed, summaries, flood-burst)
	}
}
