package launcher

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// NewCgroups finds the cgroup hierarchy for CPU quotas and logs, once,
// which it uses or why there is none (then host processes run without a
// CPU limit). It needs to create cgroups and move processes: root, or a
// cgroup delegated to the daemon's user.
func NewCgroups(o CgroupOptions) *Cgroups {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := detectCgroups(o, "/proc/self/mountinfo", "/proc/self/cgroup")
	if c.Available() {
		args := []any{"cgroup_version", c.version, "dir", c.base}
		if c.reason != "" {
			args = append(args, "not_used", c.reason)
		}
		log.Info("CPU quotas are enforced with a cgroup per tenant", args...)
	} else {
		log.Warn("CPU quotas are not enforced: host processes run without a CPU limit", "reason", c.reason)
	}
	return c
}

// mount is one cgroup mount from mountinfo.
type mount struct {
	root, point string // the mount's root inside the hierarchy, where it is mounted
	v2          bool
	opts        []string // super options (v1: the controllers)
}

func detectCgroups(o CgroupOptions, mountinfo, selfCgroup string) *Cgroups {
	c := &Cgroups{tenants: map[string]*Slice{}}
	if o.Disabled {
		c.reason = "turned off"
		return c
	}
	root, err := cleanRoot(o.Root)
	if err != nil {
		c.reason = err.Error()
		return c
	}
	mounts, err := readMounts(mountinfo)
	if err != nil {
		c.reason = err.Error()
		return c
	}
	self, err := readSelfCgroup(selfCgroup)
	if err != nil {
		c.reason = err.Error()
		return c
	}
	var reasons []string
	for _, m := range mounts {
		if m.v2 {
			if err := c.tryV2(m, root); err == nil {
				return c
			} else {
				reasons = append(reasons, err.Error())
			}
		}
	}
	for _, m := range mounts {
		if !m.v2 && slices.Contains(m.opts, "cpu") {
			if err := c.tryV1(m, self, root); err == nil {
				// What was not used, for the log.
				c.reason = strings.Join(reasons, "; ")
				return c
			} else {
				reasons = append(reasons, err.Error())
			}
		}
	}
	if len(reasons) == 0 {
		reasons = append(reasons, "no cgroup v2 mount and no cgroup v1 cpu hierarchy in "+mountinfo)
	}
	c.reason = strings.Join(reasons, "; ")
	return c
}

// readMounts lists the cgroup mounts in a mountinfo file.
func readMounts(path string) ([]mount, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the mounts: %w", err)
	}
	defer f.Close()
	var out []mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root point options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 || (b[0] != "cgroup" && b[0] != "cgroup2") {
			continue
		}
		out = append(out, mount{root: unescapeMount(a[3]), point: unescapeMount(a[4]), v2: b[0] == "cgroup2", opts: strings.Split(b[2], ",")})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot read the mounts: %w", err)
	}
	return out, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// readSelfCgroup reads /proc/self/cgroup: controllers ("" for v2) ->
// the process's cgroup path in that hierarchy.
func readSelfCgroup(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read this process's cgroups: %w", err)
	}
	out := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for ctl := range strings.SplitSeq(parts[1], ",") {
			out[ctl] = parts[2]
		}
	}
	return out, nil
}

// dirOf is the directory of cgroup path p in mount m.
func dirOf(m mount, p string) string {
	rel, err := filepath.Rel(m.root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		rel = "."
	}
	return filepath.Join(m.point, rel)
}

// tryV2 uses cgroup v2 at m: the cpu controller must be available at its
// root and enabled (or enabled here) for the children of every level
// down to Root.
func (c *Cgroups) tryV2(m mount, root string) error {
	ctls, err := os.ReadFile(filepath.Join(m.point, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("cgroup v2 at %s: %w", m.point, err)
	}
	if !slices.Contains(strings.Fields(string(ctls)), "cpu") {
		return fmt.Errorf("cgroup v2 at %s has no cpu controller (it is attached to a cgroup v1 hierarchy, or not delegated)", m.point)
	}
	dir := m.point
	if err := enableCPU(dir); err != nil {
		return fmt.Errorf("cgroup v2 at %s: %w", m.point, err)
	}
	for p := range strings.SplitSeq(root, "/") {
		dir = filepath.Join(dir, p)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("cgroup v2: %w", err)
		}
		if err := enableCPU(dir); err != nil {
			return fmt.Errorf("cgroup v2 at %s: %w", m.point, err)
		}
	}
	c.version, c.base = 2, dir
	return nil
}

