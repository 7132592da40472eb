package launcher

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"

	"github.com/ardea-dev/ardea/internal/names"
)

// A tenant's CPU quota is a cgroup of its own holding every host process
// of that tenant: <root>/<tenant> under the cgroup the daemon finds,
// with cpu.max (cgroup v2) or cpu.cfs_quota_us (cgroup v1's cpu
// controller) set to the quota. NewCgroups looks once, at start, for a
// cgroup hierarchy with a cpu controller the daemon may write to: cgroup
// v2 first, then v1's cpu hierarchy, and logs which it uses or why it
// uses none; without one the host processes run with no CPU limit (the
// other quotas still hold).
//
// Placement: on cgroup v2 the child starts inside its cgroup (clone3
// with CLONE_INTO_CGROUP, SysProcAttr.UseCgroupFD), so it never runs a
// single instruction outside it. On cgroup v1 the supervisor's spawning
// thread moves itself into the tenant's cgroup (its tid into tasks)
// before it forks and back after, so the child inherits the cgroup at
// fork, also before it runs anything; the Go runtime starts no thread
// from a locked thread (it asks its template thread), so no thread of the
// supervisor stays behind in the tenant's cgroup.

// DefaultCgroupRoot is the cgroup under which tenants' cgroups are made.
const DefaultCgroupRoot = "ardea"

// cfsPeriod is the CPU bandwidth period, in microseconds: 10 ms, not the
// kernel's default 100 ms. A tenant at half a core whose processes spin
// on both cores runs its quota in a burst at the start of each period
// and is then throttled; with 100 ms periods that burst took both cores
// for 25 ms at a time, which showed in another tenant's p99 (ardea bench
// tenants: 2.2x solo; docs/performance.md). Shorter periods cut the
// bursts to 2.5 ms for a little more accounting in the kernel.
const cfsPeriod = 10000

// CgroupOptions configure NewCgroups.
type CgroupOptions struct {
	// Root names the cgroup made under the hierarchy's root (v2) or the
	// daemon's own cgroup (v1) to hold the tenants' cgroups
	// (DefaultCgroupRoot); a path of names separated by '/'.
	Root   string
	Logger *slog.Logger
	// Disabled turns CPU quotas off without looking.
	Disabled bool
}

// Cgroups manages the tenants' CPU cgroups. Its zero value (and nil) is
// unavailable: every Tenant call returns a nil *Slice, which the
// supervisor takes as "no cgroup".
type Cgroups struct {
	version int    // 1 or 2; 0: unavailable
	reason  string // why unavailable, or why the hierarchies tried first were not used
	base    string // the directory of Root
	home    string // v1: the daemon's own cgroup in the cpu hierarchy

	mu      sync.Mutex
	tenants map[string]*Slice
}

// Slice is one tenant's cgroup. A nil *Slice is no cgroup.
type Slice struct {
	Tenant  string
	Dir     string // the cgroup's directory
	version int
	home    string // v1: where the spawning thread goes back to
}

// Available reports whether CPU quotas are enforced.
func (c *Cgroups) Available() bool { return c != nil && c.version != 0 }

// Version is the cgroup version in use: 1, 2, or 0 when unavailable.
func (c *Cgroups) Version() int {
	if c == nil {
		return 0
	}
	return c.version
}

// Reason says why CPU quotas are not enforced or, when they are, why
// the hierarchies tried before the one used were not ("" if none was).
func (c *Cgroups) Reason() string {
	if c == nil {
		return "no cgroups configured"
	}
	return c.reason
}

// Dir is the directory holding the tenants' cgroups ("" when unavailable).
func (c *Cgroups) Dir() string {
	if !c.Available() {
		return ""
	}
	return c.base
}

// errNoCgroups is returned by Slice.CPU when CPU quotas are unavailable.
var errNoCgroups = errors.New("launcher: no cgroup for CPU quotas")

func checkCgroupTenant(tenant string) error {
	if !names.Valid(tenant) {
		return fmt.Errorf("launcher: cgroup for tenant %q: not a valid tenant name", tenant)
	}
	return nil
}

func checkCores(cores float64) error {
	if math.IsNaN(cores) || math.IsInf(cores, 0) || cores < 0 {
		return fmt.Errorf("launcher: cpu quota %v: want a number of cores >= 0 (0: unlimited)", cores)
	}
	return nil
}

// quotaMicros is cores as microseconds of CPU per period, and the period
// (cfsPeriod, longer for a quota under 0.1 cores: the kernel takes a
// quota of at least 1 ms and a period of at most 1 s); quota -1 is
// unlimited (0 cores).
func quotaMicros(cores float64) (quota, period int64) {
	if cores == 0 {
		return -1, cfsPeriod
	}
	period = min(max(cfsPeriod, int64(math.Ceil(1000/cores))), 1000000)
	return max(1000, int64(math.Round(cores*float64(period)))), period
}

func cleanRoot(root string) (string, error) {
	if root == "" {
		root = DefaultCgroupRoot
	}
	parts := strings.Split(root, "/")
	for _, p := range parts {
		if !names.Valid(p) {
			return "", fmt.Errorf("launcher: cgroup root %q: want names of letters, digits, '_' or '-' separated by '/'", root)
		}
	}
	return strings.Join(parts, "/"), nil
}
