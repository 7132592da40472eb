package deployment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/quota"
)

// all is a file with every section.
const all = `
metrics:
  interval: 5s
  file: {path: /tmp/m.jsonl}
quotas:
  default: {instances: 64, cpu: 1}
  tenants:
    acme: {cpu: 500m}
security:
  public_metrics: true
  hosts: [ardea.internal]
  api_rate: {per_second: 20, burst: 50}
`

// TestParseSections: each section reaches its owner's type, and a file
// with them all is read by every owner (the sections' own cases are
// their packages' tests: sinks, internal/quota, scheduler/daemon).
func TestParseSections(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		check     func(*File) bool
	}{
		{"metrics", "metrics:\n  interval: 5s\n  file: {path: /tmp/m.jsonl}\n", func(f *File) bool {
			return f.Metrics.Every() == 5*time.Second && f.Metrics.Sinks["file"]["path"] == "/tmp/m.jsonl" && f.Quotas.For("x") == (quota.Quotas{})
		}},
		{"quotas", "quotas:\n  default: {instances: 64}\n  tenants:\n    acme: {cpu: 500m}\n", func(f *File) bool {
			return f.Quotas.For("acme") == quota.Quotas{Instances: 64, CPU: 0.5} && len(f.Metrics.Sinks) == 0
		}},
		{"security", "security:\n  public_metrics: true\n  tenant_builtins: [file]\n", func(f *File) bool {
			return f.Security.PublicMetrics && slices.Equal(f.Security.TenantBuiltins, []string{"file"}) && f.Security.Quotas == nil
		}},
		{"all", all, func(f *File) bool {
			return f.Metrics.Every() == 5*time.Second && f.Quotas.For("acme") == quota.Quotas{Instances: 64, CPU: 0.5} &&
				f.Security.PublicMetrics && f.Security.APIRate == 20 && f.Security.APIBurst == 50
		}},
		{"null sections", "metrics:\nquotas:\nsecurity:\n", func(f *File) bool {
			return f.Metrics.Every() == 10*time.Second && f.Quotas.For("x") == (quota.Quotas{}) && !f.Security.PublicMetrics
		}},
		// Aliases and merge keys are expanded before the sections see
		// them, as in a topology file.
		{"aliases and merge keys", "quotas:\n  default: &d {instances: 64, cpu: 1}\n  tenants:\n    acme: {<<: *d, cpu: 2}\n    globex: *d\nsecurity:\n  hosts: &h [a.internal, b.internal]\n  origins: *h\n", func(f *File) bool {
			return f.Quotas.For("acme") == quota.Quotas{Instances: 64, CPU: 2} && f.Quotas.Tenants["globex"].Has("cpu") &&
				slices.Equal(f.Security.Origins, []string{"a.internal", "b.internal"})
		}},
		{"merge list, the earlier first", "metrics:\n  graphite: {<<: [{address: a:1}, {address: b:2, prefix: p}]}\n", func(f *File) bool {
			g := f.Metrics.Sinks["graphite"]
			return g["address"] == "a:1" && g["prefix"] == "p"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("deploy.yaml", []byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if f.Name != "deploy.yaml" || !tc.check(f) {
				t.Errorf("%+v: metrics %+v, quotas %+v, security %+v", f, f.Metrics, f.Quotas, f.Security)
			}
		})
	}
}

// TestParseEmpty: a file without sections (nothing, comments, a null or
// empty document) gives every section its empty value.
func TestParseEmpty(t *testing.T) {
	for _, doc := range []string{"", "# nothing yet\n", "---\n", "~\n", "{}\n"} {
		f, err := Parse("empty.yaml", []byte(doc))
		if err != nil {
			t.Errorf("%q: %v", doc, err)
			continue
		}
		if f.Metrics == nil || f.Metrics.Every() != 10*time.Second || len(f.Metrics.Sinks) != 0 || f.Quotas == nil || len(f.Quotas.Tenants) != 0 || f.Security.PublicMetrics {
			t.Errorf("%q: %+v", doc, f)
		}
	}
}