// enableCPU makes the cpu controller available to dir's children.
func enableCPU(dir string) error {
	f := filepath.Join(dir, "cgroup.subtree_control")
	b, err := os.ReadFile(f)
	if err != nil {
		return err
	}
	if slices.Contains(strings.Fields(string(b)), "cpu") {
		return nil
	}
	if err := os.WriteFile(f, []byte("+cpu"), 0); err != nil {
		return fmt.Errorf("cannot enable the cpu controller in %s (a cgroup holding processes cannot; run the daemon in a delegated cgroup): %w", f, err)
	}
	return nil
}

// tryV1 uses cgroup v1's cpu hierarchy m: Root is made under the
// daemon's own cgroup there, and the daemon must be able to move its
// threads (tasks) into the tenants' cgroups and back.
func (c *Cgroups) tryV1(m mount, self map[string]string, root string) error {
	p, ok := self["cpu"]
	if !ok {
		return fmt.Errorf("cgroup v1 cpu hierarchy at %s: this process is not in it", m.point)
	}
	home := dirOf(m, p)
	base := filepath.Join(home, root)
	if err := os.MkdirAll(base, 0o755); err != nil {
		return fmt.Errorf("cgroup v1 cpu hierarchy at %s: %w", m.point, err)
	}
	if _, err := os.Stat(filepath.Join(base, "cpu.cfs_quota_us")); err != nil {
		return fmt.Errorf("cgroup v1 cpu hierarchy at %s: no CPU bandwidth control (CONFIG_CFS_BANDWIDTH): %w", m.point, err)
	}
	// Moving a thread where it already is checks the permission.
	if err := writeTid(home, syscall.Gettid()); err != nil {
		return fmt.Errorf("cgroup v1 cpu hierarchy at %s: %w", m.point, err)
	}
	c.version, c.base, c.home = 1, base, home
	return nil
}

func writeTid(dir string, tid int) error {
	return os.WriteFile(filepath.Join(dir, "tasks"), []byte(strconv.Itoa(tid)), 0)
}

// Tenant makes (or updates) tenant's cgroup with a limit of cores CPUs
// (0: unlimited) and returns it for ProcessSpec.Cgroup. Without cgroups
// it returns nil and no error: the processes run without a CPU limit.
// A change of the limit applies at once to the processes already in it.
func (c *Cgroups) Tenant(tenant string, cores float64) (*Slice, error) {
	if !c.Available() {
		return nil, nil
	}
	if err := checkCgroupTenant(tenant); err != nil {
		return nil, err
	}
	if err := checkCores(cores); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	sl := c.tenants[tenant]
	if sl == nil {
		sl = &Slice{Tenant: tenant, Dir: filepath.Join(c.base, tenant), version: c.version, home: c.home}
		// MkdirAll: Root too, which another daemon sharing it (every
		// daemon on a machine uses DefaultCgroupRoot) removes in its Close
		// once it is empty.
		if err := os.MkdirAll(sl.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("launcher: cgroup for tenant %s: %w", tenant, err)
		}
	}
	q, period := quotaMicros(cores)
	var err error
	if c.version == 2 {
		v := "max " + strconv.FormatInt(period, 10)
		if q > 0 {
			v = strconv.FormatInt(q, 10) + " " + strconv.FormatInt(period, 10)
		}
		err = os.WriteFile(filepath.Join(sl.Dir, "cpu.max"), []byte(v), 0)
	} else {
		err = os.WriteFile(filepath.Join(sl.Dir, "cpu.cfs_period_us"), []byte(strconv.FormatInt(period, 10)), 0)
		if err == nil {
			err = os.WriteFile(filepath.Join(sl.Dir, "cpu.cfs_quota_us"), []byte(strconv.FormatInt(q, 10)), 0)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("launcher: cgroup for tenant %s: cpu limit %v cores: %w", tenant, cores, err)
	}
	c.tenants[tenant] = sl
	return sl, nil
}

// RemoveTenant removes tenant's cgroup; it fails while a process is in it.
func (c *Cgroups) RemoveTenant(tenant string) error {
	if !c.Available() {
		return nil
	}
	if err := checkCgroupTenant(tenant); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := syscall.Rmdir(filepath.Join(c.base, tenant)); err != nil && !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("launcher: remove the cgroup of tenant %s: %w", tenant, err)
	}
	delete(c.tenants, tenant)
	return nil
}

