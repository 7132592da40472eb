package kube

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ardea-dev/ardea/internal/testutil"
)

// TestBinderAndAccess: the binder places a Pod by its nodeSelector and
// tolerations, leaves another scheduler's Pod alone, and binds a Pod
// that fits no kubelet once one it fits runs; a Pod whose Secret is
// created late runs once it exists; a user of UserConfig is under RBAC.
func TestBinderAndAccess(t *testing.T) {
	t.Parallel() // each test has a cluster of its own
	c := Start(t, Options{})
	bin := podprog(t)
	ctx := t.Context()
	opts := func(labels map[string]string, taints ...corev1.Taint) KubeletOptions {
		return KubeletOptions{Images: map[string]string{"podprog:test": bin}, Labels: labels, Taints: taints}
	}
	c.RunKubelet(ctx, t, "plain", opts(nil))
	c.RunKubelet(ctx, t, "zone-a", opts(map[string]string{"zone": "a"}))
	taint := corev1.Taint{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}
	c.RunKubelet(ctx, t, "tainted", opts(nil, taint))

	const ns = metav1.NamespaceDefault
	out := t.TempDir()
	pod := func(name string, edit func(*corev1.PodSpec)) {
		t.Helper()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "main", Image: "podprog:test", Args: []string{"-out", out}, Env: podEnv(),
			}}},
		}
		edit(&p.Spec)
		if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Created first: once a later pod is bound, the binder has seen it.
	pod("custom", func(s *corev1.PodSpec) { s.SchedulerName = "ardea-scheduler" })
	pod("selected", func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"zone": "a"} })
	pod("tolerating", func(s *corev1.PodSpec) {
		s.NodeSelector = map[string]string{corev1.LabelHostname: "tainted"}
		s.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "x", Effect: corev1.TaintEffectNoSchedule}}
	})
	pod("intolerant", func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{corev1.LabelHostname: "tainted"} })
	pod("zone-b", func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"zone": "b"} })
	pod("late", func(s *corev1.PodSpec) {
		s.NodeSelector = map[string]string{corev1.LabelHostname: "plain"}
		s.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "late"}}}}
		s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "s", MountPath: "/etc/late"}}
		s.Containers[0].Args = append(s.Containers[0].Args, "-read", "/etc/late/k")
	})

	for name, node := range map[string]string{"selected": "zone-a", "tolerating": "tainted"} {
		p := awaitPod(t, c, ns, name, "running on "+node, podReady)
		if p.Spec.NodeName != node {
			t.Errorf("%s bound to %s, want %s", name, p.Spec.NodeName, node)
		}
	}
	for _, name := range []string{"custom", "intolerant", "zone-b"} {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "" {
			t.Errorf("%s bound to %s: it fits no kubelet, or is another scheduler's", name, p.Spec.NodeName)
		}
	}
	c.RunKubelet(ctx, t, "zone-b", opts(map[string]string{"zone": "b"}))
	if p := awaitPod(t, c, ns, "zone-b", "running", podReady); p.Spec.NodeName != "zone-b" {
		t.Errorf("zone-b bound to %s", p.Spec.NodeName)
	}

	// The Secret of "late" is missing: its container waits, saying so,
	// until it exists.
	awaitPod(t, c, ns, "late", "waiting for its Secret", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return p.Status.Phase == corev1.PodPending && len(cs) == 1 && cs[0].State.Waiting != nil &&
			strings.Contains(cs[0].State.Waiting.Message, `"late" not found`)
	})
	if _, err := c.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "late"}, Data: map[string][]byte{"k": []byte("v")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	awaitPod(t, c, ns, "late", "running", podReady)
	if recs := awaitStarts(t, out, "late", 1); len(recs) != 1 || len(recs[0].Files) != 1 {
		t.Errorf("late's starts: %+v", recs)
	} else {
		for path, got := range recs[0].Files {
			if got != "v" {
				t.Errorf("late read %s as %q, want v", path, got)
			}
		}
	}

	// A user of its own is under RBAC: nothing until bound to a role.
	cfg, err := c.UserConfig("jane", "testers")
	if err != nil {
		t.Fatal(err)
	}
	jane := kubernetes.NewForConfigOrDie(cfg)
	if _, err := jane.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("jane lists pods before any binding: %v, want Forbidden", err)
	}
	if _, err := c.Client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "testers-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "testers"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "jane may list pods as one of the testers", func() error {
		_, err := jane.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err
	})
}
