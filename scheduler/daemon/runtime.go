package daemon

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"

	"github.com/ardea-dev/ardea/scheduler/container"
	"github.com/ardea-dev/ardea/scheduler/container/process"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/manager"
	"github.com/ardea-dev/ardea/scheduler/internal/runtime"
	"github.com/nats-io/nats.go"
)

// containerRuntime runs a daemon's containers (scheduler/internal/runtime): each
// as an `ardea host` process under the launcher (runtime.Processes,
// `ardea local`), or as goroutines of the daemon's own process
// (runtime.InProcess, `ardea run`). A topology manager drives both the
// same way (it is their manager.Runtime); only how a container
// starts, stops and is killed differs. Ids are runtime.ID's
// (Manager.ContainerID); states and restarts follow the launcher's (a
// container that exits is restarted after a back-off until it fails too
// often in a row, then it is FAILED).
type containerRuntime interface {
	// StartContainer starts container c of t (launcher.ErrDuplicate if
	// it runs).
	StartContainer(ctx context.Context, t *manager.Manager, c int) error
	Stop(ctx context.Context, id string) error
	Restart(ctx context.Context, id string) error
	Remove(ctx context.Context, id string) error
	Status(id string) (launcher.ProcessStatus, bool)
	List() []launcher.ProcessStatus
	// LogPath is the file the container's output goes to ("" in process:
	// it logs to the daemon's logger).
	LogPath(id string) string
	// Kill ends a container that was declared lost (pid is its process
	// then): its replacement is started as after any exit.
	Kill(id string, pid int) error
	Close(ctx context.Context) error
}

// A daemon's runtime is its topology managers' (managers.go).
var _ manager.Runtime = containerRuntime(nil)

// newProcesses is the runtime of `ardea local`: sup's processes, each
// started as hostSpec says.
func (d *Daemon) newProcesses(sup *launcher.Supervisor) runtime.Processes[*manager.Manager] {
	return runtime.Processes[*manager.Manager]{Supervisor: sup, Spec: d.hostSpec}
}

// hostSpec is container c of t as an `ardea host` process: its command
// line, the allowed part of the daemon's environment, its machine policy
// and its tenant's security (secureHost).
func (d *Daemon) hostSpec(ctx context.Context, t *manager.Manager, container int) (launcher.ProcessSpec, error) {
	args := append(slices.Clone(d.o.HostArgs),
		"--nats", d.srv.ClientURL(), "--tenant", t.Tenant(), "--topology", t.Name(),
		"--container", strconv.Itoa(container), "--data-dir", d.o.DataDir)
	margs, err := d.hostMetricsArgs()
	if err != nil {
		return launcher.ProcessSpec{}, err
	}
	args = append(args, margs...)
	policy, err := d.ten.HostPolicyEnv(t.Tenant())
	if err != nil {
		return launcher.ProcessSpec{}, err
	}
	spec := launcher.ProcessSpec{ID: t.ContainerID(container), Path: d.o.HostPath, Args: args, Env: append(runtime.HostEnv(os.Environ()), policy)}
	if err := d.secureHost(ctx, t, container, &spec); err != nil {
		return launcher.ProcessSpec{}, err
	}
	return spec, nil
}

// newInProcess is the runtime of `ardea run`: each container's runs are
// process.Run over an in-process NATS connection, attached to its
// TM's in-process gateway (runInProcess).
func (d *Daemon) newInProcess() *runtime.InProcess[*manager.Manager] {
	// The bolt tasks' last failing tuples, shared by a topology's
	// containers so that a spout's dead letter names a bolt's error from
	// another container; kept as long as the topology's TM (a topology
	// submitted again starts with none).
	var mu sync.Mutex
	failures := map[*manager.Manager]*container.TupleFailures{}
	failuresOf := func(t *manager.Manager) *container.TupleFailures {
		mu.Lock()
		defer mu.Unlock()
		f, ok := failures[t]
		if !ok {
			f = &container.TupleFailures{}
			failures[t] = f
			context.AfterFunc(t.Context(), func() {
				mu.Lock()
				delete(failures, t)
				mu.Unlock()
			})
		}
		return f
	}
	return runtime.NewInProcess(runtime.InProcessOptions[*manager.Manager]{Logger: d.log, Backoff: d.o.Backoff,
		MaxRestarts: d.o.MaxRestarts, FailFast: d.ip.FailFast, OnChange: d.onProcess,
		Run: func(ctx context.Context, t *manager.Manager, c, pid, restarts int) error {
			return d.runInProcess(ctx, t, c, pid, restarts, failuresOf(t))
		}})
}

// runInProcess is one run of container c of t in process:
// process.Run over its own in-process NATS connection, attached to
// the TM's in-process gateway.
func (d *Daemon) runInProcess(ctx context.Context, t *manager.Manager, c, pid, restarts int, failures *container.TupleFailures) error {
	nc, err := nats.Connect(d.srv.ClientURL(), nats.InProcessServer(d.srv.NATS()),
		nats.Name(fmt.Sprintf("ardea-run-%s-%d", t.Name(), c)))
	if err != nil {
		return fmt.Errorf("container %d: connect to NATS: %w", c, err)
	}
	defer nc.Close()
	local := t.Local()
	return process.Run(ctx, process.Options{
		Tenant: t.Tenant(), Topology: t.Name(), Container: c, DataDir: d.cacheDir(),
		Logger: d.log, Metrics: d.o.Metrics, Conn: nc, Reporter: local.Reporter(),
		Serve: func(cmds ctl.Commands) func() {
			local.Attach(c, cmds)
			return func() { local.Detach(c) }
		},
		Registry: d.ip.Registry, PID: pid, OnStop: d.ip.OnContainerStop, OnSwap: d.ip.OnSwap, CheckpointStore: d.ip.CheckpointStore, Bus: d.ip.Bus,
		Restarts: restarts, TupleFailures: failures, Machine: d.ten.MachinePolicy(t.Tenant()),
		Plugins: d.plugins,
	})
}
