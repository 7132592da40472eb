//go:build !linux

package launcher

import "os/exec"

// NewCgroups logs that CPU quotas are not enforced: cgroups are Linux
// only.
func NewCgroups(o CgroupOptions) *Cgroups {
	c := &Cgroups{reason: "cgroups are Linux only"}
	if o.Disabled {
		c.reason = "turned off"
	}
	if o.Logger != nil {
		o.Logger.Warn("CPU quotas are not enforced: host processes run without a CPU limit", "reason", c.reason)
	}
	return c
}

// Tenant returns nil: no cgroup.
func (c *Cgroups) Tenant(tenant string, cores float64) (*Slice, error) { return nil, nil }

// RemoveTenant does nothing.
func (c *Cgroups) RemoveTenant(tenant string) error { return nil }

// Close does nothing.
func (c *Cgroups) Close() error { return nil }

// CPU returns errNoCgroups.
func (s *Slice) CPU() (float64, error) { return 0, errNoCgroups }

// Throttled returns errNoCgroups.
func (s *Slice) Throttled() (int64, error) { return 0, errNoCgroups }

type spawnThread struct{}

func (t *spawnThread) start(cmd *exec.Cmd, _ *Slice) error { return cmd.Start() }
