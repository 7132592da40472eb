package kube_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ardea-dev/ardea/internal/testutil"
	ktest "github.com/ardea-dev/ardea/internal/testutil/kube"
	"github.com/ardea-dev/ardea/scheduler/container/process"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/logtail"
	"github.com/ardea-dev/ardea/scheduler/internal/runtime"
	"github.com/ardea-dev/ardea/scheduler/internal/runtime/kube"
	"github.com/ardea-dev/ardea/scheduler/packing"
)

// top is a topology for the runtime.
type top struct{ tenant, name string }

func (t top) Tenant() string           { return t.tenant }
func (t top) Name() string             { return t.name }
func (t top) Context() context.Context { return context.Background() }

// restricted is a client of a user bound in ns only to a Role of
// kube.Rules(), what the runtime says it needs (the chart's Role grants
// them: deploy/helm's test).
func restricted(t *testing.T, c *ktest.Cluster, ns string) kubernetes.Interface {
	t.Helper()
	ctx := t.Context()
	if _, err := c.Client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "ardea"}, Rules: kube.Rules()}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ardea"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "ardea"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "ardea-daemon"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := c.UserConfig("ardea-daemon")
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	testutil.Eventually(t, "the role to bind", func() error {
		_, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err
	})
	if _, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("the daemon's identity lists another namespace's pods: %v, want Forbidden", err)
	}
	return cs
}

// hostScript stands for `ardea host` in the pods (the image runs
// /bin/sh): it prints its container, from its pod's name as the host
// reads it, and the mode and content of its credential file, and runs
// until its pod is deleted.
const hostScript = `c=$(( ${ARDEA_POD_NAME##*-} + 1 )); f="$ARDEA_NATS_CREDS_DIR/container-$c"; ` +
	`s=no; test -e "$ARDEA_NATS_CREDS_DIR/started-$c" && s=yes; ` +
	`echo "container $c mode $(stat -L -c %a "$f") creds $(cat "$f") policy $ARDEA_MACHINE_POLICY x $X started $s"; exec sleep 3600`

