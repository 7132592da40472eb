package manager

import (
	"context"
	"errors"
	"log/slog"
	"os/exec"
	"syscall"
	"testing"

	"github.com/ardea-dev/ardea/internal/names"
	"github.com/ardea-dev/ardea/internal/plan"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/runtime"
)

// TestStopContainersAfterShrinkInTenant: a topology of tenant acme whose
// plan was shrunk from 3 containers to 1 while the supervisor still runs
// processes 2 and 3 (what maxLaunched is for): stopping its containers
// stops all three real processes, and none of the same-named topologies
// of tenant globex and of the default tenant. The container ids are runtime.ID's, the one
// builder; the ids parse back to tenant, topology and container.
func TestStopContainersAfterShrinkInTenant(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	sup := launcher.New(launcher.Options{Logger: slog.New(slog.DiscardHandler), LogDir: t.TempDir()})
	t.Cleanup(func() { _ = sup.Close(context.Background()) })
	ctx := t.Context()
	pids := map[string]int{}
	for _, tenant := range []string{"acme", "globex", names.DefaultTenant} {
		for c := 1; c <= 3; c++ {
			if tenant == names.DefaultTenant && c > 1 {
				break // the default tenant's wc runs one container: it must not count for acme's
			}
			id := runtime.ID(tenant, "wc", c)
			if te, top, num, ok := runtime.Parse(id); !ok || te != tenant || top != "wc" || num != string(rune('0'+c)) {
				t.Fatalf("runtime.Parse(%q) = %q %q %q %v", id, te, top, num, ok)
			}
			if err := sup.Start(ctx, launcher.ProcessSpec{ID: id, Path: sleep, Args: []string{"3600"}}); err != nil {
				t.Fatal(err)
			}
			ps, _ := sup.Status(id)
			pids[id] = ps.PID
		}
	}
	tm := &Manager{cfg: Config{Runtime: supervised{sup}, Tenant: "acme"}, name: "wc", log: slog.New(slog.DiscardHandler),
		doc: ctl.PlanDoc{Plan: &plan.Plan{Topology: "wc", Containers: 1}}}
	tm.StopContainers(ctx)
	for id, pid := range pids {
		_, listed := sup.Status(id)
		if tenant, _, _, _ := runtime.Parse(id); tenant == "acme" {
			if listed {
				t.Errorf("%s still supervised after its topology's containers stopped", id)
			}
			testutil.Eventually(t, id+"'s process gone", func() bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) })
		} else if !listed || syscall.Kill(pid, 0) != nil {
			t.Errorf("%s (another tenant's) was stopped with acme's topology", id)
		}
	}
}

// supervised is a launcher as a manager's Runtime (what the daemon's
// process runtime is, without starting hosts).
type supervised struct{ *launcher.Supervisor }

func (supervised) StartContainer(context.Context, *Manager, int) error { return errors.New("not here") }
func (supervised) Kill(string, int) error                              { return errors.New("not here") }
