package ui_test

import (
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ardea-dev/ardea/internal/auth"
	"github.com/ardea-dev/ardea/internal/httpsec"
)

// TestOpenAPIDocumentsAuth checks that openapi.yaml documents the token
// (a bearer scheme required everywhere, the events ticket) and every route
// the UI and the CLI call that issue 23 added: whoami, tickets, tenants,
// tokens, quotas, the audit log, and the GET routes of the route table.
func TestOpenAPIDocumentsAuth(t *testing.T) {
	b, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Security   []map[string][]string `yaml:"security"`
		Components struct {
			SecuritySchemes map[string]struct {
				Type   string `yaml:"type"`
				Scheme string `yaml:"scheme"`
				In     string `yaml:"in"`
			} `yaml:"securitySchemes"`
		} `yaml:"components"`
		Paths map[string]map[string]yaml.Node `yaml:"paths"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if s := doc.Components.SecuritySchemes["bearer"]; s.Type != "http" || s.Scheme != "bearer" {
		t.Errorf("no bearer scheme: %+v", s)
	}
	if s := doc.Components.SecuritySchemes["ticket"]; s.Type != "apiKey" || s.In != "query" {
		t.Errorf("no ticket scheme: %+v", s)
	}
	if len(doc.Security) != 1 || doc.Security[0]["bearer"] == nil {
		t.Errorf("the bearer token is not required by default: %v", doc.Security)
	}
	want := append(auth.Routes(), "POST /api/v1/tickets", "GET /api/v1/tenants/{name}/quotas", "PUT /api/v1/tenants/{name}/quotas")
	for _, r := range httpsec.DefaultRoutes() {
		method, path, ok := strings.Cut(r.Pattern, " ")
		if ok && method == "GET" && !strings.HasSuffix(path, "/") && !strings.HasSuffix(path, "{$}") {
			want = append(want, r.Pattern)
		}
	}
	for _, p := range want {
		method, path, _ := strings.Cut(p, " ")
		op, ok := doc.Paths[path][strings.ToLower(method)]
		if !ok {
			t.Errorf("openapi.yaml does not document %s", p)
			continue
		}
		// Only health says it needs no token.
		var sec struct {
			Security *[]map[string][]string `yaml:"security"`
		}
		if err := op.Decode(&sec); err != nil {
			t.Fatal(err)
		}
		public := sec.Security != nil && len(*sec.Security) == 0
		if public != (path == "/healthz") {
			t.Errorf("%s: public in openapi.yaml is %v", p, public)
		}
	}
}
