//go:build linux

package launcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// testCgroups detects the machine's cgroups under a root of the test's
// own, removed when the test ends; it skips the test, with the reason,
// where CPU quotas are not available.
func testCgroups(t *testing.T) *Cgroups {
	t.Helper()
	var log bytes.Buffer
	c := NewCgroups(CgroupOptions{Root: fmt.Sprintf("ardea-test-%d", os.Getpid()),
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	t.Logf("cgroups: %s", strings.TrimSpace(log.String()))
	if !c.Available() {
		if c.Reason() == "" || !strings.Contains(log.String(), "not enforced") {
			t.Fatalf("unavailable without a reason logged: %q", log.String())
		}
		t.Skipf("CPU quotas are not available here: %s", c.Reason())
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close cgroups: %v", err)
		}
		if _, err := os.Stat(c.Dir()); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s left behind (%v)", c.Dir(), err)
		}
	})
	return c
}

// cgroupOf returns pid's cgroup path in the hierarchy whose controller
// list (the second field of /proc/<pid>/cgroup) is ctl; "" for v2.
func cgroupOf(t *testing.T, pid int, ctl string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && (parts[1] == ctl || ctl != "" && strings.Contains(","+parts[1]+",", ","+ctl+",")) {
			return parts[2]
		}
	}
	t.Fatalf("pid %d: no %q hierarchy in %s", pid, ctl, b)
	return ""
}

// spinSpec is a process that uses all the CPU it gets.
func spinSpec(id string, sl *Slice) ProcessSpec {
	return ProcessSpec{ID: id, Path: "/bin/sh", Args: []string{"-c", "while :; do :; done"}, Cgroup: sl}
}

func runningPID(t *testing.T, s *Supervisor, id string, not int) int {
	t.Helper()
	var pid int
	testutil.Eventually(t, id+" running", func() bool {
		st, _ := s.Status(id)
		pid = st.PID
		return st.State == StateRunning && pid != 0 && pid != not
	})
	return pid
}

// TestCgroupCPUQuota: a tenant's host process starts inside the tenant's
// cgroup (and its restart too), the cgroup's CPU limit is the quota, the
// kernel throttles a process that spins, and the supervisor's own threads
// stay out of it.
func TestCgroupCPUQuota(t *testing.T) {
	c := testCgroups(t)
	sl, err := c.Tenant("acme", 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if cores, err := sl.CPU(); err != nil || cores != 0.5 {
		t.Fatalf("cgroup %s: %v cores (%v), want 0.5", sl.Dir, cores, err)
	}
	if again, err := c.Tenant("acme", 0.25); err != nil || again != sl {
		t.Fatalf("updating the quota gave %v, %v; want the same cgroup", again, err)
	}
	if cores, _ := sl.CPU(); cores != 0.25 {
		t.Fatalf("after an update: %v cores, want 0.25", cores)
	}
	s := New(Options{GracePeriod: time.Second})
	defer s.Close(context.Background())
	ctx := t.Context()
	if err := s.Start(ctx, spinSpec("acme/spin", sl)); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx, spinSpec("free/spin", nil)); err != nil {
		t.Fatal(err)
	}
	ctl := "cpu"
	if c.Version() == 2 {
		ctl = ""
	}
	want := cgroupOf(t, os.Getpid(), ctl) // the supervisor's own
	inSlice := strings.TrimSuffix(want, "/") + "/" + filepath.Base(c.Dir()) + "/acme"
	pid := runningPID(t, s, "acme/spin", 0)
	if got := cgroupOf(t, pid, ctl); got != inSlice {
		t.Fatalf("tenant's process in cgroup %q, want %q", got, inSlice)
	}
	if got := cgroupOf(t, runningPID(t, s, "free/spin", 0), ctl); got != want {
		t.Fatalf("a process without a cgroup is in %q, want the supervisor's %q", got, want)
	}
	// No thread of the supervisor was left in the tenant's cgroup.
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/cgroup")
		if err == nil && strings.Contains(string(b), inSlice) {
			t.Fatalf("thread %s of the supervisor is in the tenant's cgroup: %s", e.Name(), b)
		}
	}
	testutil.Eventually(t, "the kernel throttles the spinning process", func() (bool, string) {
		n, err := sl.Throttled()
		return err == nil && n > 0, fmt.Sprintf("nr_throttled %d (%v)", n, err)
	})
	if err := s.Restart(ctx, "acme/spin"); err != nil {
		t.Fatal(err)
	}
	if got := cgroupOf(t, runningPID(t, s, "acme/spin", pid), ctl); got != inSlice {
		t.Fatalf("restarted process in cgroup %q, want %q", got, inSlice)
	}
	if err := c.RemoveTenant("acme"); err == nil {
		t.Fatal("removed a cgroup with a process in it")
	}
	if err := s.Stop(ctx, "acme/spin"); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(ctx, "free/spin"); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveTenant("acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Tenant("../x", 1); err == nil {
		t.Fatal("a tenant name with ../ was taken")
	}
	if _, err := c.Tenant("x", -1); err == nil {
		t.Fatal("negative cores were taken")
	}
}

