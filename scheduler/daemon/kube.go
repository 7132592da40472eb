package daemon

import (
	"context"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/ardea-dev/ardea/internal/natsauth"
	"github.com/ardea-dev/ardea/scheduler/internal/manager"
	"github.com/ardea-dev/ardea/scheduler/internal/runtime/kube"
	"github.com/ardea-dev/ardea/scheduler/packing"
	"github.com/ardea-dev/ardea/scheduler/planner"
	"github.com/ardea-dev/ardea/scheduler/settings"
)

// Kubernetes is the deployment file's scheduler: kubernetes and its
// kubernetes: section (scheduler/internal/runtime/kube): each topology's
// containers are the pods of a StatefulSet instead of `ardea host`
// processes of the daemon (docs/deploy.md).
type Kubernetes = kube.Config

// ParseScheduler reads the deployment file's scheduler: value and
// kubernetes: section (nil nodes: the file has none); nil for
// scheduler: processes, the default. Errors name the file and the field.
func ParseScheduler(file string, scheduler, kubernetes *yaml.Node) (*Kubernetes, error) {
	return kube.ParseSection(file, scheduler, kubernetes)
}

// KubernetesRules are the permissions scheduler: kubernetes uses in its
// namespace, as a Role's rules (the Helm chart's Role grants them).
func KubernetesRules() []rbacv1.PolicyRule { return kube.Rules() }

// newKube is the runtime of a daemon with scheduler: kubernetes.
func (d *Daemon) newKube(ctx context.Context) (containerRuntime, error) {
	cfg := *d.o.Kubernetes
	if cfg.NATSURL == "" {
		cfg.NATSURL = d.srv.ClientURL() // the pods share the daemon's network (tests)
	}
	d.o.Kubernetes = &cfg
	client, ns, err := cfg.Client()
	if err != nil {
		return nil, err
	}
	rt, err := kube.New(ctx, kube.Options[*manager.Manager]{Config: cfg, Client: client, Namespace: ns,
		Pod: d.kubePod, OnChange: d.onProcess, Logger: d.log, MaxRestarts: d.o.MaxRestarts,
		// A cluster's node that closes leaves its topologies' pods to the
		// node that takes them over (it adopts them).
		KeepOnClose: d.node.Clustered()})
	if err != nil {
		return nil, err
	}
	d.log.Info("scheduler: kubernetes", "namespace", rt.Namespace(), "image", cfg.Image, "nats", cfg.NATSURL)
	return rt, nil
}

// kubePod is what container c of t's pods run: `ardea host` with what
// its topology manager says of it (containerSpec: the topology's flags,
// the tenant's machine policy, a fresh NATS credential), its container
// from its pod's name, its data dir in the pod, NATS at the configured
// URL; the credential and the policy go to the topology's Secret; its
// size is the packing plan's largest container.
func (d *Daemon) kubePod(ctx context.Context, t *manager.Manager, c int) (kube.Pod, error) {
	s, err := d.containerSpec(ctx, t, c)
	if err != nil {
		return kube.Pod{}, err
	}
	args := append(slices.Clone(d.o.HostArgs),
		"--nats", d.o.Kubernetes.NATSURL, "--tenant", s.Tenant, "--topology", s.Topology,
		"--container-from-pod", "--data-dir", kube.MountData)
	pod := kube.Pod{Args: append(args, s.Args...), Env: map[string]string{}, SecretEnv: map[string]string{}, Resources: largest(t)}
	for _, kv := range s.Env {
		k, v, _ := strings.Cut(kv, "=")
		if k == settings.MachinePolicyEnv {
			pod.SecretEnv[k] = v // the paths and addresses the tenant may reach
		} else {
			pod.Env[k] = v
		}
	}
	if s.Creds != "" {
		pod.Creds = []byte(s.Creds)
		if s.Inbox != "" {
			pod.Env[natsauth.EnvInbox] = s.Inbox
		}
	}
	return pod, nil
}

// largest is the largest container of t's packing plan (zero when t's
// topology is not loaded yet: the configured defaults).
func largest(t *manager.Manager) packing.Resources {
	var r packing.Resources
	v := t.View()
	if v == nil || v.Top() == nil || v.Doc().Plan == nil {
		return r
	}
	_, pp, err := planner.PackPlan(v.Top(), v.Doc().Plan.Containers)
	if err != nil {
		return r
	}
	for _, c := range pp.Containers {
		r.CPU, r.RAM, r.Disk = max(r.CPU, c.Resources.CPU), max(r.RAM, c.Resources.RAM), max(r.Disk, c.Resources.Disk)
	}
	return r
}
