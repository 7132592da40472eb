package kube

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ardea-dev/ardea/internal/testutil"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if podprogDir != "" {
		os.RemoveAll(podprogDir)
	}
	os.Exit(code)
}

// podprogDir holds testdata/podprog built once per test binary.
var (
	podprogOnce sync.Once
	podprogDir  string
	podprogErr  error
)

// podprog builds testdata/podprog: the program every test pod runs
// (image "podprog:test").
func podprog(t *testing.T) string {
	t.Helper()
	podprogOnce.Do(func() {
		if podprogDir, podprogErr = os.MkdirTemp("", "kube-podprog-"); podprogErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", podprogDir, "./testdata/podprog").CombinedOutput()
		if err != nil {
			podprogErr = fmt.Errorf("go build ./testdata/podprog: %v\n%s", err, out)
		}
	})
	if podprogErr != nil {
		t.Fatal(podprogErr)
	}
	return filepath.Join(podprogDir, "podprog")
}

// start is one record of testdata/podprog's (its Start).
type start struct {
	Pid   int               `json:"pid"`
	Args  []string          `json:"args"`
	Env   map[string]string `json:"env"`
	Files map[string]string `json:"files"`
}

// starts reads the records of pod's starts in out, oldest first (a
// line still being written is not one yet).
func starts(t *testing.T, out, pod string) []start {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, pod+".start"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var recs []start
	for _, line := range lines[:len(lines)-1] {
		var r start
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s.start: %v", pod, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// awaitStarts waits for pod's n-th start record and returns them all.
// A container is ready once its process runs (the test kubelet runs no
// probes), which can be before the process has written its record.
func awaitStarts(t *testing.T, out, pod string, n int) []start {
	t.Helper()
	var recs []start
	testutil.Eventually(t, fmt.Sprintf("%s's start %d recorded", pod, n), func() (bool, string) {
		recs = starts(t, out, pod)
		return len(recs) >= n, fmt.Sprintf("%d records", len(recs))
	})
	return recs
}

// stops reads the pids pod's processes recorded on SIGTERM.
func stops(t *testing.T, out, pod string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, pod+".stop"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// alive: a process of that pid exists (the kubelet reaps its children,
// so an ended one is gone).
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func podEnv() []corev1.EnvVar {
	field := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	return []corev1.EnvVar{
		field("POD_NAME", "metadata.name"),
		field("POD_NAMESPACE", "metadata.namespace"),
		field("NODE_NAME", "spec.nodeName"),
		field("POD_IP", "status.podIP"),
	}
}

// TestStatefulSet is the harness end to end: the controller manager
// makes a StatefulSet's Pods, the binder spreads them over two test
// kubelets, which run testdata/podprog for each with its env, its Secret
// volume and its claim's volume; scaling up and down starts and stops
// processes (down gracefully, by SIGTERM), and a deleted Pod is made
// again by the controller and run anew, finding its claim's data;
// deleting the StatefulSet stops the last.
func TestStatefulSet(t *testing.T) {
	t.Parallel() // each test has a cluster of its own
	c := Start(t, Options{})
	bin := podprog(t)
	ctx := t.Context()
	images := map[string]string{"podprog:test": bin}
	c.RunKubelet(ctx, t, "node-a", KubeletOptions{Images: images})
	c.RunKubelet(ctx, t, "node-b", KubeletOptions{Images: images})

	const ns = "sts"
	if err := c.EnsureNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "podprog-token"},
		Data:       map[string][]byte{"token": []byte("s3cret")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	labels := map[string]string{"app": "podprog"}
	grace := int64(10)
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "podprog"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    new(int32(2)),
			ServiceName: "podprog",
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: &grace,
					Containers: []corev1.Container{{
						Name:    "main",
						Image:   "podprog:test",
						Command: []string{"/podprog"},
						Args: []string{"-out", out,
							"-read", "/etc/podprog/token",
							"-read", "/data/starts", "-record", "/data",
							"-env", "POD_NAMESPACE", "-env", "NODE_NAME", "-env", "POD_IP",
						},
						Env: podEnv(),
						VolumeMounts: []corev1.VolumeMount{
							{Name: "token", MountPath: "/etc/podprog", ReadOnly: true},
							{Name: "data", MountPath: "/data"},
						},
					}},
					Volumes: []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{
						Secret: &corev1.SecretVolumeSource{SecretName: "podprog-token"},
					}}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceStorage: resource.MustParse("1Gi"),
					}},
				},
			}},
		},
	}
	if _, err := c.Client.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Two replicas: podprog-0, then (once it is Ready: OrderedReady)
	// podprog-1, each run once with what its pod gave it.
	awaitReady(t, c, ns, 2)
	nodes := map[string]bool{}
	pids := map[string]int{}
	for _, pod := range []string{"podprog-0", "podprog-1"} {
		recs := awaitStarts(t, out, pod, 1)
		if len(recs) != 1 {
			t.Fatalf("%s started %d times, want 1: %+v", pod, len(recs), recs)
		}
		r := recs[0]
		// The arg -read /etc/podprog/token reached the process as the
		// path of the Secret volume's local directory.
		token := filepath.Join(kubeletOf(t, c, ns, pod).PodDir(ns, pod), "volumes", "token", "token")
		if got := r.Files[token]; got != "s3cret" {
			t.Errorf("%s read %v, want %s: s3cret (the Secret volume's token)", pod, r.Files, token)
		}
		if r.Env["POD_NAMESPACE"] != ns || r.Env["POD_IP"] != "127.0.0.1" {
			t.Errorf("%s env %v", pod, r.Env)
		}
		if !alive(r.Pid) {
			t.Errorf("%s: process %d not running", pod, r.Pid)
		}
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != r.Env["NODE_NAME"] {
			t.Errorf("%s runs on %s, its process says %s", pod, p.Spec.NodeName, r.Env["NODE_NAME"])
		}
		checkRunning(t, p)
		nodes[p.Spec.NodeName] = true
		pids[pod] = r.Pid
	}
	if len(nodes) != 2 {
		t.Errorf("both pods on %v: the binder should spread them over node-a and node-b", nodes)
	}
	logs, err := kubeletOf(t, c, ns, "podprog-0").Logs(ns, "podprog-0", "main")
	if err != nil || !strings.Contains(logs, "podprog podprog-0 started") {
		t.Errorf("podprog-0's log: %q, %v", logs, err)
	}
	// The same through the API server (pods/log), which asks the pod's
	// kubelet: the whole log, and its last line.
	for _, pod := range []string{"podprog-0", "podprog-1"} {
		want, err := kubeletOf(t, c, ns, pod).Logs(ns, pod, "main")
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Client.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: "main"}).DoRaw(ctx)
		if err != nil || string(got) != want {
			t.Errorf("%s's log through the API server: %q %v, want %q", pod, got, err, want)
		}
		one := int64(1)
		last, err := c.Client.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: "main", TailLines: &one}).DoRaw(ctx)
		lines := strings.SplitAfter(strings.TrimSuffix(want, "\n"), "\n")
		if err != nil || string(last) != lines[len(lines)-1]+"\n" && string(last) != lines[len(lines)-1] {
			t.Errorf("%s's last line through the API server: %q %v, want %q", pod, last, err, lines[len(lines)-1])
		}
	}

	// Up to 3: podprog-2 starts.
	scale(t, c, ns, 3)
	awaitReady(t, c, ns, 3)
	if recs := awaitStarts(t, out, "podprog-2", 1); len(recs) != 1 || !alive(recs[0].Pid) {
		t.Fatalf("podprog-2 after scaling to 3: %+v", recs)
	}
	pids["podprog-2"] = starts(t, out, "podprog-2")[0].Pid

	// Down to 1: podprog-2 and podprog-1 get SIGTERM (they record it),
	// their processes end and their pods go.
	scale(t, c, ns, 1)
	for _, pod := range []string{"podprog-2", "podprog-1"} {
		testutil.Eventually(t, pod+" stopped and gone", func() (bool, string) {
			_, err := c.Client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("pod still there (%v)", err)
			}
			return true, ""
		})
		if got := stops(t, out, pod); !slices.Equal(got, []string{fmt.Sprint(pids[pod])}) {
			t.Errorf("%s recorded stops %v, want its pid %d once (SIGTERM)", pod, got, pids[pod])
		}
		if alive(pids[pod]) {
			t.Errorf("%s: process %d still running", pod, pids[pod])
		}
	}
	if !alive(pids["podprog-0"]) {
		t.Errorf("podprog-0's process ended by a scale-down")
	}

	// Deleting podprog-0: its process is stopped, the controller makes
	// the pod again (a new UID) and it is run anew.
	old, err := c.Client.CoreV1().Pods(ns).Get(ctx, "podprog-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, "podprog-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "podprog-0 made again and running", func() (bool, string) {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, "podprog-0", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if p.UID == old.UID {
			return false, "the old pod is still there"
		}
		if !podReady(p) {
			return false, fmt.Sprintf("phase %s, not ready", p.Status.Phase)
		}
		return true, ""
	})
	if got := stops(t, out, "podprog-0"); !slices.Equal(got, []string{fmt.Sprint(pids["podprog-0"])}) {
		t.Errorf("podprog-0 recorded stops %v, want its first pid %d", got, pids["podprog-0"])
	}
	recs := awaitStarts(t, out, "podprog-0", 2)
	if len(recs) != 2 || recs[1].Pid == pids["podprog-0"] || !alive(recs[1].Pid) || alive(pids["podprog-0"]) {
		t.Fatalf("podprog-0's starts after its deletion: %+v (first pid %d)", recs, pids["podprog-0"])
	}
	// Its claim's volume kept what the first process wrote there: the
	// second read the first's pid from /data/starts.
	found := false
	for path, got := range recs[1].Files {
		if filepath.Base(path) == "starts" {
			found = true
			if got != fmt.Sprintln(pids["podprog-0"]) {
				t.Errorf("the second podprog-0 read %s as %q, want the first's pid %d", path, got, pids["podprog-0"])
			}
		}
	}
	if !found {
		t.Errorf("the second podprog-0 read no /data/starts: %v", recs[1].Files)
	}

	// Deleting the StatefulSet: the garbage collector deletes its pod,
	// whose process gets SIGTERM.
	if err := c.Client.AppsV1().StatefulSets(ns).Delete(ctx, "podprog", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "podprog-0 gone with its StatefulSet", func() (bool, string) {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d pods", len(pods.Items))
	})
	if got := stops(t, out, "podprog-0"); len(got) != 2 || got[1] != fmt.Sprint(recs[1].Pid) || alive(recs[1].Pid) {
		t.Errorf("podprog-0's stops %v: want the second process's pid %d last, and it ended", got, recs[1].Pid)
	}
}

