package daemon

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"

	ardea "github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/internal/natsauth"
	"github.com/ardea-dev/ardea/scheduler/container"
	"github.com/ardea-dev/ardea/scheduler/container/process"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/manager"
	"github.com/ardea-dev/ardea/scheduler/internal/placement"
	"github.com/ardea-dev/ardea/scheduler/internal/runtime"
	"github.com/ardea-dev/ardea/scheduler/internal/tenantdata"
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

// hostSpec is container c of t as an `ardea host` process of this node:
// what its topology manager says of it (containerSpec) run as this node
// runs a container (nodeSpec). A cluster's node makes the first part for
// a container another node runs (scheduler/internal/placement).
func (d *Daemon) hostSpec(ctx context.Context, t *manager.Manager, container int) (launcher.ProcessSpec, error) {
	s, err := d.containerSpec(ctx, t, container)
	if err != nil {
		return launcher.ProcessSpec{}, err
	}
	return d.nodeSpec(ctx, s)
}

// containerSpec is container c of t as its topology manager makes it,
// for whichever node runs it: the topology's flags (metrics, the
// tenant's rate share), the tenant's machine policy, a fresh NATS
// credential, the container's request. The credential is issued through
// t.IssueCredential, only until the TM revokes its hosts' (as it enters a
// terminal mode: tenancy's RevokeHosts), so a container started meanwhile
// gets one that is revoked with the others, or none.
func (d *Daemon) containerSpec(ctx context.Context, t *manager.Manager, c int) (placement.Spec, error) {
	s := placement.Spec{Tenant: t.Tenant(), Topology: t.Name(), Container: c}
	if t.LockLost() {
		// Cut off, say: the majority's TM may run the topology now.
		return s, fmt.Errorf("topology %s: container %d not started: this topology manager has lost its lock (it acquires it again, or steps down)", t.Name(), c)
	}
	margs, err := d.hostMetricsArgs()
	if err != nil {
		return s, err
	}
	policy, err := d.ten.HostPolicyEnv(t.Tenant())
	if err != nil {
		return s, err
	}
	s.Env = []string{policy}
	if d.ten.Accounts() != nil {
		var cr natsauth.Creds
		err := t.IssueCredential(func(top *ardea.Topology) error {
			var err error
			cr, _, err = d.ten.IssueHostCreds(tmTopology{t}, natsauth.TenantIO{Streams: tenantdata.TopologyStreams(top), KV: tenantdata.TopologyKV(top)})
			return err
		})
		if err != nil {
			return s, err
		}
		b, err := cr.Bytes()
		if err != nil {
			return s, err
		}
		s.Creds, s.Inbox, s.User = string(b), cr.InboxPrefix, cr.User
	}
	var rates launcher.ProcessSpec
	if err := d.ten.HostRates(ctx, tmTopology{t}, &rates); err != nil {
		return s, err
	}
	s.Args = append(margs, rates.Args...)
	if r, ok := t.ContainerResources(c); ok {
		s.MemoryBytes, s.CPU = r.RAM, r.CPU
	}
	return s, nil
}

// nodeSpec is s as this node runs it: its host executable, NATS address,
// data directory, the allowed part of its environment, the credential in
// a file of its own, its tenant's CPU cgroup here.
func (d *Daemon) nodeSpec(ctx context.Context, s placement.Spec) (launcher.ProcessSpec, error) {
	id := runtime.ID(s.Tenant, s.Topology, s.Container)
	args := append(slices.Clone(d.o.HostArgs),
		"--nats", d.srv.ClientURL(), "--tenant", s.Tenant, "--topology", s.Topology,
		"--container", strconv.Itoa(s.Container), "--data-dir", d.o.DataDir)
	args = append(args, s.Args...)
	env := append(runtime.HostEnv(os.Environ()), s.Env...)
	if s.Creds != "" {
		cr, err := natsauth.ParseCreds([]byte(s.Creds), s.Inbox)
		if err != nil {
			return launcher.ProcessSpec{}, fmt.Errorf("container %s: %w", id, err)
		}
		cenv, err := d.ten.WriteHostCreds(id, cr)
		if err != nil {
			return launcher.ProcessSpec{}, fmt.Errorf("container %s: %w", id, err)
		}
		env = append(env, cenv...) // the allowed part of the daemon's (HostEnv) and the credential's
	}
	spec := launcher.ProcessSpec{ID: id, Path: d.o.HostPath, Args: args, Env: env}
	if err := d.ten.HostCgroup(ctx, s.Tenant, &spec); err != nil {
		return launcher.ProcessSpec{}, fmt.Errorf("topology %s: %w", s.Topology, err)
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