// TestRuntime runs a topology's containers as a StatefulSet's pods on the
// real API server and controllers, under kube.Rules() only: the
// objects read back, scaling, a restart, a pod deleted under it, removal
// and Close.
func TestRuntime(t *testing.T) {
	c := ktest.Start(t, ktest.Options{})
	ctx := t.Context()
	const ns = "streams"
	if err := c.EnsureNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	client := restricted(t, c, ns)
	kls := []*ktest.Kubelet{}
	for _, n := range []string{"node-a", "node-b"} {
		kls = append(kls, c.RunKubelet(ctx, t, n, ktest.KubeletOptions{Images: map[string]string{"ardea:test": "/bin/sh"}}))
	}
	cfg := kube.Config{Image: "ardea:test", ImagePullPolicy: "Never", NATSURL: "nats://ardea.streams.svc:4222"}
	var mu sync.Mutex
	var events []launcher.ProcessStatus
	rt, err := kube.New(ctx, kube.Options[top]{Config: cfg, Client: client, Namespace: ns,
		Pod: func(_ context.Context, tt top, n int) (kube.Pod, error) {
			if tt.name == "crashy" {
				return kube.Pod{Args: []string{"-c", "echo boom >&2; exit 3"}}, nil
			}
			return kube.Pod{Args: []string{"-c", hostScript}, Env: map[string]string{"X": "y"},
				SecretEnv: map[string]string{"ARDEA_MACHINE_POLICY": `{"confined":true}`},
				Creds:     fmt.Appendf(nil, "creds-%d", n),
				Resources: packing.Resources{CPU: 1.5, RAM: 256 << 20}}, nil
		},
		OnChange:    func(ps launcher.ProcessStatus) { mu.Lock(); events = append(events, ps); mu.Unlock() },
		MaxRestarts: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = rt.Close(context.Background())
		}
	})
	wc := top{"acme", "Word_Count"}
	id := func(n int) string { return runtime.ID(wc.tenant, wc.name, n) }
	name := kube.Name(wc.tenant, wc.name)
	if !strings.HasPrefix(name, "ardea-acme-word-count-") || len(name) > 52 {
		t.Fatalf("statefulset name %q", name)
	}

	if err := rt.StartContainer(ctx, wc, 1); err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, wc, 1); !errors.Is(err, launcher.ErrDuplicate) {
		t.Fatalf("container 1 started twice: %v, want ErrDuplicate", err)
	}
	sts, err := c.Client.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *sts.Spec.Replicas != 1 || sts.Spec.UpdateStrategy.Type != "OnDelete" || sts.Labels[kube.LabelTenant] != "acme" || sts.Labels[kube.LabelTopology] != "Word_Count" ||
		sts.Annotations[kube.AnnotationTopology] != "Word_Count" {
		t.Errorf("statefulset: replicas %d, labels %v, annotations %v", *sts.Spec.Replicas, sts.Labels, sts.Annotations)
	}
	ps := sts.Spec.Template.Spec
	hc := ps.Containers[0]
	if hc.Image != "ardea:test" || !slices.Equal(hc.Command, []string{"ardea"}) || !slices.Equal(hc.Args, []string{"-c", hostScript}) {
		t.Errorf("container: image %s, command %q, args %q", hc.Image, hc.Command, hc.Args)
	}
	want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("256Mi")}
	for _, l := range []corev1.ResourceList{hc.Resources.Requests, hc.Resources.Limits} {
		if !l.Cpu().Equal(want[corev1.ResourceCPU]) || !l.Memory().Equal(want[corev1.ResourceMemory]) {
			t.Errorf("resources %v, want %v requested and limited", hc.Resources, want)
		}
	}
	if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
		t.Error("the host pods mount a service account token")
	}
	for _, e := range hc.Env {
		if e.Name == "ARDEA_MACHINE_POLICY" && (e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
			t.Errorf("the machine policy is not from the secret: %+v", e)
		}
		if e.Name == process.PodNameEnv && (e.ValueFrom == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name") {
			t.Errorf("%s: %+v", e.Name, e)
		}
	}
	for _, a := range append(slices.Clone(hc.Args), hc.Command...) {
		if strings.Contains(a, "creds-") {
			t.Errorf("a credential on the command line: %q", a)
		}
	}
	if v := ps.Volumes[0].Secret; v == nil || v.SecretName != name || *v.DefaultMode != 0o400 {
		t.Errorf("credentials volume %+v", ps.Volumes[0])
	}
	secret := func() map[string][]byte {
		s, err := c.Client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s.Data
	}
	if d := secret(); string(d["container-1"]) != "creds-1" || string(d["ARDEA_MACHINE_POLICY"]) != `{"confined":true}` || len(d) > 3 {
		t.Errorf("secret %q", d)
	}

	// Container 2 scales the StatefulSet up, with its credential.
	if err := rt.StartContainer(ctx, wc, 2); err != nil {
		t.Fatal(err)
	}
	if string(secret()["container-2"]) != "creds-2" {
		t.Error("no credential for container 2")
	}
	running := func(n int) func() (bool, string) {
		return func() (bool, string) {
			st, ok := rt.Status(id(n))
			return ok && st.State == launcher.StateRunning, fmt.Sprintf("%+v", st)
		}
	}
	logs := func(n int) string {
		for _, k := range kls {
			if s, err := k.Logs(ns, kube.PodName(name, n), "host"); err == nil && s != "" {
				return s
			}
		}
		return ""
	}
	for n := 1; n <= 2; n++ {
		testutil.Eventually(t, fmt.Sprintf("container %d running", n), running(n))
		want := fmt.Sprintf(`container %d mode 400 creds creds-%d policy {"confined":true} x y started no`, n, n)
		testutil.Eventually(t, fmt.Sprintf("container %d's output", n), func() (bool, string) {
			s := logs(n)
			return strings.Contains(s, want), s
		})
		// The same through the API server (pods/log, its kubelet's), as
		// `ardea logs` reads it, under kube.Rules(): the pod's one line;
		// none of a component (not a host's JSON line).
		if got, err := rt.Logs(ctx, id(n), 5, logtail.Filter{}); err != nil || !slices.Equal(got, []string{want}) {
			t.Errorf("container %d's log through the API server: %q %v, want %q", n, got, err, want)
		}
		if got, err := rt.Logs(ctx, id(n), 5, logtail.Filter{Component: "count"}); err != nil || len(got) != 0 {
			t.Errorf("container %d's log of component count: %q %v, want none", n, got, err)
		}
	}
	if _, err := rt.Logs(ctx, id(9), 5, logtail.Filter{}); !errors.Is(err, launcher.ErrUnknown) {
		t.Errorf("the log of a container not started: %v, want ErrUnknown", err)
	}
	if l := rt.List(); len(l) != 2 || l[0].ID != id(1) || l[1].ID != id(2) {
		t.Errorf("list %+v", l)
	}

	// Restart replaces the pod: the controller makes it again.
	pod := func(n int) *corev1.Pod {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, kube.PodName(name, n), metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return p
	}
	uid := pod(2).UID
	testutil.Eventually(t, "container 2's first run recorded in the secret", func() bool { return len(secret()["started-2"]) > 0 })
	if err := rt.Restart(ctx, id(2)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "container 2 in a new pod, which knows it is a restart", func() (bool, string) {
		p := pod(2)
		st, _ := rt.Status(id(2))
		out := logs(2)
		return p != nil && p.UID != uid && st.State == launcher.StateRunning && st.Restarts == 1 && strings.Contains(out, "started yes"),
			fmt.Sprintf("%+v: %q", st, out)
	})
	// A pod deleted by someone else is an exit of its container.
	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, kube.PodName(name, 1), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "container 1's exit reported", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(events) == 1 && events[0].ID == id(1) && events[0].State == launcher.StateBackoff, fmt.Sprintf("%+v", events)
	})
	testutil.Eventually(t, "container 1 running again", running(1))
	// A host that dies in its pod is restarted there by the kubelet: an
	// exit of its container too.
	var pid int
	testutil.Eventually(t, "container 1's process", func() bool {
		for _, k := range kls {
			if p := k.PID(ns, kube.PodName(name, 1), "host"); p > 0 {
				pid = p
			}
		}
		return pid > 0
	})
	crashed, _ := rt.Status(id(1))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "container 1's crash reported, and its restart", func() (bool, string) {
		mu.Lock()
		n := len(events)
		last := events[n-1]
		mu.Unlock()
		st, _ := rt.Status(id(1))
		return n == 2 && last.ID == id(1) && last.State == launcher.StateBackoff && strings.Contains(last.LastExit, "137") &&
			st.State == launcher.StateRunning && st.Restarts == crashed.Restarts+1, fmt.Sprintf("events %d, last %+v, status %+v", n, last, st)
	})

	// Remove scales down; the last removal deletes everything.
	if err := rt.Remove(ctx, id(2)); err != nil {
		t.Fatal(err)
	}
	if s, err := c.Client.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{}); err != nil || *s.Spec.Replicas != 1 {
		t.Fatalf("after removing container 2: %v", err)
	}
	testutil.Eventually(t, "container 2's pod gone", func() bool { return pod(2) == nil })
	if _, ok := rt.Status(id(2)); ok {
		t.Error("a removed container has a status")
	}
	if err := rt.Remove(ctx, id(1)); err != nil {
		t.Fatal(err)
	}
	gone(t, c, ns, name)

	// A host that exits at once, again and again, is given up on after
	// MaxRestarts restarts, as the launcher does.
	crashy := top{"default", "crashy"}
	crashyID := runtime.ID(crashy.tenant, crashy.name, 1)
	if err := rt.StartContainer(ctx, crashy, 1); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "crashy FAILED", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		var states []launcher.State
		for _, e := range events {
			if e.ID == crashyID {
				states = append(states, e.State)
			}
		}
		st, _ := rt.Status(crashyID)
		return slices.Equal(states, []launcher.State{launcher.StateBackoff, launcher.StateBackoff, launcher.StateFailed}) && st.State == launcher.StateFailed,
			fmt.Sprintf("events %v, status %+v", states, st)
	})
	if err := rt.Remove(ctx, crashyID); err != nil {
		t.Fatal(err)
	}
	gone(t, c, ns, kube.Name(crashy.tenant, crashy.name))

	// Killed and started again at once: the old pod, going away, is not
	// the new StatefulSet's (no exit reported, no status from it).
	again := top{"default", "again"}
	againID := runtime.ID(again.tenant, again.name, 1)
	if err := rt.StartContainer(ctx, again, 1); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "again running", func() bool { st, _ := rt.Status(againID); return st.State == launcher.StateRunning })
	oldPod, err := c.Client.CoreV1().Pods(ns).Get(ctx, kube.PodName(kube.Name(again.tenant, again.name), 1), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Remove(ctx, againID); err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, again, 1); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "again running in a new pod", func() (bool, string) {
		st, _ := rt.Status(againID)
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, oldPod.Name, metav1.GetOptions{})
		return err == nil && p.UID != oldPod.UID && st.State == launcher.StateRunning && st.Restarts == 0, fmt.Sprintf("%+v", st)
	})
	if err := rt.Remove(ctx, againID); err != nil {
		t.Fatal(err)
	}
	gone(t, c, ns, kube.Name(again.tenant, again.name))

	// A runtime that finds the StatefulSet made (the daemon that took the
	// topology of a lost one over) adopts it: each container's pod starts
	// again, with its new credential.
	adopt := top{"default", "adopted"}
	aname := kube.Name(adopt.tenant, adopt.name)
	for n := 1; n <= 2; n++ {
		if err := rt.StartContainer(ctx, adopt, n); err != nil {
			t.Fatal(err)
		}
	}
	apod := func(n int) *corev1.Pod {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, kube.PodName(aname, n), metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return p
	}
	testutil.Eventually(t, "both pods of the topology to adopt", func() bool { return apod(1) != nil && apod(2) != nil })
	before := []*corev1.Pod{apod(1), apod(2)}
	rt2, err := kube.New(ctx, kube.Options[top]{Config: cfg, Client: client, Namespace: ns,
		Pod: func(_ context.Context, _ top, n int) (kube.Pod, error) {
			return kube.Pod{Args: []string{"-c", hostScript}, Creds: fmt.Appendf(nil, "new-creds-%d", n)}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 2; n++ {
		if err := rt2.StartContainer(ctx, adopt, n); err != nil {
			t.Fatal(err)
		}
	}
	for n := 1; n <= 2; n++ {
		testutil.Eventually(t, fmt.Sprintf("adopted container %d in a new pod with its new credential", n), func() (bool, string) {
			p := apod(n)
			st, _ := rt2.Status(runtime.ID(adopt.tenant, adopt.name, n))
			var out string
			if p != nil {
				for _, k := range kls {
					if s, err := k.Logs(ns, p.Name, "host"); err == nil && s != "" {
						out = s
					}
				}
			}
			return p != nil && p.UID != before[n-1].UID && st.State == launcher.StateRunning && strings.Contains(out, fmt.Sprintf("creds new-creds-%d", n)),
				fmt.Sprintf("%+v: %q", st, out)
		})
	}
	if err := rt2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	gone(t, c, ns, aname)

	// Close deletes what runs.
	other := top{"default", "wc2"}
	if err := rt.StartContainer(ctx, other, 1); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "wc2 running", func() bool {
		st, ok := rt.Status(runtime.ID("default", "wc2", 1))
		return ok && st.State == launcher.StateRunning
	})
	closed = true
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	gone(t, c, ns, kube.Name("default", "wc2"))
	if err := rt.StartContainer(ctx, other, 1); !errors.Is(err, launcher.ErrClosed) {
		t.Errorf("start after close: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	events = slices.DeleteFunc(events, func(ps launcher.ProcessStatus) bool {
		return strings.HasPrefix(ps.ID, runtime.Prefix(adopt.tenant, adopt.name)) || // the adopted pods, replaced under rt
			ps.ID == crashyID
	})
	if len(events) != 2 {
		t.Errorf("events %+v: want only container 1's exit and crash (a restart, a removal, a kill of the topology are the runtime's own)", events)
	}
}

// gone waits until the StatefulSet and Secret name and their pods are
// gone.
func gone(t *testing.T, c *ktest.Cluster, ns, name string) {
	t.Helper()
	ctx := t.Context()
	testutil.Eventually(t, name+"'s objects deleted", func() (bool, string) {
		_, err1 := c.Client.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		_, err2 := c.Client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.Selector()})
		if err != nil {
			return false, err.Error()
		}
		n := 0
		for _, p := range pods.Items {
			if strings.HasPrefix(p.Name, name+"-") {
				n++
			}
		}
		return apierrors.IsNotFound(err1) && apierrors.IsNotFound(err2) && n == 0, fmt.Sprintf("statefulset %v, secret %v, %d pods", err1, err2, n)
	})
}
