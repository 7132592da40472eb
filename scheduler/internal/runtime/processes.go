package runtime

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"

	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
)

// Topology is what a runtime needs of the topology a container belongs
// to (a topology manager is one).
type Topology interface {
	Tenant() string
	Name() string
	// Context lives as long as the topology's manager: an in-process
	// container's runs end with it.
	Context() context.Context
}

// Processes runs each container as an `ardea host` process under the
// launcher, which restarts it after a back-off when it exits.
type Processes[T Topology] struct {
	*launcher.Supervisor
	// Spec makes the process of container c of t: its command line,
	// environment (HostEnv's part of the daemon's, its credential),
	// cgroup. StartContainer sets its ID.
	Spec func(ctx context.Context, t T, c int) (launcher.ProcessSpec, error)
}

// StartContainer starts container c of t (launcher.ErrDuplicate if it
// runs).
func (p Processes[T]) StartContainer(ctx context.Context, t T, c int) error {
	spec, err := p.Spec(ctx, t, c)
	if err != nil {
		return err
	}
	spec.ID = ID(t.Tenant(), t.Name(), c)
	return p.Start(ctx, spec)
}

// Kill sends SIGKILL to the host's process group (the host and anything
// it started; it reaches a stopped process too).
func (p Processes[T]) Kill(id string, pid int) error { return KillGroup(id, pid) }

// KillGroup sends SIGKILL to container id's process group (pid: its
// host's).
func KillGroup(id string, pid int) error {
	if pid <= 0 {
		return fmt.Errorf("container %s: no process to kill", id)
	}
	return syscall.Kill(-pid, syscall.SIGKILL)
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

// HostEnv keeps of environ (KEY=value entries) the allowed variables and
// the locale's LC_* ones; never nil (nil would inherit everything).
func HostEnv(environ []string) []string {
	out := []string{}
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(hostEnvAllowed, k) || strings.HasPrefix(k, "LC_") {
			out = append(out, kv)
		}
	}
	return out
}
