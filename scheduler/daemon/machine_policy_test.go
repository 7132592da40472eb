package daemon_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
	"github.com/ardea-dev/ardea/scheduler/settings"
)

// poisonSpec is an effectively-once topology whose wasm bolt (the poison
// module) fails on the lines of in that start with "poison", with
// topology.bolt.max_tuple_rollbacks 0; topSet and upperSet are further
// settings of the topology and of the bolt's config.
func poisonSpec(t *testing.T, name, in, out string, topSet, upperSet map[string]string) string {
	t.Helper()
	b := ardea.NewBuilder(name)
	b.Set("topology.reliability", "effectively_once")
	b.Set("topology.checkpoint.interval", "100ms")
	b.Set("topology.bolt.max_tuple_rollbacks", "0")
	for k, v := range topSet {
		b.Set(k, v)
	}
	b.Spout("lines", "builtin:file").Config("path", in)
	up := b.Bolt("upper", "upper.wasm").Shuffle("lines").Output("default", "line")
	for k, v := range upperSet {
		up.Config(k, v)
	}
	b.Bolt("out", "builtin:file").Shuffle("upper").Config("path", out)
	top, err := b.BuildWith(ardea.ValidateOptions{SkipModuleCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := top.Format()
	if err != nil {
		t.Fatal(err)
	}
	return string(spec)
}

// TestTenantMachinePolicy is the abuse test of issue 30's item 1, with
// real host processes: tenant acme, allowed by the deployment file only
// the directory allowed/, names a file outside it (a 0600 file of the
// daemon's user) as its wasm bolt's dead letters, topology-wide, in the
// bolt's config, and by a path that climbs out of allowed/; by submit and
// by apply. Each is refused (403 naming the component or topology setting
// and the field) and the file is never touched. A topology of acme whose
// bolt gives up a poison tuple has it dead-lettered where the daemon
// chose, in acme's space (its dead-letter stream, in its NATS account),
// listed by `ardea dlq`, and purged when the topology is killed. Other settings that
// reach the machine (a built-in's default listen address, brokers) are
// refused too unless allowed. Every submit's and apply's audit record
// names the spec's digest and what it reaches.
func TestTenantMachinePolicy(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	t.Parallel() // a daemon of its own (tiers_test.go)
	dir := t.TempDir()
	allowed := filepath.Join(dir, "allowed")
	if err := os.Mkdir(allowed, 0o700); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(dir, "victim")
	const victimText = "export PATH=/usr/bin\n"
	if err := os.WriteFile(victim, []byte(victimText), 0o600); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "data")
	d := startDaemonWith(t, daemon.Options{DataDir: dataDir, Security: daemon.Security{
		TenantAllow: map[string]daemon.TenantAllow{"acme": {Paths: []string{allowed}, Addresses: []string{"kafka.acme.internal:9092"}}},
	}})
	c := d.Client()
	c.Token = newToken(t, d, "acme", auth.ScopeDeploy)
	ctx := context.Background()
	mod, err := os.ReadFile(testutil.RepoPath("host/testdata/poison/go.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	in, out := filepath.Join(allowed, "in.txt"), filepath.Join(allowed, "out.txt")
	if err := os.WriteFile(in, []byte("one\npoison $(touch "+filepath.Join(dir, "pwned")+")\ntwo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	forbidden := func(what string, err error, want ...string) {
		t.Helper()
		var ae *api.APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusForbidden {
			t.Errorf("%s: %v, want 403", what, err)
			return
		}
		for _, w := range append(want, "reaches the daemon's machine", "security.tenant_allow.acme") {
			if !strings.Contains(ae.Message, w) {
				t.Errorf("%s: %q does not name %q", what, ae.Message, w)
			}
		}
	}
	mods := map[string][]byte{"upper": mod}
	refused := map[string]string{}
	for _, tc := range []struct {
		name          string
		topSet, upSet map[string]string
		want          []string
	}{
		{"dl-topology", map[string]string{"topology.bolt.dead_letter": victim}, nil, []string{`topology setting "topology.bolt.dead_letter"`, victim}},
		{"dl-component", nil, map[string]string{"topology.bolt.dead_letter": victim}, []string{`component upper (upper.wasm): config "topology.bolt.dead_letter"`}},
		{"dl-climb", nil, map[string]string{"topology.bolt.dead_letter": allowed + "/../victim"}, []string{"component upper"}},
		{"dl-relative", map[string]string{"topology.bolt.dead_letter": "victim"}, nil, []string{"topology.bolt.dead_letter"}},
	} {
		spec := poisonSpec(t, tc.name, in, out, tc.topSet, tc.upSet)
		refused[tc.name] = spec
		_, err := c.Submit(ctx, api.SubmitRequest{Name: tc.name, Spec: spec, Modules: mods})
		forbidden("submit "+tc.name, err, tc.want...)
	}
	for _, tc := range []struct{ name, spec, want string }{
		{"http", "name: http\nspouts:\n  - {name: in, module: \"builtin:http\"}\nbolts:\n  - {name: out, module: \"builtin:file\", config: {path: " + out + "}, inputs: [{from: in}]}\n", `component in (builtin:http): config "listen" = "127.0.0.1:8088"`},
		{"kafka", "name: kafka\nspouts:\n  - {name: in, module: \"builtin:kafka\", config: {brokers: \"kafka.acme.internal:9092,evil.example:9092\", topics: t}}\nbolts:\n  - {name: out, module: \"builtin:file\", config: {path: " + out + "}, inputs: [{from: in}]}\n", `component in (builtin:kafka): config "brokers"`},
	} {
		_, err := c.Submit(ctx, api.SubmitRequest{Name: tc.name, Spec: tc.spec})
		forbidden("submit "+tc.name, err, tc.want)
	}

	// Without a dead-letter setting, acme's poison tuple goes to the
	// daemon's place in acme's space, and `ardea dlq` lists it.
	if _, err := c.Submit(ctx, api.SubmitRequest{Name: "eo", Spec: poisonSpec(t, "eo", in, out, nil, nil), Modules: mods}); err != nil {
		t.Fatalf("acme submits eo: %v", err)
	}
	st := waitState(t, c, "eo", api.StateFinished)
	if got := readLines(t, out); strings.Join(got, ",") != "ONE,TWO" && strings.Join(got, ",") != "TWO,ONE" {
		t.Errorf("eo's sink: %q, want ONE and TWO (%s: %s)", got, st.State, st.Message)
	}
	res, err := c.DeadLetters(ctx, "eo", "", false)
	if err != nil {
		t.Fatalf("acme's dlq of eo: %v", err)
	}
	if len(res.DeadLetters) != 1 || res.DeadLetters[0].Component != "upper" || !strings.Contains(res.DeadLetters[0].Value, "poison $(touch") ||
		!strings.Contains(res.DeadLetters[0].Error, "poison tuple") {
		t.Errorf("acme's dlq of eo: %+v, want the poison line of bolt upper with its error", res.DeadLetters)
	}
	// The place is acme's dead-letter stream, in its NATS account (its
	// quota jetstream_disk), bounded; one message on eo's upper's subject
	// for the tuple's hash. No file.
	dls, err := d.DeadLetterStream(ctx, "acme", names.TopologyDeadLetters("acme", "eo"))
	if err != nil {
		t.Fatalf("acme's dead-letter stream: %v", err)
	}
	hash := "<none listed>"
	if len(res.DeadLetters) > 0 {
		hash = strings.TrimPrefix(res.DeadLetters[0].Source, "tuple ")
	}
	subject := names.DeadLetterSubject("acme", "eo", "upper", hash)
	if dls.State.Msgs != 1 || len(dls.State.Subjects) != 1 || dls.State.Subjects[subject] != 1 ||
		dls.Config.MaxBytes <= 0 || dls.Config.MaxBytes > settings.MaxDeadLetterBytes {
		t.Errorf("acme's dead-letter stream: %d messages on %v, max_bytes %d; want one on %s, bounded", dls.State.Msgs, dls.State.Subjects, dls.Config.MaxBytes, subject)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "dead-letters")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a dead-letter file under the data dir: %v, want none (the stream)", err)
	}

	// apply cannot bring what submit may not.
	if err := submitPausedErr(c, "idle"); err != nil {
		t.Fatal(err)
	}
	_, err = c.Apply(ctx, "idle", api.ApplyRequest{Spec: refused["dl-topology"], Modules: mods})
	forbidden("apply with a dead-letter path", err, `topology setting "topology.bolt.dead_letter"`)

	if b, err := os.ReadFile(victim); err != nil || string(b) != victimText {
		t.Errorf("the victim file: %q %v, want it untouched", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Errorf("a dead letter's text ran as a command")
	}

	// Killed, the topology's dead letters go with it.
	if _, err := c.Action(ctx, "eo", "kill", nil, nil); err != nil {
		t.Fatal(err)
	}
	if dls, err := d.DeadLetterStream(ctx, "acme", names.TopologyDeadLetters("acme", "eo")); err != nil || dls.State.Msgs != 0 {
		t.Errorf("after kill, eo's dead letters: %+v %v, want them purged", dls, err)
	}

	// The audit records name the spec's digest and what it reaches.
	var recs []audit.Record
	if err := d.Client().Do(ctx, http.MethodGet, "/api/v1/audit?tenant=acme", nil, &recs); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(refused["dl-topology"]))
	found := map[string]bool{}
	for _, r := range recs {
		spec, _ := r.Params["spec"].(map[string]any)
		reaches := fmt.Sprint(r.Params["reaches"])
		if spec == nil || spec["sha256"] != hex.EncodeToString(sum[:]) {
			continue
		}
		if r.Result.Code == http.StatusForbidden && strings.Contains(reaches, `topology.bolt.dead_letter" = "`+victim) {
			found[r.Path] = true
		}
	}
	for _, p := range []string{"/api/v1/topologies", "/api/v1/topologies/idle/apply"} {
		if !found[p] {
			t.Errorf("no refused audit record of %s with the spec's digest and its dead-letter path among %d records: %+v", p, len(recs), recs)
		}
	}
}

// TestHostRefusesMachineSettings: the host process checks the machine
// policy itself. acme runs a topology reading a file in a directory the
// deployment file allowed it; the daemon restarts with a deployment file
// that no longer does, and resumes the topology (stored, never checked
// again by the daemon): each host process refuses to load it, naming the
// component and the field, and the topology fails without reading the
// file.
func TestHostRefusesMachineSettings(t *testing.T) {
	testutil.RacedToo(t)
	testutil.StartsProcesses(t, "ardea host processes")
	t.Parallel() // a daemon of its own (tiers_test.go)
	dir := t.TempDir()
	allowed := filepath.Join(dir, "allowed")
	if err := os.Mkdir(allowed, 0o700); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "data")
	start := func(paths []string) *daemon.Daemon {
		d, err := daemon.Start(context.Background(), daemon.Options{DataDir: hostCache(dataDir), Listen: "127.0.0.1:0", HostPath: ardeaBin, CacheDir: compileCache,
			HostArgs: []string{"--log-format", "json", "--log-level", "info", "host"}, MaxRestarts: 1,
			Tenants:  func(context.Context) ([]string, error) { return []string{"default", "acme"}, nil },
			Security: daemon.Security{TenantAllow: map[string]daemon.TenantAllow{"acme": {Paths: paths}}}})
		if err != nil {
			t.Fatal(err)
		}
		withAdmin(d)
		return d
	}
	closeD := func(d *daemon.Daemon) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Errorf("close daemon: %v", err)
		}
	}
	d := start([]string{allowed})
	out := filepath.Join(allowed, "out.txt")
	if err := d.Submit(as("acme"), api.SubmitRequest{Name: "wc", Spec: counted(t, "wc", out, 10), Deactivated: true}); err != nil {
		t.Fatalf("acme submits wc: %v", err)
	}
	closeD(d)
	// The first daemon's hosts may have opened the sink's file while it
	// was allowed (the topology was deactivated, not unstarted): what is
	// checked is that nothing is written once the policy is narrowed.
	if err := os.Remove(out); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}

	d = start(nil)
	defer closeD(d)
	testutil.EventuallyWithin(t, 2*time.Minute, "acme's wc fails in its hosts", func() bool {
		top, err := d.Tracker().Topology(as("acme"), "wc")
		return err == nil && top.State == string(api.StateFailed)
	})
	top, err := d.Tracker().Topology(as("acme"), "wc")
	if err != nil {
		t.Fatal(err)
	}
	msg := top.Message
	if !strings.Contains(msg, `component out (builtin:file): config "path"`) || !strings.Contains(msg, "reaches the daemon's machine") {
		t.Errorf("acme's wc failed with %q, want the host's refusal naming component out and its path", msg)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("the host wrote %s though the policy no longer allows it", out)
	}
}
