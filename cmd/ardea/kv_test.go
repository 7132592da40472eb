//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// TestTenantKVCommands: a tenant with only a deploy token creates a KV
// bucket, puts values (an argument, a file), reads them back, lists and
// filters keys, deletes a key and removes the bucket with `ardea kv`;
// another tenant finds none of it, and a read token reads but does not
// write. (The topology side runs in scheduler/daemon's TestTenantKV.)
func TestTenantKVCommands(t *testing.T) {
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

	if out := ok(acme, "kv", "create", "users", "--history", "3", "--max-bytes", "4MiB"); !strings.Contains(out, "KV bucket users created (3 revisions per key, at most 4194304 bytes") {
		t.Fatalf("create: %q", out)
	}
	ok(acme, "kv", "put", "users", "user.1", `{"name": "Ada"}`)
	file := filepath.Join(t.TempDir(), "v.json")
	if err := os.WriteFile(file, []byte(`{"name": "Grace"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ok(acme, "kv", "put", "users", "user.2", "--file", file)
	ok(acme, "kv", "put", "users", "team/a=1", "x")
	if out := ok(acme, "kv", "get", "users", "user.2"); out != `{"name": "Grace"}`+"\n" {
		t.Fatalf("get user.2: %q", out)
	}
	var e api.KVEntry
	if err := json.Unmarshal([]byte(ok(acme, "kv", "get", "users", "team/a=1", "-o", "json")), &e); err != nil || e.Value != "x" || e.Revision != 3 {
		t.Fatalf("get team/a=1 -o json: %+v %v", e, err)
	}
	if out := ok(acme, "kv", "keys", "users"); out != "team/a=1\nuser.1\nuser.2\n" {
		t.Fatalf("keys: %q", out)
	}
	var ks api.KVKeys
	if err := json.Unmarshal([]byte(ok(acme, "kv", "keys", "users", "--filter", "user.*", "-o", "json")), &ks); err != nil || strings.Join(ks.Keys, ",") != "user.1,user.2" {
		t.Fatalf("keys --filter user.*: %+v %v", ks, err)
	}
	ok(acme, "kv", "rm", "users", "user.1")
	if code, _, errOut := as(acme, "kv", "get", "users", "user.1"); code == 0 || !strings.Contains(errOut, "KV bucket users has no key user.1") {
		t.Fatalf("get after rm: exit %d %q", code, errOut)
	}
	var ls []api.KVInfo
	if err := json.Unmarshal([]byte(ok(acme, "kv", "ls", "-o", "json")), &ls); err != nil || len(ls) != 1 || ls[0].Name != "users" || ls[0].History != 3 || ls[0].MaxBytes != 4<<20 {
		t.Fatalf("ls: %+v %v", ls, err)
	}

	// The rival tenant: acme's bucket does not exist for it.
	if out := ok(rival, "kv", "ls", "-o", "json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("rival lists %s", out)
	}
	for _, args := range [][]string{
		{"kv", "get", "users", "user.2"},
		{"kv", "keys", "users"},
		{"kv", "put", "users", "user.2", "forged"},
		{"kv", "rm", "users", "user.2"},
		{"kv", "rm-bucket", "users"},
	} {
		if code, _, errOut := as(rival, args...); code == 0 || !strings.Contains(errOut, "tenant rival has no KV bucket users") {
			t.Fatalf("rival: ardea %s: exit %d, stderr %q; want refused as not found", strings.Join(args, " "), code, errOut)
		}
	}
	// A read token reads but does not write.
	reader := tenantToken(t, d, "acme", "read")
	ok(reader, "kv", "get", "users", "user.2")
	if code, _, errOut := as(reader, "kv", "put", "users", "user.3", "x"); code == 0 {
		t.Fatalf("a read token wrote: %s", errOut)
	}
	if out := ok(acme, "kv", "get", "users", "user.2"); out != `{"name": "Grace"}`+"\n" {
		t.Fatalf("user.2 after rival's attempts: %q", out)
	}
	ok(acme, "kv", "rm-bucket", "users")
	if code, _, errOut := as(acme, "kv", "keys", "users"); code == 0 || !strings.Contains(errOut, "no KV bucket users") {
		t.Fatalf("keys after rm-bucket: exit %d %q", code, errOut)
	}
}
