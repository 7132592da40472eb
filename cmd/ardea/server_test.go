package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServerUsageErrors: `ardea server` refuses, before it starts
// anything, what would make a node that cannot join or a secret others
// can read, naming the flag or the file.
func TestServerUsageErrors(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "cluster.secret")
	if code, out, stderr := runArdea(t, "server", "secret", "--out", secret); code != 0 || !strings.Contains(out, "mode 0600") {
		t.Fatalf("ardea server secret: exit %d %q %q", code, out, stderr)
	}
	if fi, err := os.Stat(secret); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the secret file: %v %v, want mode 0600", fi, err)
	}
	if code, _, stderr := runArdea(t, "server", "secret", "--out", secret); code == 0 || !strings.Contains(stderr, "exists") {
		t.Errorf("a second secret over the first: exit %d %q", code, stderr)
	}
	open := filepath.Join(dir, "open.secret")
	if err := os.WriteFile(open, []byte(strings.Repeat("s", 40)), 0o644); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.secret")
	if err := os.WriteFile(short, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	pem := filepath.Join(dir, "node.pem")
	if err := os.WriteFile(pem, []byte("not PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	tlsArgs := func(extra ...string) []string {
		return append([]string{"server", "--data-dir", data, "--routes", "nats://127.0.0.1:1", "--cluster-secret-file", secret}, extra...)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"server", "secret"}, "--out: required"},
		{[]string{"server", "--data-dir", data, "--cluster-listen", "127.0.0.1:0"}, "--cluster-listen: only with --routes"},
		{[]string{"server", "--data-dir", data, "--routes", "nats://127.0.0.1:1"}, "--cluster-secret-file: required with --routes"},
		{[]string{"server", "--data-dir", data, "--routes", "nats://127.0.0.1:1", "--cluster-secret-file", open}, "chmod 600 " + open},
		{[]string{"server", "--data-dir", data, "--routes", "nats://127.0.0.1:1", "--cluster-secret-file", short}, "want at least 32"},
		{[]string{"server", "--data-dir", data, "--routes", "nats://u:p@127.0.0.1:1", "--cluster-secret-file", secret}, "no credentials in a route"},
		{[]string{"server", "--data-dir", data, "--routes", "http://127.0.0.1:1", "--cluster-secret-file", secret}, "want nats://host:port"},
		{[]string{"server", "--data-dir", data, "--routes", "nats://127.0.0.1:1", "--cluster-secret-file", secret, "--replicas", "7"}, "--replicas 7: want 1 to 5"},
		{[]string{"server", "--data-dir", data, "--routes", "nats://127.0.0.1:1", "--cluster-secret-file", secret, "--name", "a.b"}, `--name "a.b"`},
		{[]string{"server", "--data-dir", data, "--cluster-tls-key", pem}, "--cluster-tls-key: only with --routes"},
		{tlsArgs("--cluster-tls-cert", pem), "all three or none"},
		{tlsArgs("--cluster-tls-server-name", "n"), "--cluster-tls-server-name: only with --cluster-tls-cert"},
		{tlsArgs("--cluster-tls-cert", pem, "--cluster-tls-key", pem, "--cluster-tls-ca", secret), "no PEM certificate"},
	} {
		code, _, stderr := runArdea(t, tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("ardea %s: exit %d, stderr %q; want an error mentioning %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
}