// awaitReady waits for the StatefulSet podprog of ns to have n ready
// replicas, by its controller's count, and n pods.
func awaitReady(t *testing.T, c *Cluster, ns string, n int32) {
	t.Helper()
	testutil.Eventually(t, fmt.Sprintf("%d ready replicas", n), func() (bool, string) {
		s, err := c.Client.AppsV1().StatefulSets(ns).Get(t.Context(), "podprog", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		st := s.Status
		if st.ObservedGeneration != s.Generation || st.ReadyReplicas != n || st.Replicas != n {
			return false, fmt.Sprintf("generation %d observed %d, replicas %d ready %d", s.Generation, st.ObservedGeneration, st.Replicas, st.ReadyReplicas)
		}
		return true, ""
	})
}

func scale(t *testing.T, c *Cluster, ns string, n int32) {
	t.Helper()
	sc, err := c.Client.AppsV1().StatefulSets(ns).GetScale(t.Context(), "podprog", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc.Spec.Replicas = n
	if _, err := c.Client.AppsV1().StatefulSets(ns).UpdateScale(t.Context(), "podprog", sc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// checkRunning checks what the kubelet reported of a running pod.
func checkRunning(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if !podReady(p) {
		t.Errorf("%s: phase %s, conditions %+v", p.Name, p.Status.Phase, p.Status.Conditions)
	}
	if p.Status.PodIP != "127.0.0.1" || p.Status.StartTime == nil {
		t.Errorf("%s: podIP %q startTime %v", p.Name, p.Status.PodIP, p.Status.StartTime)
	}
	if len(p.Status.ContainerStatuses) != 1 {
		t.Fatalf("%s: container statuses %+v", p.Name, p.Status.ContainerStatuses)
	}
	cs := p.Status.ContainerStatuses[0]
	if !cs.Ready || cs.Started == nil || !*cs.Started || cs.State.Running == nil || cs.RestartCount != 0 {
		t.Errorf("%s: container status %+v", p.Name, cs)
	}
}

// kubeletOf is the kubelet running a pod.
func kubeletOf(t *testing.T, c *Cluster, ns, pod string) *Kubelet {
	t.Helper()
	p, err := c.Client.CoreV1().Pods(ns).Get(t.Context(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.kubelets[p.Spec.NodeName]
	if k == nil {
		t.Fatalf("%s is on %q, no running kubelet", pod, p.Spec.NodeName)
	}
	return k
}

// awaitPod waits for a pod to satisfy cond, and returns it.
func awaitPod(t *testing.T, c *Cluster, ns, name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	testutil.Eventually(t, name+" "+what, func() (bool, string) {
		var err error
		p, err = c.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if !cond(p) {
			b, _ := json.Marshal(p.Status)
			return false, string(b)
		}
		return true, ""
	})
	return p
}