// TestParseErrors: every problem names the file, and the line and the
// field or key where it has them; the top level is strict, and each
// section's owner checks its own.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"unknown key", "metric: {}\n", []string{`deploy.yaml: line 1: unknown top-level key "metric" (known: metrics, quotas, security, scheduler, kubernetes); did you mean "metrics"?`}},
		{"unknown key, nothing close", "metrics: {}\nlogging: {level: debug}\n", []string{`deploy.yaml: line 2: unknown top-level key "logging" (known: metrics, quotas, security, scheduler, kubernetes)`}},
		{"key given twice", "quotas: {}\nquotas: {}\n", []string{"deploy.yaml: line 2: quotas: given twice"}},
		{"not a mapping", "- metrics\n", []string{"deploy.yaml: line 1: want a mapping of sections (metrics, quotas, security, scheduler, kubernetes), got a list"}},
		{"a scalar", "metrics\n", []string{`deploy.yaml: line 1: want a mapping of sections (metrics, quotas, security, scheduler, kubernetes), got "metrics"`}},
		{"key not a name", "[a]: 1\n", []string{"deploy.yaml: line 1: want a section's name (metrics, quotas, security, scheduler, kubernetes), got a list"}},
		{"two documents", "metrics: {}\n---\nquotas: {}\n", []string{"deploy.yaml: line 2: a second YAML document; a deployment file holds one"}},
		{"syntax", "metrics: [\n", []string{"deploy.yaml: yaml: "}},
		{"metrics", "metrics: {graphite: {prefix: x}}\n", []string{"deploy.yaml: metrics.graphite.address: required"}},
		{"quotas", "quotas:\n  default:\n    cpu: lots\n", []string{"deploy.yaml: line 3: quotas.default.cpu: want a number of cores"}},
		{"security", "security:\n  public_metric: true\n", []string{"deploy.yaml: security (from line 2)", "public_metric"}},
		{"scheduler", "scheduler: yarn\n", []string{`deploy.yaml: line 1: scheduler: want processes or kubernetes, got "yarn"`}},
		{"kubernetes", "scheduler: kubernetes\nkubernetes: {image: ardea, nats_url: nats://ardea:4222, namespace: Bad}\n", []string{`deploy.yaml: kubernetes.namespace "Bad"`}},
		{"every section's problem", "metrics: {interval: -1s}\nquotas: 3\nsecurity: {audit: {max_bytes: -1}}\nextra: 1\n", []string{
			`deploy.yaml: line 4: unknown top-level key "extra"`,
			"deploy.yaml: metrics.interval: must not be negative",
			"deploy.yaml: line 2: quotas: want a mapping",
			"deploy.yaml: security.audit.max_bytes -1",
		}},
		{"merge of a scalar", "quotas: {<<: 3}\n", []string{"deploy.yaml: line 1: a merge key (<<) takes a mapping or a list of mappings"}},
		{"an alias inside its anchor", "security: &a {hosts: [*a]}\n", []string{"deploy.yaml: line 1: alias *a is inside the node it names"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("deploy.yaml", []byte(tc.doc))
			if err == nil {
				t.Fatalf("parsed: %+v", f)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if errors.Is(err, ErrTooLarge) {
				t.Errorf("%v wraps ErrTooLarge", err)
			}
		})
	}
}

// mergeBomb is issue 30's merge-key bomb in a deployment file: tenant aN
// merges a(N-1) ten times, so a file of a few hundred bytes expands to
// 10^depth entries.
func mergeBomb(depth int) string {
	var b strings.Builder
	b.WriteString("quotas:\n  tenants:\n    a0: &a0 {cpu: 1}\n")
	for i := 1; i <= depth; i++ {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", ")
		fmt.Fprintf(&b, "    a%d: &a%d {<<: [%s]}\n", i, i, refs)
	}
	return b.String()
}

// aliasBomb is the same with lists: each level lists the one before ten
// times (a billion laughs).
func aliasBomb(depth int) string {
	var b strings.Builder
	b.WriteString("security:\n  hosts:\n    - &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= depth; i++ {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", ")
		fmt.Fprintf(&b, "    - &a%d [%s]\n", i, refs)
	}
	return b.String()
}

