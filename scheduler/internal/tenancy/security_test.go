package tenancy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// parseFile is what internal/deployment does with this section: the
// file's security: node, handed to ParseSecurity (the file's bounds and
// its top level are internal/deployment's, and tested there).
func parseFile(path string) (Security, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Security{}, err
	}
	var top struct {
		Security yaml.Node `yaml:"security"`
	}
	if err := yaml.Unmarshal(b, &top); err != nil {
		return Security{}, fmt.Errorf("%s: %w", path, err)
	}
	if top.Security.Kind == 0 {
		return ParseSecurity(path, nil)
	}
	return ParseSecurity(path, &top.Security)
}

// TestParseSecurity: the deployment file's security: section is read
// strictly; each bad field is one error naming the file and the field.
func TestParseSecurity(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, says string
	}{
		{"unknown field", "security:\n  public_metric: true\n", "public_metric"},
		{"bad max_age", "security:\n  audit: {max_age: soon}\n", "security.audit.max_age"},
		{"negative max_bytes", "security:\n  audit: {max_bytes: -1}\n", "security.audit.max_bytes"},
		{"wrong type", "security:\n  hosts: 3\n", "security"},
		{"negative api rate", "security:\n  api_rate: {per_second: -5}\n", "security.api_rate"},
		{"unknown api rate field", "security:\n  api_rate: {rps: 5}\n", "rps"},
		{"relative allowed path", "security:\n  tenant_allow: {acme: {paths: [srv/acme]}}\n", "security.tenant_allow.acme.paths"},
		{"allowed address without port", "security:\n  tenant_allow: {acme: {addresses: [kafka.internal]}}\n", "security.tenant_allow.acme.addresses"},
		{"unknown tenant_allow field", "security:\n  tenant_allow: {acme: {urls: [x]}}\n", "urls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "deploy.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := parseFile(path)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("ParseSecurity: %v, want an error naming %s and %q", err, path, tc.says)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "deploy.yaml")
	good := "security:\n  public_metrics: true\n  hosts: [ardea.internal]\n  tenant_builtins: [file]\n  tenant_allow: {acme: {paths: [/srv/acme], addresses: [\"*.acme:9092\"]}}\n  audit: {max_age: 24h, max_bytes: 1048576}\n  api_rate: {per_second: 20, burst: 50}\n"
	if err := os.WriteFile(path, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := parseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !s.PublicMetrics || !slices.Equal(s.Hosts, []string{"ardea.internal"}) || !slices.Equal(s.TenantBuiltins, []string{"file"}) ||
		!slices.Equal(s.TenantAllow["acme"].Paths, []string{"/srv/acme"}) || !slices.Equal(s.TenantAllow["acme"].Addresses, []string{"*.acme:9092"}) ||
		s.Audit.MaxAge != 24*time.Hour || s.Audit.MaxBytes != 1<<20 || s.APIRate != 20 || s.APIBurst != 50 {
		t.Errorf("ParseSecurity: %+v", s)
	}
	off := filepath.Join(t.TempDir(), "deploy.yaml")
	if err := os.WriteFile(off, []byte("security:\n  api_rate: {per_second: 0}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := parseFile(off); err != nil || s.APIRate >= 0 {
		t.Errorf("api_rate per_second 0: %+v, %v; want the limit off (APIRate < 0)", s, err)
	}
}
