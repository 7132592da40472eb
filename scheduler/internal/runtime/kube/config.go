package kube

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The scheduler a daemon runs its containers with: the deployment
// file's top-level scheduler: key.
const (
	SchedulerProcesses  = "processes"
	SchedulerKubernetes = "kubernetes"
)

// Config is the deployment file's kubernetes: section: where and how a
// daemon with scheduler: kubernetes runs its topologies' containers.
type Config struct {
	// Namespace holds the StatefulSets, Secrets and Pods (default: the
	// daemon's own pod's namespace in a cluster, else "default").
	Namespace string `yaml:"namespace"`
	// Image runs `ardea host` (ardea on its PATH); required.
	Image string `yaml:"image"`
	// ImagePullPolicy: Always, IfNotPresent or Never (default: the
	// cluster's).
	ImagePullPolicy string `yaml:"image_pull_policy"`
	// NATSURL is the NATS URL the hosts connect to: a Service in front of
	// the daemons' NATS client ports (nats://ardea.NS.svc:4222);
	// required in a deployment file. Empty in Options: the daemon's own
	// client URL (a test whose pods share the daemon's network).
	NATSURL string `yaml:"nats_url"`
	// Kubeconfig is a kubeconfig file; empty: the in-cluster config (the
	// daemon's pod's service account).
	Kubeconfig string `yaml:"kubeconfig"`
	// ServiceAccount runs the host pods (default: the namespace's
	// default); its token is never mounted.
	ServiceAccount string `yaml:"service_account"`
	// Resources are each host pod's CPU and memory when the packing plan
	// gives none (default 500m and 512Mi).
	Resources struct {
		CPU    string `yaml:"cpu"`
		Memory string `yaml:"memory"`
	} `yaml:"resources"`
	// NodeSelector places the host pods.
	NodeSelector map[string]string `yaml:"node_selector"`
	// CompileCache is a directory of each node (a hostPath volume, made
	// if missing) that the node's host pods share as their data dir: the
	// modules' compiled code, compiled once per node and module version
	// rather than in every new pod (as the daemon's own processes share
	// its data dir). Empty: an emptyDir per pod. hostPath volumes need
	// a namespace whose Pod Security level allows them (privileged).
	CompileCache string `yaml:"compile_cache"`

	// What the fields say, parsed (Check).
	cpu, memory resource.Quantity
}

// configFields lists the section's fields, for the message of one it
// does not know.
const configFields = "namespace, image, image_pull_policy, nats_url, kubeconfig, service_account, resources.cpu, resources.memory, node_selector, compile_cache"

// ParseSection reads the deployment file's scheduler: value (sched) and
// kubernetes: section (n), either nil when the file has none: nil for
// scheduler: processes (the default). Errors name the file and the
// field.
func ParseSection(file string, sched, n *yaml.Node) (*Config, error) {
	kind := SchedulerProcesses
	if sched != nil {
		if sched.Kind != yaml.ScalarNode || (sched.Value != SchedulerProcesses && sched.Value != SchedulerKubernetes) {
			return nil, fmt.Errorf("%s: line %d: scheduler: want %s or %s, got %s", file, sched.Line, SchedulerProcesses, SchedulerKubernetes, describe(sched))
		}
		kind = sched.Value
	}
	if kind == SchedulerProcesses {
		if n != nil {
			return nil, fmt.Errorf("%s: line %d: kubernetes: set, but the scheduler is %s (add scheduler: kubernetes)", file, n.Line, kind)
		}
		return nil, nil
	}
	if n == nil {
		return nil, fmt.Errorf("%s: scheduler: kubernetes needs a kubernetes: section (at least image and nats_url)", file)
	}
	var c Config
	var buf bytes.Buffer
	if err := yaml.NewEncoder(&buf).Encode(n); err != nil {
		return nil, fmt.Errorf("%s: kubernetes: %w", file, err)
	}
	dec := yaml.NewDecoder(&buf)
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: kubernetes (from line %d): %w (fields: %s)", file, n.Line, err, configFields)
	}
	if c.NATSURL == "" {
		return nil, fmt.Errorf("%s: kubernetes.nats_url: required: the NATS URL the host pods reach the daemons at (a Service, e.g. nats://ardea.streams.svc.cluster.local:4222)", file)
	}
	if err := c.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &c, nil
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%q", n.Value)
}

// Check checks the fields and fills the defaults; errors name the field.
func (c *Config) Check() error {
	if c.Image == "" {
		return errors.New("kubernetes.image: required: the image that runs ardea host (ardea on its PATH)")
	}
	if c.Namespace != "" {
		if errs := validation.IsDNS1123Label(c.Namespace); len(errs) > 0 {
			return fmt.Errorf("kubernetes.namespace %q: %s", c.Namespace, strings.Join(errs, "; "))
		}
	}
	switch corev1.PullPolicy(c.ImagePullPolicy) {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		return fmt.Errorf("kubernetes.image_pull_policy %q: want Always, IfNotPresent or Never", c.ImagePullPolicy)
	}
	if c.NATSURL != "" && !strings.HasPrefix(c.NATSURL, "nats://") && !strings.HasPrefix(c.NATSURL, "tls://") {
		return fmt.Errorf("kubernetes.nats_url %q: want nats://HOST:PORT (or tls://)", c.NATSURL)
	}
	if c.ServiceAccount != "" {
		if errs := validation.IsDNS1123Subdomain(c.ServiceAccount); len(errs) > 0 {
			return fmt.Errorf("kubernetes.service_account %q: %s", c.ServiceAccount, strings.Join(errs, "; "))
		}
	}
	var err error
	if c.cpu, err = quantity("kubernetes.resources.cpu", c.Resources.CPU, "500m"); err != nil {
		return err
	}
	if c.memory, err = quantity("kubernetes.resources.memory", c.Resources.Memory, "512Mi"); err != nil {
		return err
	}
	if c.CompileCache != "" && !strings.HasPrefix(c.CompileCache, "/") {
		return fmt.Errorf("kubernetes.compile_cache %q: want an absolute path on the nodes", c.CompileCache)
	}
	for k, v := range c.NodeSelector {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("kubernetes.node_selector key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("kubernetes.node_selector.%s %q: %s", k, v, strings.Join(errs, "; "))
		}
	}
	return nil
}

func quantity(field, s, def string) (resource.Quantity, error) {
	if s == "" {
		s = def
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() <= 0 {
		return q, fmt.Errorf("%s %q: want a positive Kubernetes quantity (e.g. 500m CPU, 512Mi memory)", field, s)
	}
	return q, nil
}

// inClusterNamespace is the file a pod's service account mounts its
// namespace in.
const inClusterNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Client makes the client and the namespace Config says: its kubeconfig,
// else the in-cluster configuration.
func (c *Config) Client() (kubernetes.Interface, string, error) {
	var rc *rest.Config
	var err error
	ns := c.Namespace
	if c.Kubeconfig != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
		if err != nil {
			return nil, "", fmt.Errorf("kubernetes.kubeconfig %s: %w", c.Kubeconfig, err)
		}
	} else {
		rc, err = rest.InClusterConfig()
		if err != nil {
			return nil, "", fmt.Errorf("kubernetes: no kubernetes.kubeconfig, and not in a cluster: %w", err)
		}
		if ns == "" {
			if b, err := os.ReadFile(inClusterNamespace); err == nil {
				ns = strings.TrimSpace(string(b))
			}
		}
	}
	if ns == "" {
		ns = corev1.NamespaceDefault
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, "", fmt.Errorf("kubernetes: client: %w", err)
	}
	return cs, ns, nil
}
