package daemon_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/connectors"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/deployment"
	"github.com/ardea-dev/ardea/internal/quota"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// padded is mod with a custom section of n bytes appended: a valid
// module with the same code and another digest, n bytes bigger.
func padded(mod []byte, n int) []byte {
	leb := func(v uint64) []byte {
		var b []byte
		for {
			c := byte(v & 0x7f)
			v >>= 7
			if v != 0 {
				b = append(b, c|0x80)
				continue
			}
			return append(b, c)
		}
	}
	name := "ardea-test-padding"
	payload := append(leb(uint64(len(name))), name...)
	payload = append(payload, make([]byte, n)...)
	out := append(slices.Clone(mod), 0)
	out = append(out, leb(uint64(len(payload)))...)
	return append(out, payload...)
}

// wantQuota fails unless err is a 403 naming every one of want.
func wantQuota(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	var ae *api.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusForbidden {
		t.Fatalf("%s: %v, want 403 over a quota", what, err)
	}
	for _, w := range want {
		if !strings.Contains(ae.Message, w) {
			t.Errorf("%s: %q does not say %q", what, ae.Message, w)
		}
	}
}

func tenantQuotas(t *testing.T, d *daemon.Daemon, tenant string) quota.TenantQuotas {
	t.Helper()
	var q quota.TenantQuotas
	if err := d.Client().Do(context.Background(), http.MethodGet, "/api/v1/tenants/"+tenant+"/quotas", nil, &q); err != nil {
		t.Fatal(err)
	}
	return q
}

func putQuotas(t *testing.T, d *daemon.Daemon, tenant string, q map[string]any) {
	t.Helper()
	if err := d.Client().Do(context.Background(), http.MethodPut, "/api/v1/tenants/"+tenant+"/quotas", q, nil); err != nil {
		t.Fatal(err)
	}
}