// TestCgroupUnlimited: a tenant without a CPU quota gets a cgroup without
// a limit.
func TestCgroupUnlimited(t *testing.T) {
	c := testCgroups(t)
	sl, err := c.Tenant("big", 0)
	if err != nil {
		t.Fatal(err)
	}
	if cores, err := sl.CPU(); err != nil || cores != 0 {
		t.Fatalf("%v cores (%v), want 0 (unlimited)", cores, err)
	}
}

// TestCgroupV2Placement starts a process into a cgroup v2 directory with
// CLONE_INTO_CGROUP, where a writable cgroup v2 hierarchy exists (with or
// without its cpu controller: this checks the placement only).
func TestCgroupV2Placement(t *testing.T) {
	mounts, err := readMounts("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var point string
	for _, m := range mounts {
		if m.v2 {
			point = m.point
			break
		}
	}
	if point == "" {
		t.Skip("no cgroup v2 mount here")
	}
	name := fmt.Sprintf("ardea-test-%d", os.Getpid())
	dir := filepath.Join(point, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("cannot make a cgroup v2 directory under %s: %v", point, err)
	}
	t.Cleanup(func() {
		if err := os.Remove(dir); err != nil {
			t.Errorf("remove %s: %v", dir, err)
		}
	})
	sl := &Slice{Tenant: "v2", Dir: dir, version: 2}
	s := New(Options{GracePeriod: time.Second})
	defer s.Close(context.Background())
	if err := s.Start(t.Context(), ProcessSpec{ID: "v2/sleep", Path: "/bin/sleep", Args: []string{"600"}, Cgroup: sl}); err != nil {
		t.Fatal(err)
	}
	pid := runningPID(t, s, "v2/sleep", 0)
	self := cgroupOf(t, os.Getpid(), "")
	mroot := "/"
	for _, m := range mounts {
		if m.point == point {
			mroot = m.root
		}
	}
	want := filepath.Join(mroot, name)
	if got := cgroupOf(t, pid, ""); got != want {
		t.Fatalf("process in cgroup v2 %q, want %q (the supervisor is in %q)", got, want, self)
	}
	if err := s.Stop(t.Context(), "v2/sleep"); err != nil {
		t.Fatal(err)
	}
}

// TestCgroupDetectReasons: detection on made-up mount tables says why it
// found nothing, and never pretends.
func TestCgroupDetectReasons(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	self := write("cgroup", "0::/\n")
	none := write("none", "22 1 0:21 / /proc rw - proc proc rw\n")
	if c := detectCgroups(CgroupOptions{}, none, self); c.Available() || !strings.Contains(c.Reason(), "no cgroup v2 mount and no cgroup v1 cpu hierarchy") {
		t.Fatalf("no cgroup mounts: %q", c.Reason())
	}
	// A cgroup v2 mount whose root has no cpu controller (as where cpu is
	// attached to a v1 hierarchy).
	v2 := filepath.Join(dir, "v2")
	if err := os.Mkdir(v2, 0o755); err != nil {
		t.Fatal(err)
	}
	write("v2/cgroup.controllers", "hugetlb\n")
	mi := write("mi", "41 31 0:38 / "+v2+" rw,relatime - cgroup2 cgroup2 rw\n")
	if c := detectCgroups(CgroupOptions{}, mi, self); c.Available() || !strings.Contains(c.Reason(), "has no cpu controller") {
		t.Fatalf("v2 without cpu: %q", c.Reason())
	}
	if c := detectCgroups(CgroupOptions{Disabled: true}, mi, self); c.Available() || c.Reason() != "turned off" {
		t.Fatalf("disabled: %q", c.Reason())
	}
	if c := detectCgroups(CgroupOptions{Root: "a/../b"}, mi, self); c.Available() || !strings.Contains(c.Reason(), "cgroup root") {
		t.Fatalf("bad root: %q", c.Reason())
	}
	var nilC *Cgroups
	if sl, err := nilC.Tenant("x", 1); sl != nil || err != nil {
		t.Fatalf("nil Cgroups: %v %v", sl, err)
	}
}

// TestCgroupV2Files checks what the cgroup v2 branch writes, on a
// directory tree shaped like a cgroup2 mount whose root offers cpu (this
// machine's has none): cpu enabled for the children of each level down
// to the root, and cpu.max from the quota. Only the file protocol: the
// kernel's side is TestCgroupCPUQuota's, wherever a cpu controller is.
func TestCgroupV2Files(t *testing.T) {
	dir := t.TempDir()
	point := filepath.Join(dir, "cg")
	for _, d := range []string{point, filepath.Join(point, "ardea")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(point, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mi := filepath.Join(dir, "mountinfo")
	if err := os.WriteFile(mi, []byte("41 31 0:38 / "+point+" rw,relatime - cgroup2 cgroup2 rw\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(dir, "cgroup")
	if err := os.WriteFile(self, []byte("0::/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := detectCgroups(CgroupOptions{}, mi, self)
	if c.Version() != 2 || c.Dir() != filepath.Join(point, "ardea") {
		t.Fatalf("version %d dir %q (%s), want 2 at %s/ardea", c.Version(), c.Dir(), c.Reason(), point)
	}
	for _, d := range []string{point, filepath.Join(point, "ardea")} {
		if b, _ := os.ReadFile(filepath.Join(d, "cgroup.subtree_control")); string(b) != "+cpu" {
			t.Fatalf("%s/cgroup.subtree_control: %q, want +cpu", d, b)
		}
	}
	for _, tc := range []struct {
		cores float64
		want  string
	}{{0.5, "5000 10000"}, {2, "20000 10000"}, {0.05, "1000 20000"}, {0.001, "1000 1000000"}, {0, "max 10000"}} {
		sl, err := c.Tenant("acme", tc.cores)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(sl.Dir, "cpu.max"))
		got, _ := sl.CPU()
		if string(b) != tc.want || (tc.cores >= 0.01 || tc.cores == 0) && got != tc.cores {
			t.Errorf("%v cores: cpu.max %q (read back %v), want %q", tc.cores, b, got, tc.want)
		}
	}
}

// TestCgroupSharedRoot: daemons on one machine share the cgroup root
// (DefaultCgroupRoot); one closing (and removing the root, empty) must
// not make the other's next tenant fail ("mkdir .../ardea/noisy: no such
// file or directory" failed ardea bench tenants beside another daemon's
// tests).
func TestCgroupSharedRoot(t *testing.T) {
	first := testCgroups(t)
	second := NewCgroups(CgroupOptions{Root: filepath.Base(first.Dir()), Logger: slog.New(slog.DiscardHandler)})
	if !second.Available() {
		t.Fatalf("a second Cgroups on the same root: %s", second.Reason())
	}
	if _, err := first.Tenant("one", 0.5); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(first.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the first Close left the empty root %s (%v)", first.Dir(), err)
	}
	sl, err := second.Tenant("two", 0.5)
	if err != nil {
		t.Fatalf("a tenant after the other daemon removed the shared root: %v", err)
	}
	if cores, err := sl.CPU(); err != nil || cores != 0.5 {
		t.Fatalf("cgroup %s: %v cores (%v), want 0.5", sl.Dir, cores, err)
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
}
