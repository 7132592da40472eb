package daemon_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// TestTenantKV: a tenant's own KV buckets through the API and a topology.
//   - Quota: a bucket asked bigger than the tenant's jetstream_disk is
//     refused naming the quota, one made without a size gets at most the
//     quota; a history past 64 and names that are not names are refused.
//   - The API puts, gets, lists and deletes keys.
//   - A topology builtin:kv (spout, bucket in) -> builtin:kv (sink, bucket
//     out, op_field op) runs in real host processes with the tenant's
//     deploy token and copies the bucket, following updates and deletes.
//   - Another tenant can neither read the bucket through the API (not
//     found, as a missing one) nor name it in a topology (refused naming
//     the component and the bucket).
func TestTenantKV(t *testing.T) {
	testutil.RacedToo(t)
	t.Parallel() // a daemon of its own (tiers_test.go)
	d := startDaemonWith(t, daemon.Options{})
	ctx := t.Context()
	client := func(tenant string) *api.Client {
		c := api.NewClient(strings.TrimPrefix(d.URL(), "http://"))
		c.Token = newToken(t, d, tenant, auth.ScopeDeploy)
		return c
	}
	acme, rival := client("acme"), client("rival")
	if err := d.Client().Do(ctx, http.MethodPut, "/api/v1/tenants/acme/quotas", map[string]string{"jetstream_disk": "16MiB"}, nil); err != nil {
		t.Fatal(err)
	}
	refused := func(what string, err error, status int, text string) {
		t.Helper()
		var ae *api.APIError
		if !errors.As(err, &ae) || ae.Status != status || !strings.Contains(ae.Message, text) {
			t.Fatalf("%s: %v, want %d naming %q", what, err, status, text)
		}
	}
	var b api.KVInfo
	refused("a 64 MiB bucket", acme.Do(ctx, http.MethodPost, "/api/v1/kv", api.CreateKVRequest{Name: "big", MaxBytes: 64 << 20}, &b), http.StatusForbidden, "jetstream_disk")
	refused("history 65", acme.Do(ctx, http.MethodPost, "/api/v1/kv", api.CreateKVRequest{Name: "deep", History: 65}, &b), http.StatusBadRequest, "history")
	for _, name := range []string{"a.b", "*", ">", "KV_x y", ""} {
		refused("bucket "+name, acme.Do(ctx, http.MethodPost, "/api/v1/kv", api.CreateKVRequest{Name: name}, &b), http.StatusBadRequest, "bucket name")
	}
	if err := acme.Do(ctx, http.MethodPost, "/api/v1/kv", api.CreateKVRequest{Name: "cfg"}, &b); err != nil {
		t.Fatal(err)
	}
	if b.MaxBytes != 16<<20 || b.History != 1 {
		t.Fatalf("a bucket made without a size under a 16 MiB quota: %+v", b)
	}
	refused("cfg again", acme.Do(ctx, http.MethodPost, "/api/v1/kv", api.CreateKVRequest{Name: "cfg"}, &b), http.StatusConflict, "already has a KV bucket cfg")
	if err := acme.Do(ctx, http.MethodDelete, "/api/v1/kv/cfg", nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"in", "out"} {
		if err := acme.Do(ctx, http.MethodPost, "/api/v1/kv", api.CreateKVRequest{Name: name, History: 2, MaxBytes: 1 << 20}, &b); err != nil {
			t.Fatal(err)
		}
	}
	key := func(bucket, k string) string {
		return "/api/v1/kv/" + bucket + "/value?" + url.Values{"key": {k}}.Encode()
	}
	put := func(c *api.Client, bucket, k, v string) error {
		var e api.KVEntry
		return c.Do(ctx, http.MethodPut, key(bucket, k), api.KVPutRequest{Value: v}, &e)
	}
	want := map[string]string{}
	for i := range 5 {
		k, v := fmt.Sprintf("user/%d.name", i), fmt.Sprintf("name %d", i)
		if err := put(acme, "in", k, v); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	refused("an invalid key", put(acme, "in", "a b", "x"), http.StatusBadRequest, "key")
	var some api.KVKeys
	if err := acme.Do(ctx, http.MethodGet, "/api/v1/kv/in/keys?limit=2", nil, &some); err != nil || len(some.Keys) != 2 || !some.Truncated {
		t.Fatalf("2 of 5 keys: %+v (%v), want 2 and truncated", some, err)
	}
	refused("a key pattern that is not one", acme.Do(ctx, http.MethodGet, "/api/v1/kv/in/keys?filter=a.%3E.b", nil, &some), http.StatusBadRequest, "keys")

	// The topology copies in to out, in its hosts.
	spec := `name: copy
config:
  topology.reliability: at_least_once
spouts:
  - name: source
    module: builtin:kv
    config: {bucket: in}
bolts:
  - name: sink
    module: builtin:kv
    config: {bucket: out, key_field: key, value_field: value, op_field: op}
    inputs: [{from: source}]
`
	// Another tenant may not name acme's buckets: it has none.
	_, err := rival.Submit(ctx, api.SubmitRequest{Name: "copy", Spec: spec})
	refused("rival's topology naming acme's bucket", err, http.StatusBadRequest, "component source: tenant rival has no KV bucket in: create it first")
	testutil.StartsProcesses(t, "ardea host processes")
	if _, err := acme.Submit(ctx, api.SubmitRequest{Name: "copy", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	keys := func(c *api.Client, bucket string) []string {
		var ks api.KVKeys
		if err := c.Do(ctx, http.MethodGet, "/api/v1/kv/"+bucket+"/keys", nil, &ks); err != nil {
			t.Fatal(err)
		}
		return ks.Keys
	}
	copied := func(what string) {
		t.Helper()
		testutil.Eventually(t, what, func() (bool, string) {
			got := keys(acme, "out")
			if len(got) != len(want) {
				return false, fmt.Sprintf("keys %v, want %d", got, len(want))
			}
			for _, k := range got {
				var e api.KVEntry
				if err := acme.Do(ctx, http.MethodGet, key("out", k), nil, &e); err != nil || e.Value != want[k] {
					return false, fmt.Sprintf("%s: %+v %v, want %q", k, e, err, want[k])
				}
			}
			return true, ""
		})
	}
	copied("acme's 5 keys copied into out by its topology")
	// It follows updates and deletes.
	if err := put(acme, "in", "user/1.name", "renamed"); err != nil {
		t.Fatal(err)
	}
	want["user/1.name"] = "renamed"
	if err := acme.Do(ctx, http.MethodDelete, key("in", "user/2.name"), nil, nil); err != nil {
		t.Fatal(err)
	}
	delete(want, "user/2.name")
	copied("the update and the delete copied")

	// The rival tenant: none of acme's buckets exists for it.
	var ls []api.KVInfo
	if err := rival.Do(ctx, http.MethodGet, "/api/v1/kv", nil, &ls); err != nil || len(ls) != 0 {
		t.Fatalf("rival lists %+v (%v)", ls, err)
	}
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/api/v1/kv/out"},
		{http.MethodGet, "/api/v1/kv/out/keys"},
		{http.MethodGet, key("out", "user/0.name")},
		{http.MethodPut, key("out", "user/0.name")},
		{http.MethodDelete, key("out", "user/0.name")},
		{http.MethodDelete, "/api/v1/kv/out"},
	} {
		var body any
		if r.method == http.MethodPut {
			body = api.KVPutRequest{Value: "forged"}
		}
		refused("rival "+r.method+" "+r.path, rival.Do(ctx, r.method, r.path, body, nil), http.StatusNotFound, "tenant rival has no KV bucket out")
	}
	if err := acme.Do(ctx, http.MethodGet, "/api/v1/kv", nil, &ls); err != nil || len(ls) != 2 || ls[0].Name != "in" || ls[1].Name != "out" || ls[1].History != 2 {
		t.Fatalf("acme's buckets: %+v (%v)", ls, err)
	}
	if got := keys(acme, "out"); !slices.Contains(got, "user/0.name") {
		t.Fatalf("acme's out after rival's attempts: %v", got)
	}
	if err := acme.Do(ctx, http.MethodPost, "/api/v1/topologies/copy/kill", nil, nil); err != nil {
		t.Fatal(err)
	}
}
