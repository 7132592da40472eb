package kube

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// launch is how a container runs as a local process.
type launch struct {
	path string   // the executable
	args []string // after argv[0]
	env  []string
	dir  string
}

// launchSpec turns a container into a local process: its executable
// (KubeletOptions.Images, or the command as a local program), its
// environment as Kubernetes builds it (envFrom, then env, $(VAR)
// references expanded), and every path under a volume's mountPath
// rewritten to the volume's local directory (see mounts.rewrite).
func (w *podWorker) launchSpec(c *corev1.Container) (*launch, error) {
	home := filepath.Join(w.dir, "containers", c.Name)
	tmp := filepath.Join(w.dir, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	env := newEnv()
	hostname := w.pod.Name
	if w.pod.Spec.Hostname != "" {
		hostname = w.pod.Spec.Hostname
	}
	env.set("PATH", os.Getenv("PATH"))
	env.set("HOME", home)
	env.set("TMPDIR", tmp)
	env.set("HOSTNAME", hostname)
	env.set("KUBERNETES_SERVICE_HOST", podIP)
	env.set("KUBERNETES_SERVICE_PORT", w.k.c.apiserverPort())
	for _, kv := range w.k.opts.Env {
		k, v, _ := strings.Cut(kv, "=")
		env.set(k, v)
	}
	m, err := w.mounts(c)
	if err != nil {
		return nil, err
	}
	if err := w.containerEnv(c, env, m); err != nil {
		return nil, err
	}
	expand := func(s string) string { return expandVars(s, env.get) }
	var argv []string
	for _, s := range c.Command {
		argv = append(argv, m.rewriteArg(expand(s)))
	}
	args := make([]string, 0, len(c.Args))
	for _, s := range c.Args {
		args = append(args, m.rewriteArg(expand(s)))
	}
	l := &launch{dir: home}
	if exe, ok := w.k.opts.Images[c.Image]; ok {
		l.path = exe
		if len(argv) > 0 {
			argv = argv[1:]
		}
	} else {
		if len(argv) == 0 {
			return nil, fmt.Errorf("image %q is not in KubeletOptions.Images and the container has no command to run instead", c.Image)
		}
		exe, err := exec.LookPath(argv[0])
		if err != nil {
			return nil, startError{reason: "RunContainerError", err: err}
		}
		l.path, argv = exe, argv[1:]
	}
	l.args = append(argv, args...)
	if c.WorkingDir != "" {
		if d := m.rewrite(c.WorkingDir); d != c.WorkingDir {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, err
			}
			l.dir = d
		}
	}
	for _, k := range env.order {
		l.env = append(l.env, k+"="+env.vals[k])
	}
	return l, nil
}

// env is an environment in the order its variables were first set (the
// order Kubernetes gives them; a later value replaces an earlier one).
type env struct {
	order []string
	vals  map[string]string
}

func newEnv() *env { return &env{vals: map[string]string{}} }

func (e *env) set(k, v string) {
	if _, ok := e.vals[k]; !ok {
		e.order = append(e.order, k)
	}
	e.vals[k] = v
}

func (e *env) get(k string) (string, bool) {
	v, ok := e.vals[k]
	return v, ok
}

// containerEnv adds the container's envFrom and env to e, resolving
// each reference to a Secret, ConfigMap or the pod's own fields, each
// value rewritten by m (the base environment is local already). A
// missing object or key that is not optional is an error: the
// container waits (CreateContainerConfigError) and is tried again.
func (w *podWorker) containerEnv(c *corev1.Container, e *env, m mounts) error {
	ctx := w.k.ctx
	for _, from := range c.EnvFrom {
		var data map[string]string
		switch {
		case from.ConfigMapRef != nil:
			cm, err := w.configMap(ctx, from.ConfigMapRef.Name, optional(from.ConfigMapRef.Optional))
			if err != nil {
				return err
			}
			data = cm
		case from.SecretRef != nil:
			s, err := w.secret(ctx, from.SecretRef.Name, optional(from.SecretRef.Optional))
			if err != nil {
				return err
			}
			data = make(map[string]string, len(s))
			for k, v := range s {
				data[k] = string(v)
			}
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if len(validation.IsEnvVarName(from.Prefix+k)) == 0 {
				e.set(from.Prefix+k, m.rewrite(data[k]))
			}
		}
	}
	for _, v := range c.Env {
		if v.ValueFrom == nil {
			e.set(v.Name, m.rewrite(expandVars(v.Value, e.get)))
			continue
		}
		val, ok, err := w.valueFrom(ctx, v.ValueFrom)
		if err != nil {
			return fmt.Errorf("env %s: %w", v.Name, err)
		}
		if ok {
			e.set(v.Name, m.rewrite(val))
		}
	}
	return nil
}