// TestParseRefusesBombs: a file that expands past MaxNodes or
// MaxValueBytes is refused with one error naming the bound, after
// reading no more than the bound.
func TestParseRefusesBombs(t *testing.T) {
	long := strings.Repeat("x", 64<<10)
	for _, tc := range []struct {
		name, doc, bound string
	}{
		{"merge keys", mergeBomb(8), "more than 100000 YAML nodes (deployment.MaxNodes"},
		{"aliases", aliasBomb(9), "more than 100000 YAML nodes (deployment.MaxNodes"},
		{"value bytes", "security:\n  hosts: [&s " + long + strings.Repeat(", *s", 300) + "]\n", "more than 16777216 bytes (deployment.MaxValueBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.doc) > 80<<10 {
				t.Fatalf("the bomb is %d bytes", len(tc.doc))
			}
			_, nodes, err := parse("bomb.yaml", []byte(tc.doc), MaxNodes, MaxValueBytes)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("want ErrTooLarge, got %v", err)
			}
			for _, w := range []string{"bomb.yaml: line ", "deployment file too large", tc.bound, "refused as an alias bomb"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if nodes > MaxNodes+1 {
				t.Errorf("read %d nodes; the bound is %d", nodes, MaxNodes)
			}
		})
	}
	// The same files a few levels shallower are within the bounds.
	f, err := Parse("ok.yaml", []byte(mergeBomb(4)))
	if err != nil || f.Quotas.For("a4").CPU != 1 {
		t.Errorf("a merge depth of 4 (10^4 entries): %v", err)
	}
	if _, nodes, err := parse("ok.yaml", []byte(aliasBomb(3)), MaxNodes, MaxValueBytes); errors.Is(err, ErrTooLarge) || nodes < 10000 {
		t.Errorf("an alias depth of 3 (10^4 entries): %d nodes, %v", nodes, err)
	}
}

// TestParseRefusesLargeFile: a file over MaxBytes is refused, naming the
// bound, by Parse and by Load (which reads no more than the bound).
func TestParseRefusesLargeFile(t *testing.T) {
	doc := "security:\n  hosts: [" + strings.Repeat("y", MaxBytes) + "]\n"
	path := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	_, perr := Parse("big.yaml", []byte(doc))
	_, lerr := Load(path)
	for _, err := range []error{perr, lerr} {
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("a %d-byte file: %v", len(doc), err)
		}
		for _, w := range []string{"big.yaml: deployment file too large", fmt.Sprint(MaxBytes), "deployment.MaxBytes"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not contain %q", err, w)
			}
		}
	}
}

func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deploy.yaml")
	if err := os.WriteFile(path, []byte(all), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil || f.Name != path || f.Metrics.Sinks["file"]["path"] != "/tmp/m.jsonl" || !f.Security.PublicMetrics {
		t.Fatalf("Load: %+v, %v", f, err)
	}
	if err := os.WriteFile(path, []byte("quotas:\n  default:\n    cpu: lots\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path+": line 3: quotas.default.cpu") {
		t.Errorf("a bad file: %v, want its path, the line and the field", err)
	}
	missing := filepath.Join(t.TempDir(), "none.yaml")
	if _, err := Load(missing); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "deployment file: ") || !strings.Contains(err.Error(), missing) {
		t.Errorf("a missing file: %v", err)
	}
}

// TestParseScheduler: scheduler: kubernetes and its section reach the
// daemon's options; without them, processes.
func TestParseScheduler(t *testing.T) {
	f, err := Parse("deploy.yaml", []byte("scheduler: kubernetes\nkubernetes:\n  image: ardea:1\n  nats_url: nats://ardea.streams.svc:4222\n"))
	if err != nil || f.Kubernetes == nil || f.Kubernetes.Image != "ardea:1" || f.Kubernetes.NATSURL != "nats://ardea.streams.svc:4222" {
		t.Fatalf("%+v, %v", f, err)
	}
	if f, err := Parse("deploy.yaml", []byte("metrics: {}\n")); err != nil || f.Kubernetes != nil {
		t.Fatalf("without scheduler: %+v, %v", f, err)
	}
}
