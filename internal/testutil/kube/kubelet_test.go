package kube

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// TestPodLifecycle is the test kubelet's part alone, on bare Pods the
// binder places: each restart policy's outcome and exit codes, an init
// container run (and restarted) before the app, a crash restarted with
// its count, a ConfigMap's key as env and as a file, an
// emptyDir whose mount path reaches the process rewritten, and a
// deletion without grace.
func TestPodLifecycle(t *testing.T) {
	t.Parallel() // each test has a cluster of its own
	c := Start(t, Options{})
	bin := podprog(t)
	ctx := t.Context()
	k := c.RunKubelet(ctx, t, "node-1", KubeletOptions{Images: map[string]string{"podprog:test": bin}})
	const ns = metav1.NamespaceDefault
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
		Data:       map[string]string{"greeting": "hello", "a.txt": "from the configmap"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	pod := func(name string, policy corev1.RestartPolicy, args ...string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{
				RestartPolicy: policy,
				Containers: []corev1.Container{{
					Name:    "main",
					Image:   "podprog:test",
					Command: []string{"/podprog"},
					Args:    append([]string{"-out", out}, args...),
					Env:     podEnv(),
				}},
			},
		}
	}
	create := func(p *corev1.Pod) {
		t.Helper()
		if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Never: the exit code is the pod's end.
	create(pod("never", corev1.RestartPolicyNever, "-exit", "3"))
	// OnFailure: the first run fails, the second succeeds.
	create(pod("onfailure", corev1.RestartPolicyOnFailure, "-fail-once", filepath.Join(out, "marker"), "-exit", "0"))
	// Always, with a ConfigMap and an emptyDir.
	always := pod("always", corev1.RestartPolicyAlways,
		"-env", "GREETING", "-env", "DATA_DIR", "-env", "HOME",
		"-read=/etc/cfg/a.txt", "-read", "$(DATA_DIR)/none")
	always.Spec.Containers[0].Env = append(always.Spec.Containers[0].Env,
		corev1.EnvVar{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "greeting",
		}}},
		corev1.EnvVar{Name: "DATA_DIR", Value: "/data/sub"},
	)
	always.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
		{Name: "cfg", MountPath: "/etc/cfg"},
		{Name: "data", MountPath: "/data"},
	}
	always.Spec.Volumes = []corev1.Volume{
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"},
			Items:                []corev1.KeyToPath{{Key: "a.txt", Path: "a.txt"}},
		}}},
		{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	create(always)
	// An init container that fails once (restarted, as the pod's policy
	// is Always) and then succeeds, before the app container starts.
	withInit := pod("init", corev1.RestartPolicyAlways)
	withInit.Spec.InitContainers = []corev1.Container{{
		Name:    "first",
		Image:   "podprog:test",
		Command: []string{"/podprog"},
		Args:    []string{"-out", out, "-fail-once", filepath.Join(out, "init-marker"), "-exit", "0"},
		Env:     []corev1.EnvVar{{Name: "POD_NAME", Value: "init-first"}},
	}}
	create(withInit)
	// An init container that fails under restartPolicy Never: the pod
	// fails, its app container never starts.
	initFails := pod("init-fails", corev1.RestartPolicyNever)
	initFails.Spec.InitContainers = []corev1.Container{{
		Name: "first", Image: "podprog:test", Args: []string{"-out", out, "-exit", "4"},
		Env: []corev1.EnvVar{{Name: "POD_NAME", Value: "init-fails-first"}},
	}}
	create(initFails)

	never := awaitPod(t, c, ns, "never", "failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if cs := never.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Terminated == nil ||
		cs[0].State.Terminated.ExitCode != 3 || cs[0].RestartCount != 0 || cs[0].Ready {
		t.Errorf("never: container statuses %+v", cs)
	}
	onf := awaitPod(t, c, ns, "onfailure", "succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	if cs := onf.Status.ContainerStatuses; len(cs) != 1 || cs[0].RestartCount != 1 ||
		cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 0 ||
		cs[0].LastTerminationState.Terminated == nil || cs[0].LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("onfailure: container statuses %+v", cs)
	}
	if n := len(starts(t, out, "onfailure")); n != 2 {
		t.Errorf("onfailure started %d times, want 2", n)
	}

	fp := awaitPod(t, c, ns, "init-fails", "failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if ics := fp.Status.InitContainerStatuses; len(ics) != 1 || ics[0].State.Terminated == nil || ics[0].State.Terminated.ExitCode != 4 {
		t.Errorf("init-fails: init container statuses %+v", ics)
	}
	if cs := fp.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Waiting == nil || len(starts(t, out, "init-fails")) != 0 {
		t.Errorf("init-fails: the app container ran: %+v", cs)
	}
	ip := awaitPod(t, c, ns, "init", "running", podReady)
	if ics := ip.Status.InitContainerStatuses; len(ics) != 1 || ics[0].RestartCount != 1 ||
		ics[0].State.Terminated == nil || ics[0].State.Terminated.ExitCode != 0 || ics[0].Ready {
		t.Errorf("init: init container statuses %+v", ics)
	}
	firsts, mains := starts(t, out, "init-first"), awaitStarts(t, out, "init", 1)
	if len(firsts) != 2 || len(mains) != 1 || alive(firsts[1].Pid) {
		t.Errorf("init: the init container's starts %+v (want 2, ended), the app's %+v (want 1)", firsts, mains)
	}

	awaitPod(t, c, ns, "always", "running", podReady)
	recs := awaitStarts(t, out, "always", 1)
	if len(recs) != 1 {
		t.Fatalf("always started %d times, want 1", len(recs))
	}
	r := recs[0]
	dir := k.PodDir(ns, "always")
	data := filepath.Join(dir, "volumes", "data")
	if r.Env["GREETING"] != "hello" {
		t.Errorf("GREETING = %q, want the ConfigMap's hello", r.Env["GREETING"])
	}
	if r.Env["DATA_DIR"] != filepath.Join(data, "sub") {
		t.Errorf("DATA_DIR = %q, want /data rewritten to the emptyDir %s", r.Env["DATA_DIR"], data)
	}
	if !strings.HasPrefix(r.Env["HOME"], dir) {
		t.Errorf("HOME = %q, not in the pod's dir %s", r.Env["HOME"], dir)
	}
	cfgFile := filepath.Join(dir, "volumes", "cfg", "a.txt")
	if got := r.Files[cfgFile]; got != "from the configmap" {
		t.Errorf("the ConfigMap's file: %q (args %q)", got, r.Args)
	}
	if want := "-read=" + cfgFile; !strings.Contains(strings.Join(r.Args, " "), want) {
		t.Errorf("args %q: want %q (the flag's value rewritten)", r.Args, want)
	}
	if want := filepath.Join(data, "sub", "none"); !strings.Contains(strings.Join(r.Args, " "), want) {
		t.Errorf("args %q: want %q ($(DATA_DIR) expanded, then rewritten)", r.Args, want)
	}

	// A crash (SIGKILL) is restarted, counted, and its end reported.
	pid := k.PID(ns, "always", "main")
	if pid != r.Pid {
		t.Fatalf("kubelet's pid %d, the process's %d", pid, r.Pid)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p := awaitPod(t, c, ns, "always", "restarted", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return podReady(p) && len(cs) == 1 && cs[0].RestartCount == 1
	})
	if last := p.Status.ContainerStatuses[0].LastTerminationState.Terminated; last == nil || last.ExitCode != 128+9 {
		t.Errorf("always: last termination %+v, want exit code 137 (SIGKILL)", last)
	}
	recs = awaitStarts(t, out, "always", 2)
	if len(recs) != 2 || recs[1].Pid == pid || !alive(recs[1].Pid) {
		t.Fatalf("always's starts after the crash: %+v", recs)
	}
	if got := k.LogPath(ns, "always", "main"); filepath.Base(got) != "1.log" {
		t.Errorf("log of the second run: %s, want .../1.log", got)
	}

	// Deleted with no grace: killed at once (no SIGTERM recorded).
	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, "always", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "always's process killed", func() bool { return !alive(recs[1].Pid) })
	if s := stops(t, out, "always"); len(s) != 0 {
		t.Errorf("always recorded a SIGTERM (%v) on a deletion without grace", s)
	}
	if _, err := c.Client.CoreV1().Pods(ns).Get(ctx, "always", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("always after deletion: %v", err)
	}
}