// valueFrom resolves an env var's source; ok is false for an optional
// key that is missing (the variable is then not set).
func (w *podWorker) valueFrom(ctx context.Context, src *corev1.EnvVarSource) (string, bool, error) {
	switch {
	case src.FieldRef != nil:
		v, err := w.fieldValue(src.FieldRef.FieldPath)
		return v, err == nil, err
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := w.secret(ctx, ref.Name, optional(ref.Optional))
		if err != nil {
			return "", false, err
		}
		v, ok := s[ref.Key]
		if !ok && !optional(ref.Optional) {
			return "", false, fmt.Errorf("secret %s has no key %s", ref.Name, ref.Key)
		}
		return string(v), ok, nil
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := w.configMap(ctx, ref.Name, optional(ref.Optional))
		if err != nil {
			return "", false, err
		}
		v, ok := cm[ref.Key]
		if !ok && !optional(ref.Optional) {
			return "", false, fmt.Errorf("configmap %s has no key %s", ref.Name, ref.Key)
		}
		return v, ok, nil
	}
	return "", false, fmt.Errorf("the test kubelet resolves fieldRef, secretKeyRef and configMapKeyRef only")
}

// fieldValue is the downward API's value of a pod field. Addresses are
// the loopback one every pod shares.
func (w *podWorker) fieldValue(field string) (string, error) {
	p := w.pod
	if k, ok := strings.CutPrefix(field, "metadata.labels['"); ok {
		return p.Labels[strings.TrimSuffix(k, "']")], nil
	}
	if k, ok := strings.CutPrefix(field, "metadata.annotations['"); ok {
		return p.Annotations[strings.TrimSuffix(k, "']")], nil
	}
	switch field {
	case "metadata.name":
		return p.Name, nil
	case "metadata.namespace":
		return p.Namespace, nil
	case "metadata.uid":
		return string(p.UID), nil
	case "spec.nodeName":
		return p.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs", "status.hostIP", "status.hostIPs":
		return podIP, nil
	}
	return "", fmt.Errorf("field %s: not one the test kubelet resolves", field)
}

func optional(b *bool) bool { return b != nil && *b }

// secret is a Secret of the pod's namespace; a missing optional one is
// empty.
func (w *podWorker) secret(ctx context.Context, name string, opt bool) (map[string][]byte, error) {
	s, err := w.k.c.Client.CoreV1().Secrets(w.pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && opt {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("secret %s: %w", name, err)
	}
	return s.Data, nil
}

// configMap is a ConfigMap's data and binary data of the pod's
// namespace; a missing optional one is empty.
func (w *podWorker) configMap(ctx context.Context, name string, opt bool) (map[string]string, error) {
	cm, err := w.k.c.Client.CoreV1().ConfigMaps(w.pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && opt {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("configmap %s: %w", name, err)
	}
	data := make(map[string]string, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = v
	}
	for k, v := range cm.BinaryData {
		data[k] = string(v)
	}
	return data, nil
}

// expandVars expands Kubernetes' $(VAR) references with lookup: $$ is a
// literal $, and a reference to an unknown variable stays as written
// (as the kubelet leaves it).
func expandVars(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			if end := strings.IndexByte(s[i+2:], ')'); end >= 0 {
				name := s[i+2 : i+2+end]
				if v, ok := lookup(name); ok {
					b.WriteString(v)
				} else {
					b.WriteString(s[i : i+3+end])
				}
				i += 2 + end
				continue
			}
		}
		b.WriteByte('$')
	}
	return b.String()
}

// mounts maps the container's mount paths to local directories.
type mounts []mount

type mount struct{ path, local string }

// mounts resolves the container's volumeMounts (subPath included) to
// the pod's materialised volumes, longest mount path first so that a
// mount inside another wins.
func (w *podWorker) mounts(c *corev1.Container) (mounts, error) {
	var m mounts
	for _, vm := range c.VolumeMounts {
		local, ok := w.volumes[vm.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMount %s: the pod has no volume of that name", vm.Name)
		}
		if vm.SubPath != "" {
			local = filepath.Join(local, filepath.FromSlash(vm.SubPath))
			if err := os.MkdirAll(local, 0o755); err != nil {
				return nil, err
			}
		}
		m = append(m, mount{path: path.Clean(vm.MountPath), local: local})
	}
	sort.Slice(m, func(i, j int) bool { return len(m[i].path) > len(m[j].path) })
	return m, nil
}

// rewrite maps a path the container would see to the local one: a
// value that is a mount path, or starts with one and a slash, has that
// prefix replaced by the volume's local directory. A process cannot see
// its pod's mount paths (there is no container filesystem), so this is
// how a path given to it reaches the volume. Anything else is returned
// unchanged.
func (m mounts) rewrite(s string) string {
	for _, mt := range m {
		if mt.path == "/" {
			continue // the image's root: nothing local stands for it
		}
		if s == mt.path {
			return mt.local
		}
		if rest, ok := strings.CutPrefix(s, mt.path+"/"); ok {
			return filepath.Join(mt.local, rest)
		}
	}
	return s
}

// rewriteArg is rewrite for a command-line argument, which may also be
// a flag with its value: in -f=PATH or --flag=PATH the PATH is
// rewritten.
func (m mounts) rewriteArg(s string) string {
	if r := m.rewrite(s); r != s {
		return r
	}
	if strings.HasPrefix(s, "-") {
		if flag, val, ok := strings.Cut(s, "="); ok {
			return flag + "=" + m.rewrite(val)
		}
	}
	return s
}

// apiserverPort is the API server's port, for KUBERNETES_SERVICE_PORT.
func (c *Cluster) apiserverPort() string {
	_, port, _ := strings.Cut(strings.TrimPrefix(c.Config.Host, "https://"), ":")
	if _, err := strconv.Atoi(port); err != nil {
		return ""
	}
	return port
}
