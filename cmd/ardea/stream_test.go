//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// tenantToken makes tenant and a token of scope for it with the daemon's
// admin token, and returns the token.
func tenantToken(t *testing.T, d *clusterDaemon, tenant, scope string) string {
	t.Helper()
	out := d.ok(t, "token", "create", "--tenant", tenant, "--scope", scope, "--name", tenant+"-"+scope)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// TestTenantStreamsEndToEnd: a tenant with only a deploy token (no admin
// leave) creates its own streams, publishes lines, runs a topology
// builtin:stream -> its wasm bolt -> builtin:stream in real host
// processes, and reads the output with `ardea stream read`. Another
// tenant sees none of it: its reads, publishes and deletes of the first
// tenant's streams are not found.
func TestTenantStreamsEndToEnd(t *testing.T) {
	testutil.StartsProcesses(t, "ardea local and its host processes")
	besideOthers(t)
	d := startDaemon(t, t.TempDir())
	d.ok(t, "tenant", "create", "acme")
	d.ok(t, "tenant", "create", "rival")
	acme := tenantToken(t, d, "acme", "deploy")
	rival := tenantToken(t, d, "rival", "deploy")
	as := func(tok string, args ...string) (int, string, string) {
		return cli(t, append(args, "--server", d.server, "--token", tok)...)
	}
	ok := func(tok string, args ...string) string {
		t.Helper()
		code, out, errOut := as(tok, args...)
		if code != 0 {
			t.Fatalf("ardea %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
		}
		return out
	}

	ok(acme, "stream", "create", "lines")
	ok(acme, "stream", "create", "echoed", "--max-bytes", "16MiB")
	var want []string
	for i := range 40 {
		want = append(want, fmt.Sprintf("line %d of acme's input", i))
	}
	in := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(in, []byte(strings.Join(want, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := ok(acme, "stream", "publish", "lines", "--file", in); !strings.Contains(out, "40 messages published") {
		t.Fatalf("publish: %q", out)
	}

	top := filepath.Join(t.TempDir(), "streams.yaml")
	yaml := fmt.Sprintf(`name: relay
config:
  topology.reliability: at_least_once
spouts:
  - name: source
    module: builtin:stream
    config: {stream: lines}
bolts:
  - name: echo
    module: %s
    inputs: [{from: source}]
    outputs: {default: [subject, data]}
  - name: sink
    module: builtin:stream
    config: {stream: echoed}
    inputs: [{from: echo}]
`, fixture("echo"))
	if err := os.WriteFile(top, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	ok(acme, "submit", top)

	// At least once: each line arrives, perhaps more than once (a message
	// not acked within ack_wait is redelivered); nothing else arrives.
	distinct := map[string]bool{}
	testutil.EventuallyWithin(t, 2*time.Minute, "acme's 40 lines in its output stream", func() (bool, string) {
		var read api.StreamRead
		if err := json.Unmarshal([]byte(ok(acme, "stream", "read", "echoed", "--limit", "1000", "-o", "json")), &read); err != nil {
			t.Fatal(err)
		}
		for _, m := range read.Messages {
			var v struct{ Subject, Data string }
			if err := json.Unmarshal([]byte(m.Data), &v); err != nil {
				t.Fatalf("output message %d: %q: %v", m.Seq, m.Data, err)
			}
			if v.Subject != "stream.lines" || !slices.Contains(want, v.Data) {
				t.Fatalf("output message %d: %q is not one of acme's lines", m.Seq, m.Data)
			}
			distinct[v.Data] = true
		}
		return len(distinct) == len(want), fmt.Sprintf("%d of %d lines", len(distinct), len(want))
	})
	var ls []api.StreamInfo
	if err := json.Unmarshal([]byte(ok(acme, "stream", "ls", "-o", "json")), &ls); err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2 || ls[0].Name != "echoed" || ls[0].MaxBytes != 16<<20 || ls[1].Name != "lines" || ls[1].Messages != 40 {
		t.Fatalf("acme's streams: %+v", ls)
	}

	// The rival tenant: none of acme's streams exists for it.
	if out := ok(rival, "stream", "ls", "-o", "json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("rival lists %s", out)
	}
	for _, args := range [][]string{
		{"stream", "read", "echoed"},
		{"stream", "publish", "lines", "forged"},
		{"stream", "rm", "lines"},
	} {
		code, _, errOut := as(rival, args...)
		if code == 0 || !strings.Contains(errOut, "tenant rival has no stream") {
			t.Fatalf("rival: ardea %s: exit %d, stderr %q; want refused as not found", strings.Join(args, " "), code, errOut)
		}
	}
	// Its topology naming acme's streams is refused at submit: it has none.
	if code, _, errOut := as(rival, "submit", top); code == 0 || !strings.Contains(errOut, "component source: tenant rival has no stream lines: create it first") {
		t.Fatalf("rival's submit naming acme's streams: exit %d, stderr %q", code, errOut)
	}
	// A rival stream of the same name is another stream.
	ok(rival, "stream", "create", "lines")
	ok(rival, "stream", "publish", "lines", "rival's line")
	var acmeIn api.StreamRead
	if err := json.Unmarshal([]byte(ok(acme, "stream", "read", "lines", "--limit", "1000", "-o", "json")), &acmeIn); err != nil {
		t.Fatal(err)
	}
	if len(acmeIn.Messages) != 40 || acmeIn.Messages[0].Data != want[0] {
		t.Fatalf("acme's input after rival's publish: %d messages, first %+v", len(acmeIn.Messages), acmeIn.Messages[0])
	}
	// A read token reads but does not publish.
	reader := tenantToken(t, d, "acme", "read")
	if code, _, errOut := as(reader, "stream", "publish", "lines", "x"); code == 0 {
		t.Fatalf("a read token published: %s", errOut)
	}
	ok(acme, "kill", "relay")
	ok(acme, "stream", "rm", "lines")
	if code, _, errOut := as(acme, "stream", "read", "lines"); code == 0 || !strings.Contains(errOut, "no stream lines") {
		t.Fatalf("read after rm: exit %d %s", code, errOut)
	}
}
