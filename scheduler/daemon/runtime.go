package daemon

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/ardea-dev/ardea/scheduler/launcher"
	"github.com/ardea-dev/ardea/scheduler/manager"
)

// containerRuntime runs a daemon's containers: each as an `ardea host`
// process under the launcher (processes, `ardea local`), or as goroutines
// of the daemon's own process (inproc.go, `ardea run`). A topology manager
// drives both the same way (tmRuntime adapts it to manager.Runtime);
// only how a container starts, stops and is killed differs. Ids are
// containerid.ID's (Manager.ContainerID); states and restarts follow the
// launcher's (a container that exits is restarted after a back-off until
// it fails too often in a row, then it is FAILED).
type containerRuntime interface {
	// start starts container c of t (launcher.ErrDuplicate if it runs).
	start(ctx context.Context, t *manager.Manager, c int) error
	Stop(ctx context.Context, id string) error
	Restart(ctx context.Context, id string) error
	Remove(ctx context.Context, id string) error
	Status(id string) (launcher.ProcessStatus, bool)
	List() []launcher.ProcessStatus
	// LogPath is the file the container's output goes to ("" in process:
	// it logs to the daemon's logger).
	LogPath(id string) string
	// kill ends a container that was declared lost (ps is its status when
	// it was): its replacement is started as after any exit.
	kill(id string, pid int) error
	Close(ctx context.Context) error
}

// processes runs each container as an `ardea host` process.
type processes struct {
	*launcher.Supervisor
	d *Daemon
}

func (p processes) start(ctx context.Context, t *manager.Manager, container int) error {
	d := p.d
	args := append(slices.Clone(d.o.HostArgs),
		"--nats", d.srv.ClientURL(), "--tenant", t.Tenant(), "--topology", t.Name(),
		"--container", strconv.Itoa(container), "--data-dir", d.o.DataDir)
	margs, err := d.hostMetricsArgs()
	if err != nil {
		return err
	}
	args = append(args, margs...)
	policy, err := d.hostPolicyEnv(t.Tenant())
	if err != nil {
		return err
	}
	spec := launcher.ProcessSpec{ID: t.ContainerID(container), Path: d.o.HostPath, Args: args, Env: append(hostEnv(os.Environ()), policy)}
	if err := d.secureHost(ctx, t, container, &spec); err != nil {
		return err
	}
	return p.Start(ctx, spec)
}

// hostEnvAllowed are the variables of the daemon's environment a host
// process inherits: what a Go program, its locale and its temporary files
// need, and the trust store and proxies of the machine's network. Nothing
// else of the daemon's environment (its tokens, cloud or
// broker credentials) reaches a host, which runs tenants' code: a host's
// own settings are flags, and its NATS credential, machine policy and
// restart count are variables the daemon and the launcher set for it
// (ARDEA_*).
var hostEnvAllowed = []string{"PATH", "HOME", "TMPDIR", "TZ", "LANG", "LANGUAGE",
	"GOMAXPROCS", "GOMEMLIMIT", "GOGC", "GODEBUG", "GOTRACEBACK", "GOCOVERDIR",
	// the machine's trust store and proxies, which built-in connectors use
	"SSL_CERT_FILE", "SSL_CERT_DIR", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"}

// hostEnv keeps of environ (KEY=value entries) the allowed variables and
// the locale's LC_* ones; never nil (nil would inherit everything).
func hostEnv(environ []string) []string {
	out := []string{}
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(hostEnvAllowed, k) || strings.HasPrefix(k, "LC_") {
			out = append(out, kv)
		}
	}
	return out
}

// kill sends SIGKILL to the host's process group (the host and anything
// it started; it reaches a stopped process too).
func (p processes) kill(id string, pid int) error {
	if pid <= 0 {
		return fmt.Errorf("container %s: no process to kill", id)
	}
	return syscall.Kill(-pid, syscall.SIGKILL)
}