// Close removes the tenants' cgroups this Cgroups made and Root, once
// their processes are gone (call it after the supervisor's Close).
func (c *Cgroups) Close() error {
	if !c.Available() {
		return nil
	}
	c.mu.Lock()
	ts := make([]string, 0, len(c.tenants))
	for t := range c.tenants {
		ts = append(ts, t)
	}
	c.mu.Unlock()
	var errs []error
	for _, t := range ts {
		if err := c.RemoveTenant(t); err != nil {
			errs = append(errs, err)
		}
	}
	if err := syscall.Rmdir(c.base); err != nil && !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.EBUSY) && !errors.Is(err, syscall.ENOTEMPTY) {
		errs = append(errs, fmt.Errorf("launcher: remove cgroup %s: %w", c.base, err))
	}
	return errors.Join(errs...)
}

// CPU reads the cgroup's CPU limit back in cores (0: unlimited).
func (s *Slice) CPU() (float64, error) {
	if s == nil {
		return 0, errNoCgroups
	}
	var quota, period int64
	if s.version == 2 {
		b, err := os.ReadFile(filepath.Join(s.Dir, "cpu.max"))
		if err != nil {
			return 0, err
		}
		f := strings.Fields(string(b))
		if len(f) != 2 {
			return 0, fmt.Errorf("%s/cpu.max: %q", s.Dir, b)
		}
		if f[0] == "max" {
			return 0, nil
		}
		quota, _ = strconv.ParseInt(f[0], 10, 64)
		period, _ = strconv.ParseInt(f[1], 10, 64)
	} else {
		for _, x := range []struct {
			file string
			dst  *int64
		}{{"cpu.cfs_quota_us", &quota}, {"cpu.cfs_period_us", &period}} {
			b, err := os.ReadFile(filepath.Join(s.Dir, x.file))
			if err != nil {
				return 0, err
			}
			if *x.dst, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err != nil {
				return 0, fmt.Errorf("%s/%s: %w", s.Dir, x.file, err)
			}
		}
		if quota < 0 {
			return 0, nil
		}
	}
	if period <= 0 {
		return 0, fmt.Errorf("%s: CPU period %d", s.Dir, period)
	}
	return float64(quota) / float64(period), nil
}

// Throttled reads how many CPU periods the cgroup's processes were
// throttled in (cpu.stat nr_throttled): proof that the limit bites.
func (s *Slice) Throttled() (int64, error) {
	if s == nil {
		return 0, errNoCgroups
	}
	b, err := os.ReadFile(filepath.Join(s.Dir, "cpu.stat"))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "nr_throttled "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s/cpu.stat: no nr_throttled", s.Dir)
}

// spawnThread is the cgroup state of the supervisor's spawning thread,
// owned by that thread's goroutine: on cgroup v1 the thread moves into a
// tenant's cgroup to fork and back after; home is where it must go back
// to when a move back failed ("" when it is home).
type spawnThread struct {
	away string
}

// start starts cmd inside sl (nil: where the supervisor is). On cgroup v1
// it runs on the spawning thread, which it moves.
func (t *spawnThread) start(cmd *exec.Cmd, sl *Slice) error {
	tid := syscall.Gettid()
	if t.away != "" {
		// A move back failed after the last fork: retry before forking
		// anything, rather than start a process in another tenant's cgroup.
		if err := writeTid(t.away, tid); err != nil {
			return fmt.Errorf("launcher: the spawning thread cannot leave a tenant's cgroup: %w", err)
		}
		t.away = ""
	}
	if sl == nil {
		return cmd.Start()
	}
	switch sl.version {
	case 2:
		f, err := os.Open(sl.Dir)
		if err != nil {
			return fmt.Errorf("launcher: cgroup of tenant %s: %w", sl.Tenant, err)
		}
		defer f.Close()
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(f.Fd())
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("start in the cgroup of tenant %s (%s): %w", sl.Tenant, sl.Dir, err)
		}
		return nil
	case 1:
		if err := writeTid(sl.Dir, tid); err != nil {
			return fmt.Errorf("launcher: enter the cgroup of tenant %s: %w", sl.Tenant, err)
		}
		t.away = sl.home
		err := cmd.Start()
		if writeTid(sl.home, tid) == nil {
			t.away = ""
		}
		return err
	}
	return fmt.Errorf("launcher: cgroup of tenant %s: version %d", sl.Tenant, sl.version)
}
