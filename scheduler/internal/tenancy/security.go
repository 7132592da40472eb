package tenancy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ardea-dev/ardea/internal/audit"
	"github.com/ardea-dev/ardea/internal/quota"
	"github.com/ardea-dev/ardea/scheduler/settings"
)

// Security is a daemon's security settings beyond what is always on
// (scheduler/daemon.Security is this type). A daemon with an API always
// requires a token on it (docs/security.md); one whose containers are
// processes always runs NATS in operator mode, one account per tenant.
// The API's part (hosts, origins, TLS, public metrics, audit retention,
// API rate) is the daemon API's (scheduler/internal/apisecurity's
// Settings); the tenants' (quotas, what they may
// reach on the machine) is this package's.
type Security struct {
	// Hosts and Origins are further names and browser origins the API is
	// reached by (httpsec.Options).
	Hosts   []string
	Origins []string
	// TLSCert and TLSKey serve the API over TLS; SelfSigned generates (and
	// then reuses) a pair under the data dir instead.
	TLSCert, TLSKey string
	SelfSigned      bool
	// PublicMetrics makes GET /metrics public (the deployment file says
	// so); otherwise it takes a metrics or admin token.
	PublicMetrics bool
	// Audit configures the audit log's retention.
	Audit audit.Options
	// Quotas is the deployment file's quotas section (nil: unlimited
	// unless the admin API sets some).
	Quotas *quota.Config
	// TenantBuiltins lists the built-in connectors that reach the machine
	// (files, ports, addresses) which tenants other than the default one
	// may use (policy.go); none by default.
	TenantBuiltins []string
	// TenantAllow is what the admin allows each tenant (by name) to reach
	// on the machine: paths and host:port patterns (policy.go).
	TenantAllow map[string]TenantAllow
	// APIRate bounds each tenant's API calls per second, APIBurst at once
	// (admin tokens are not counted): 0 takes httpsec.DefaultTenantRate and
	// DefaultTenantBurst, a negative rate turns the limit off.
	APIRate  float64
	APIBurst int
}

// securitySection is a deployment file's security: section.
type securitySection struct {
	// PublicMetrics serves GET /metrics without a token.
	PublicMetrics bool `yaml:"public_metrics"`
	// Hosts and Origins: further names and browser origins of the API.
	Hosts   []string `yaml:"hosts"`
	Origins []string `yaml:"origins"`
	// TenantBuiltins: built-ins that reach the machine, allowed to tenants.
	TenantBuiltins []string `yaml:"tenant_builtins"`
	// TenantAllow: per tenant, the paths and addresses it may reach.
	TenantAllow map[string]TenantAllow `yaml:"tenant_allow"`
	Audit       struct {
		MaxAge   string `yaml:"max_age"`   // e.g. 2160h
		MaxBytes int64  `yaml:"max_bytes"` // bytes
	} `yaml:"audit"`
	// APIRate: each tenant's API calls per second and burst (per_second
	// 0: no limit).
	APIRate *struct {
		PerSecond float64 `yaml:"per_second"`
		Burst     int     `yaml:"burst"`
	} `yaml:"api_rate"`
}

// securityFields lists the section's fields, for the message of a field
// it does not know.
const securityFields = "public_metrics, hosts, origins, tenant_builtins, tenant_allow.<tenant>.paths, tenant_allow.<tenant>.addresses, audit.max_age, audit.max_bytes, api_rate.per_second, api_rate.burst"

// ParseSecurity reads and checks the security: section of deployment file
// file (internal/deployment reads the file and hands each section to its
// owner); n is the section's node, nil when the file has none. It sets
// the fields of Security the section holds; the quotas: section, which
// Security.Quotas takes, is internal/quota's. Errors name the file and the
// field.
func ParseSecurity(file string, n *yaml.Node) (Security, error) {
	var s Security
	if n == nil {
		return s, nil
	}
	sec, err := decodeSecurity(file, n)
	if err != nil {
		return s, err
	}
	s.PublicMetrics, s.Hosts, s.Origins, s.TenantBuiltins = sec.PublicMetrics, sec.Hosts, sec.Origins, sec.TenantBuiltins
	if err := checkTenantAllow(sec.TenantAllow); err != nil {
		return s, fmt.Errorf("%s: %w", file, err)
	}
	s.TenantAllow = sec.TenantAllow
	if sec.Audit.MaxAge != "" {
		d, err := time.ParseDuration(sec.Audit.MaxAge)
		if err != nil || d <= 0 {
			return s, fmt.Errorf("%s: security.audit.max_age %q: want a positive duration such as 2160h", file, sec.Audit.MaxAge)
		}
		s.Audit.MaxAge = d
	}
	if sec.Audit.MaxBytes < 0 {
		return s, fmt.Errorf("%s: security.audit.max_bytes %d: want a size in bytes >= 0", file, sec.Audit.MaxBytes)
	}
	s.Audit.MaxBytes = sec.Audit.MaxBytes
	if r := sec.APIRate; r != nil {
		if r.PerSecond < 0 || r.Burst < 0 {
			return s, fmt.Errorf("%s: security.api_rate {per_second: %g, burst: %d}: want per_second >= 0 (0: no limit) and burst >= 0 (0: twice the rate)", file, r.PerSecond, r.Burst)
		}
		s.APIRate, s.APIBurst = r.PerSecond, r.Burst
		if r.PerSecond == 0 {
			s.APIRate = -1 // the file turns the limit off
		}
	}
	return s, nil
}

// decodeSecurity decodes the section strictly: yaml.Node.Decode has no
// KnownFields, so the node is written out and decoded again by a decoder
// that has.
func decodeSecurity(file string, n *yaml.Node) (securitySection, error) {
	var sec securitySection
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(n); err != nil {
		return sec, fmt.Errorf("%s: security: %w", file, err)
	}
	dec := yaml.NewDecoder(&buf)
	dec.KnownFields(true)
	if err := dec.Decode(&sec); err != nil && !errors.Is(err, io.EOF) {
		return sec, fmt.Errorf("%s: security (from line %d): %w (fields: %s)", file, n.Line, err, securityFields)
	}
	return sec, nil
}

// checkTenantAllow checks security.tenant_allow: absolute paths, host:port
// patterns.
func checkTenantAllow(m map[string]TenantAllow) error {
	for tenant, a := range m {
		for _, p := range a.Paths {
			if !filepath.IsAbs(p) {
				return fmt.Errorf("security.tenant_allow.%s.paths: %q: want an absolute path", tenant, p)
			}
		}
		for _, p := range a.Addresses {
			if err := settings.CheckPattern(p); err != nil {
				return fmt.Errorf("security.tenant_allow.%s.addresses: %w", tenant, err)
			}
		}
	}
	return nil
}