func storedModules(t *testing.T, d *daemon.Daemon, tenant string) (int, int64) {
	t.Helper()
	n, b, err := d.StoredModules(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	return n, b
}

// TestQuotaAdmitsEveryPath: a tenant limited to 6 instances, 2
// containers and 4,096 wasm pages runs a word count (3 instances, 1
// container, 2,048 pages) in real host processes. An update, an apply (the
// numbers of issue 30: parallelism 11 more, topology.packing.containers 6,
// wasm.memory.pages 65536: 13 instances, 6 containers, 786,432 pages; as
// a dry run too) and a swap past its store quota are all refused, each
// naming the quota, its limit and what it asked; nothing changed and the
// refused apply's and swap's modules are not left in the store.
func TestQuotaAdmitsEveryPath(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	t.Parallel() // a daemon of its own (tiers_test.go)
	d := startDaemonWith(t, daemon.Options{})
	ctx := context.Background()
	c := d.Client()
	c.Token = newToken(t, d, "acme", auth.ScopeDeploy)
	limits := map[string]any{"instances": 6, "containers": 2, "wasm_memory_pages": 4096}
	putQuotas(t, d, "acme", limits)
	req, err := pausedSubmit("wc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, "wc", api.StatePaused)
	before := tenantQuotas(t, d, "acme").Usage
	if before == nil || before.Instances != 3 || before.Containers != 1 || before.WasmMemoryPages != 2048 {
		t.Fatalf("usage after the submit: %+v", before)
	}
	mods, _ := storedModules(t, d, "acme")

	_, err = c.Action(ctx, "wc", "update", nil, api.UpdateRequest{Parallelism: map[string]int{"count": 5}})
	wantQuota(t, "update to 7 instances", err, "quota instances: limit 6, in use 3, this update adds 4")

	b := ardea.NewBuilder("wc")
	b.Set("topology.packing.containers", "6")
	b.Spout("lines", "builtin:generator").Config("rate", "10")
	b.Bolt("split", "split.wasm").Shuffle("lines").Output("default", "word").Config("wasm.memory.pages", "65536")
	b.Bolt("count", "count.wasm").Parallelism(11).Fields("split", "word").Output("default", "word", "count").Config("wasm.memory.pages", "65536")
	top, err := b.BuildWith(ardea.ValidateOptions{SkipModuleCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := top.Format()
	if err != nil {
		t.Fatal(err)
	}
	bigCount := padded(req.Modules["count"], 256<<10)
	apply := api.ApplyRequest{Spec: string(spec), Modules: map[string][]byte{"split": req.Modules["split"], "count": bigCount}}
	for _, dry := range []bool{true, false} {
		apply.DryRun = dry
		_, err = c.Apply(ctx, "wc", apply)
		wantQuota(t, "apply", err, "quota instances: limit 6, in use 3, this apply adds 10",
			"quota containers: limit 2, in use 1, this apply adds 5",
			"quota wasm_memory_pages: limit 4096, in use 2048, this apply adds 784384")
	}
	st, err := c.Status(ctx, "wc")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Containers) != 1 || st.State != api.StatePaused {
		t.Errorf("after the refused apply: %s with %d containers, want PAUSED with 1", st.State, len(st.Containers))
	}
	if after := tenantQuotas(t, d, "acme").Usage; after.Instances != 3 || after.Containers != 1 || after.WasmMemoryPages != 2048 {
		t.Errorf("usage after the refused apply: %+v", after)
	}

	// The swap runs the same plan; what it adds is its module's bytes in
	// the tenant's store, past a jetstream_disk quota just over the usage.
	limits["jetstream_disk"] = tenantQuotas(t, d, "acme").Usage.JetStreamDisk + 64<<10
	putQuotas(t, d, "acme", limits)
	_, err = c.Swap(ctx, "wc", api.SwapRequest{Component: "count", Module: bigCount})
	wantQuota(t, "swap of a bigger module", err, "quota jetstream_disk: limit", "this swap adds")
	if n, _ := storedModules(t, d, "acme"); n != mods {
		t.Errorf("the refused apply and swap left modules: %d stored, %d before", n, mods)
	}
}

// TestRefusedSubmitStoresNothing: submits refused by the built-in
// policy, by a quota and for their name store none of their modules: the
// tenant's store holds what it held before, to the byte.
func TestRefusedSubmitStoresNothing(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	t.Parallel() // a daemon of its own (tiers_test.go)
	d := startDaemonWith(t, daemon.Options{})
	ctx := context.Background()
	c := d.Client()
	c.Token = newToken(t, d, "globex", auth.ScopeDeploy)
	putQuotas(t, d, "globex", map[string]any{"containers": 1})
	req, err := pausedSubmit("wc")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	n0, b0 := storedModules(t, d, "globex")
	big := map[string][]byte{"split": padded(req.Modules["split"], 1<<20), "count": padded(req.Modules["count"], 1<<20)}

	// Over the containers quota (a second topology needs a container).
	over := req
	over.Name, over.Modules = "wc2", big
	_, err = c.Submit(ctx, over)
	wantQuota(t, "a submit over containers", err, "quota containers: limit 1, in use 1, this submit adds 1")

	// Refused by the built-in policy (a tenant may not use builtin:file).
	b := ardea.NewBuilder("files")
	b.Spout("lines", "builtin:generator")
	b.Bolt("split", "split.wasm").Shuffle("lines").Output("default", "word")
	b.Bolt("count", "count.wasm").Fields("split", "word").Output("default", "word", "count")
	b.Bolt("out", "builtin:file").Config("path", filepath.Join(t.TempDir(), "out")).Shuffle("count")
	top, err := b.BuildWith(ardea.ValidateOptions{SkipModuleCheck: true, Builtins: connectors.Outputs, BuiltinConfig: connectors.ValidateConfig})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := top.Format()
	if err != nil {
		t.Fatal(err)
	}
	var ae *api.APIError
	if _, err := c.Submit(ctx, api.SubmitRequest{Name: "files", Spec: string(spec), Modules: big}); !errors.As(err, &ae) || ae.Status != http.StatusForbidden {
		t.Errorf("a submit with builtin:file: %v, want 403", err)
	}

	// A name in use.
	same := req
	same.Modules = big
	if _, err := c.Submit(ctx, same); !errors.As(err, &ae) || ae.Status != http.StatusConflict {
		t.Errorf("a submit under a name in use: %v, want 409", err)
	}

	if n, b := storedModules(t, d, "globex"); n != n0 || b != b0 {
		t.Errorf("after three refused submits the store holds %d modules, %d bytes; before %d, %d", n, b, n0, b0)
	}
}

// TestResumeOverQuota: a topology that no longer fits its tenant's quotas
// when the daemon starts again (the deployment file lowered them) does
// not resume: it is FAILED, and its status names the quota and says what
// to do. The default tenant's topology resumes.
func TestResumeOverQuota(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	t.Parallel() // a daemon of its own (tiers_test.go)
	data := t.TempDir()
	start := func(q *quota.Config) *daemon.Daemon {
		d, err := daemon.Start(context.Background(), daemon.Options{
			DataDir: hostCache(data), Listen: "127.0.0.1:0", HostPath: ardeaBin, CacheDir: compileCache,
			HostArgs: []string{"--log-format", "json", "--log-level", "info", "host"}, MaxRestarts: 2,
			Security: daemon.Security{Quotas: q},
		})
		if err != nil {
			t.Fatal(err)
		}
		return withAdmin(d)
	}
	stop := func(d *daemon.Daemon) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Errorf("close daemon: %v", err)
		}
	}
	d := start(nil)
	acme := newToken(t, d, "acme", auth.ScopeDeploy)
	c := d.Client()
	c.Token = acme
	for _, cl := range []*api.Client{c, d.Client()} {
		if err := submitPausedErr(cl, "wc"); err != nil {
			stop(d)
			t.Fatal(err)
		}
		waitState(t, cl, "wc", api.StatePaused)
	}
	stop(d)

	f, err := deployment.Parse("deploy.yaml", []byte("quotas:\n  tenants:\n    acme:\n      instances: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.Quotas
	d = start(cfg)
	t.Cleanup(func() { stop(d) })
	c = d.Client()
	c.Token = acme
	st, err := c.Status(context.Background(), "wc")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != api.StateFailed || !strings.Contains(st.Message, "quota instances: limit 2, in use 0, this resume adds 3") ||
		!strings.Contains(st.Message, "not resumed after a daemon restart") {
		t.Errorf("acme's wc after a restart over its quota: %s %q", st.State, st.Message)
	}
	waitState(t, d.Client(), "wc", api.StatePaused)
}

// TestDefaultQuotas: a fresh daemon without a deployment file gives a new
// tenant limited quotas, sized from the machine; the default tenant (the
// operator's) stays unlimited; the deployment file and the admin API
// still set others.
func TestDefaultQuotas(t *testing.T) {
	testutil.RacedToo(t)
	d := startDaemonWith(t, daemon.Options{})
	newToken(t, d, "acme", auth.ScopeDeploy)
	q := tenantQuotas(t, d, "acme")
	if q.Quotas.Containers <= 0 || q.Quotas.Instances <= 0 || q.Quotas.WasmMemoryPages <= 0 || q.Quotas.CPU <= 0 {
		t.Fatalf("a new tenant's quotas: %+v, want containers, instances, wasm pages and CPU limited", q.Quotas)
	}
	if want := quota.Defaults(quota.ThisMachine()).Over(quota.Quotas{}); q.Quotas != want || q.Defaults.Over(quota.Quotas{}) != want {
		t.Errorf("a new tenant's quotas: %+v (defaults %+v), want the machine's defaults %+v", q.Quotas, q.Defaults.Quotas, want)
	}
	if def := tenantQuotas(t, d, "default"); def.Quotas != (quota.Quotas{}) {
		t.Errorf("the default tenant's quotas: %+v, want unlimited", def.Quotas)
	}
	putQuotas(t, d, "acme", map[string]any{"cpu": "unlimited", "containers": 64})
	if q := tenantQuotas(t, d, "acme").Quotas; q.CPU != 0 || q.Containers != 64 || q.Instances <= 0 {
		t.Errorf("after an override: %+v", q)
	}
}
