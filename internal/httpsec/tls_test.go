package httpsec

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGenerateSelfSigned(t *testing.T) {
	dir := t.TempDir()
	c, err := GenerateSelfSigned(dir, []string{"ardea.internal", "0.0.0.0:7780", "10.0.0.5"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Generated || len(c.Fingerprint) != 95 || strings.Count(c.Fingerprint, ":") != 31 {
		t.Fatalf("generated %v, fingerprint %q", c.Generated, c.Fingerprint)
	}
	for _, f := range []string{c.CertFile, c.KeyFile} {
		st, err := os.Stat(f)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v (%v), want 0600", f, st.Mode().Perm(), err)
		}
	}
	if st, _ := os.Stat(filepath.Join(dir, "tls")); st.Mode().Perm() != 0o700 {
		t.Fatalf("tls dir mode %v, want 0700", st.Mode().Perm())
	}
	leaf, err := x509.ParseCertificate(c.Config.Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"localhost", "127.0.0.1", "::1", "ardea.internal", "10.0.0.5"} {
		if err := leaf.VerifyHostname(h); err != nil {
			t.Errorf("does not cover %s: %v", h, err)
		}
	}

	// A later start reuses the pair.
	again, err := GenerateSelfSigned(dir, []string{"ardea.internal"})
	if err != nil || again.Generated || again.Fingerprint != c.Fingerprint {
		t.Fatalf("second start: generated %v, fingerprint %s (was %s), %v", again.Generated, again.Fingerprint, c.Fingerprint, err)
	}
	// A host it does not cover makes a new one.
	other, err := GenerateSelfSigned(dir, []string{"new.internal"})
	if err != nil || !other.Generated || other.Fingerprint == c.Fingerprint {
		t.Fatalf("new host: generated %v, %v", other.Generated, err)
	}
	// A broken key file makes a new one.
	if err := os.WriteFile(other.KeyFile, []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fixed, err := GenerateSelfSigned(dir, nil); err != nil || !fixed.Generated {
		t.Fatalf("broken key: generated %v, %v", fixed.Generated, err)
	}

	// LoadTLS reads the same files (--tls-cert/--tls-key).
	loaded, err := LoadTLS(c.CertFile, c.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTLS(filepath.Join(dir, "none.crt"), c.KeyFile); err == nil {
		t.Fatal("LoadTLS of a missing file: no error")
	}
	_ = loaded
}

// TestPinnedClientTLS serves over TLS with a self-signed pair and connects
// with the fingerprint pinned: the right one connects, another does not.
func TestPinnedClientTLS(t *testing.T) {
	c, err := GenerateSelfSigned(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	srv.TLS = c.Config
	srv.StartTLS()
	defer srv.Close()
	get := func(cfg *tls.Config) error {
		cl := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
		defer cl.CloseIdleConnections()
		resp, err := cl.Get(srv.URL)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
	if err := get(PinnedClientTLS(c.Fingerprint)); err != nil {
		t.Fatalf("pinned fingerprint: %v", err)
	}
	wrong := strings.Repeat("AB:", 31) + "AB"
	if err := get(PinnedClientTLS(wrong)); err == nil || !strings.Contains(err.Error(), "not the pinned") {
		t.Fatalf("another fingerprint: %v", err)
	}
	if err := get(&tls.Config{MinVersion: tls.VersionTLS12}); err == nil {
		t.Fatal("an unpinned client trusted the self-signed certificate")
	}
}
