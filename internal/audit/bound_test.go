package audit_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ardea-dev/ardea/internal/audit"
)

// TestRecordBounds: a record with a huge path, target, error and
// parameters is stored within MaxRecordBytes, its path cut (saying how
// long it was) and its parameters replaced by a note.
func TestRecordBounds(t *testing.T) {
	l := open(t, connect(t), audit.Options{})
	long := strings.Repeat("p", 500_000)
	params := map[string]any{}
	for i := range 1000 {
		params[fmt.Sprint("k", i)] = strings.Repeat("v", 200)
	}
	rec := audit.Record{Principal: "token t1 of acme", Tenant: "acme", Action: audit.Action("POST " + long), Target: long,
		Method: "POST", Path: "/" + long, Params: params, Result: audit.Result{Code: 400, Error: long}, Source: "127.0.0.1:9"}
	if err := l.Append(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	got, err := l.Query(t.Context(), audit.Filter{})
	if err != nil || len(got) != 1 {
		t.Fatalf("query: %d records, %v", len(got), err)
	}
	data, _ := json.Marshal(got[0])
	if len(data) > audit.MaxRecordBytes {
		t.Errorf("stored record: %d bytes, bound %d", len(data), audit.MaxRecordBytes)
	}
	if !strings.HasSuffix(got[0].Path, "...(500001 bytes)") || len(got[0].Path) > 300 {
		t.Errorf("path: %d bytes, ends %q", len(got[0].Path), got[0].Path[max(0, len(got[0].Path)-20):])
	}
	if note, _ := got[0].Params["truncated"].(string); !strings.Contains(note, "audit.MaxRecordBytes") || len(got[0].Params) != 1 {
		t.Errorf("params: %.200v", got[0].Params)
	}
}

// TestRefusedCallsSummarized: refused calls past the burst are counted,
// and a summary per tenant and source is appended once its interval has
// ended (here by the next append) or when the log is read; the refused
// calls live in their own stream, whose filling cannot push an
// authenticated call's record out.
func TestRefusedCallsSummarized(t *testing.T) {
	nc := connect(t)
	l := open(t, nc, audit.Options{MaxBytes: 64 << 10, RefusedMaxBytes: 8 << 10, RefusedRate: 1e-3, RefusedBurst: 2, SummaryInterval: time.Nanosecond})
	ctx := t.Context()
	ok := audit.Record{Principal: "token t1 of acme", Tenant: "acme", Action: audit.ActionSubmit, Target: "wc", Result: audit.Result{OK: true, Code: 201}}
	if err := l.Append(ctx, ok); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		src := "10.0.0.1:1234"
		if i%10 == 9 {
			src = "10.0.0.2:1"
		}
		if err := l.Append(ctx, audit.Record{Action: audit.ActionRead, Method: "GET", Path: "/x" + strings.Repeat("y", 1000), Result: audit.Result{Code: 401, Error: "no token"}, Source: src}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := l.Query(ctx, audit.Filter{Limit: audit.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	var submit bool
	one, suppressed := map[string]int{}, map[string]int{}
	for _, r := range got {
		switch {
		case r.Action == audit.ActionSubmit:
			submit = true
		case r.Action == audit.ActionRefusedSummary:
			n, _ := r.Params["suppressed"].(float64)
			suppressed[r.Source] += int(n)
			if codes, _ := r.Params["codes"].(map[string]any); codes["401"] != n {
				t.Errorf("summary's codes %v, suppressed %v", codes, n)
			}
		default:
			one[strings.Split(r.Source, ":")[0]]++
		}
	}
	if !submit {
		t.Error("the authenticated submit is gone")
	}
	// 45 calls from 10.0.0.1, 5 from 10.0.0.2: two of each recorded, the
	// rest counted (some summaries may have been pushed out of the small
	// refused stream by later ones; the last ones are there).
	if one["10.0.0.1"] > 2 || one["10.0.0.2"] > 2 || suppressed["10.0.0.1"] == 0 || suppressed["10.0.0.2"] == 0 {
		t.Errorf("recorded one by one %v, summarized %v", one, suppressed)
	}
	js, _ := jetstream.New(nc)
	s, err := js.Stream(ctx, audit.DefaultStream+"_refused")
	if err != nil {
		t.Fatal(err)
	}
	if i := info(t, s); i.State.Bytes > 8<<10 {
		t.Errorf("refused stream: %d bytes, limit 8 KiB", i.State.Bytes)
	}
}