// TestExpandVars: Kubernetes' $(VAR) references.
func TestExpandVars(t *testing.T) {
	vars := map[string]string{"A": "1", "DIR": "/data"}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	for in, want := range map[string]string{
		"plain":          "plain",
		"$(A)":           "1",
		"x$(A)y$(A)":     "x1y1",
		"$(DIR)/f":       "/data/f",
		"$$(A)":          "$(A)",
		"$(MISSING)":     "$(MISSING)",
		"$(unclosed":     "$(unclosed",
		"cost $5":        "cost $5",
		"trailing $":     "trailing $",
		"$$$(A)":         "$1",
		"--flag=$(DIR)x": "--flag=/datax",
	} {
		if got := expandVars(in, lookup); got != want {
			t.Errorf("expandVars(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRewrite: mount paths to local dirs, at path boundaries only, the
// longest mount first, and in a flag's value.
func TestRewrite(t *testing.T) {
	m := mounts{{path: "/etc/app/secret", local: "/l/secret"}, {path: "/etc/app", local: "/l/app"}, {path: "/", local: "/l/root"}}
	for in, want := range map[string]string{
		"/etc/app":              "/l/app",
		"/etc/app/":             "/l/app",
		"/etc/app/x.yaml":       "/l/app/x.yaml",
		"/etc/app/secret/token": "/l/secret/token",
		"/etc/application":      "/etc/application",
		"/etc/other":            "/etc/other",
		"--config=/etc/app/c":   "--config=/l/app/c",
		"-c=/etc/app/c":         "-c=/l/app/c",
		"--config=/etc/xyz":     "--config=/etc/xyz",
		"name=/etc/app/c":       "name=/etc/app/c",
		"relative/etc/app":      "relative/etc/app",
	} {
		if got := m.rewriteArg(in); got != want {
			t.Errorf("rewriteArg(%q) = %q, want %q", in, got, want)
		}
	}
	if got := m.rewrite("--config=/etc/app/c"); got != "--config=/etc/app/c" {
		t.Errorf("rewrite of an env value %q: only a value that is a path is rewritten", got)
	}
}
