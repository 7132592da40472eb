package daemon_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ardea-dev/ardea/examples/keyed"
	"github.com/ardea-dev/ardea/examples/wordcount"
	"github.com/ardea-dev/ardea/internal/testutil"
	ktest "github.com/ardea-dev/ardea/internal/testutil/kube"
	"github.com/ardea-dev/ardea/internal/testutil/wordcounttest"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

// kubeTest is a test's part of the package's shared control plane
// (ktest.Shared, stopped in TestMain): a namespace of its own, where its
// daemons run their pods as an identity bound there only, and two
// kubelets of its own, whose node label the pods select.
type kubeTest struct {
	*ktest.Cluster
	ns string
}

// kubeTestLabel is the label of a test's nodes, naming its namespace:
// its pods' nodeSelector, so that the binder, which binds a pod to any
// running kubelet it fits, never binds them to another test's.
const kubeTestLabel = "ardea.dev/kube-test"

// kubeDaemon makes the test's namespace and two test kubelets, whose
// image "ardea:test" is the test's ardea binary, on the shared control
// plane, and starts a daemon with scheduler: kubernetes in that
// namespace, as an identity bound to the Helm chart's Role there only
// (deploy/helm/ardea/templates/role.yaml). o is the rest of the daemon's
// options.
func kubeDaemon(t *testing.T, o daemon.Options) (*kubeTest, *daemon.Daemon, *api.Client) {
	t.Helper()
	kc, k := kubeCluster(t)
	o.Kubernetes = k
	d := startDaemonWith(t, o)
	return kc, d, d.Client()
}

// kubeCluster makes the namespace and kubelets of kubeDaemon and returns
// the daemons' kubernetes: section for them.
func kubeCluster(t *testing.T) (*kubeTest, *daemon.Kubernetes) {
	t.Helper()
	// One control plane for the package's tests: one each cost 5 to 10
	// s and several CPU-seconds. The tests stay sequential (none is
	// t.Parallel): each waits on its pods, and their hosts' CPU is what
	// two cores have.
	kc := &kubeTest{Cluster: ktest.Shared(t, ktest.Options{}), ns: kubeTestNamespace(t)}
	ctx := t.Context()
	if err := kc.EnsureNamespace(ctx, kc.ns); err != nil {
		t.Fatal(err)
	}
	user := "ardea-daemon-" + kc.ns // bound in this namespace only
	verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	if _, err := kc.Client.RbacV1().Roles(kc.ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "ardea"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods", "services", "secrets"}, Verbs: verbs},
			{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
			{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: verbs},
		}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.Client.RbacV1().RoleBindings(kc.ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ardea"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "ardea"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := kc.UserKubeconfig(user)
	if err != nil {
		t.Fatal(err)
	}
	selector := map[string]string{kubeTestLabel: kc.ns}
	for _, n := range []string{"node-a", "node-b"} {
		kc.RunKubelet(ctx, t, kc.ns+"-"+n, ktest.KubeletOptions{Images: map[string]string{"ardea:test": ardeaBin}, Labels: selector})
	}
	t.Cleanup(func() { dumpPodLogs(t, kc) }) // before the kubelets stop
	// The nodes' compile cache (a hostPath, here a directory of this
	// machine) is the tests' shared one: a pod made again does not
	// compile the modules again.
	cache := hostCache(t.TempDir())
	return kc, &daemon.Kubernetes{Namespace: kc.ns, Image: "ardea:test", Kubeconfig: kubeconfig, CompileCache: cache, NodeSelector: selector}
}

// kubeTests numbers the namespaces: a test run again (-count) gets
// another.
var kubeTests atomic.Int32

// kubeTestNamespace is the test's namespace: its name, a DNS label.
func kubeTestNamespace(t *testing.T) string {
	ns := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '-'
	}, strings.TrimPrefix(t.Name(), "TestKubernetes"))
	return strings.TrimRight(fmt.Sprintf("k%d-%s", kubeTests.Add(1), ns[:min(len(ns), 50)]), "-")
}

// dumpPodLogs logs the last lines of every host run's output on the
// test's kubelets when t failed.
func dumpPodLogs(t *testing.T, kc *kubeTest) {
	if !t.Failed() {
		return
	}
	nodes := filepath.Join(kc.Dir, "kubelets", kc.ns+"-node-*")
	logs, _ := filepath.Glob(filepath.Join(nodes, "*", "*", "logs", "*", "*.log"))
	more, _ := filepath.Glob(filepath.Join(nodes, "*", "*", "*", "logs", "*", "*.log"))
	for _, f := range append(logs, more...) {
		b, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		t.Logf("%s (last 40 lines):\n%s", f, strings.Join(lines[max(0, len(lines)-40):], "\n"))
	}
}

// kubeObjects counts the StatefulSets, Secrets and pods the daemon's
// runtime made in the test's namespace.
func kubeObjects(t *testing.T, kc *kubeTest) (sts, secrets, pods int) {
	t.Helper()
	ctx, sel := t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=ardea"}
	s, err1 := kc.Client.AppsV1().StatefulSets(kc.ns).List(ctx, sel)
	c, err2 := kc.Client.CoreV1().Secrets(kc.ns).List(ctx, sel)
	p, err3 := kc.Client.CoreV1().Pods(kc.ns).List(ctx, sel)
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return len(s.Items), len(c.Items), len(p.Items)
}

// awaitNoObjects waits until the runtime's objects are all gone.
func awaitNoObjects(t *testing.T, kc *kubeTest) {
	t.Helper()
	testutil.Eventually(t, "every StatefulSet, Secret and pod deleted", func() (bool, string) {
		s, c, p := kubeObjects(t, kc)
		return s+c+p == 0, fmt.Sprintf("%d statefulsets, %d secrets, %d pods", s, c, p)
	})
}

// TestKubernetesWordCount runs the finite word count with scheduler:
// kubernetes: its two containers are the pods of one StatefulSet, `ardea
// host` run by the test kubelets, each with its credential from the
// topology's Secret; every count is exact, and the kill deletes every
// object.
func TestKubernetesWordCount(t *testing.T) {
	testutil.RacedToo(t)
	kc, _, c := kubeDaemon(t, daemon.Options{})
	dir := t.TempDir()
	var lines []string
	for i := range 3000 {
		lines = append(lines, fmt.Sprintf("w%d common w%d tail", i%97, i%13))
	}
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "counts.tsv")
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := c.Submit(ctx, api.SubmitRequest{Name: "wck", Spec: wcSpec(t, "wck", 2, fileSpout(in), out), Modules: wcModules(t)}); err != nil {
		t.Fatal(err)
	}
	sts, err := kc.Client.AppsV1().StatefulSets(kc.ns).List(ctx, metav1.ListOptions{LabelSelector: "ardea.dev/topology=wck"})
	if err != nil || len(sts.Items) != 1 {
		t.Fatalf("the topology's statefulsets: %v, %v", sts, err)
	}
	if v := sts.Items[0].Spec.Template.Spec.Volumes; len(v) < 2 || v[1].HostPath == nil || *sts.Items[0].Spec.Replicas != 2 {
		t.Errorf("statefulset: replicas %d, volumes %+v: want 2, the data dir on the nodes' compile cache", *sts.Items[0].Spec.Replicas, v)
	}
	waitState(t, c, "wck", api.StateFinished)
	got, err := wordcount.ReadCounts(out, false)
	if err != nil {
		t.Fatal(err)
	}
	wordcounttest.CompareCounts(t, got, wordcount.Reference(lines))
	if _, err := c.Action(ctx, "wck", "kill", url.Values{"keep": {"true"}}, nil); err != nil {
		t.Fatal(err)
	}
	awaitNoObjects(t, kc)
}

// TestKubernetesPodRestart: an effectively-once topology (the keyed
// sequence) runs as pods; a pod is deleted while records flow: the
// StatefulSet makes it again, the topology rolls back to its last global
// checkpoint, and the output is exactly a fault-free run's. Closing the
// daemon deletes its objects.
func TestKubernetesPodRestart(t *testing.T) {
	testutil.RacedToo(t)
	kc, d, c := kubeDaemon(t, daemon.Options{})
	const keys, perKey = 100, 100
	until := filepath.Join(t.TempDir(), "end")
	out := submitKeyedEO(t, c, "eok", keys, perKey, 2000, until)
	ctx := t.Context()
	status := func() api.Status {
		st, err := c.Status(ctx, "eok")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	testutil.Eventually(t, "a global checkpoint", func() bool { st := status(); return st.Checkpoints != nil && st.Checkpoints.Global > 0 })
	pods, err := kc.Client.CoreV1().Pods(kc.ns).List(ctx, metav1.ListOptions{LabelSelector: "ardea.dev/topology=eok"})
	if err != nil || len(pods.Items) != 2 {
		t.Fatalf("the topology's pods: %v, %v", pods, err)
	}
	victim := pods.Items[0]
	if err := kc.Client.CoreV1().Pods(kc.ns).Delete(ctx, victim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the rollback after the pod's deletion", func() (bool, string) {
		st := status()
		return st.Checkpoints.Rollbacks >= 1 && !st.Checkpoints.RollingBack, fmt.Sprintf("%+v", *st.Checkpoints)
	})
	testutil.Eventually(t, "the pod made again, counted as a restart", func() (bool, string) {
		p, err := kc.Client.CoreV1().Pods(kc.ns).Get(ctx, victim.Name, metav1.GetOptions{})
		restarts := 0
		for _, ct := range status().Containers {
			restarts += ct.Restarts
		}
		return err == nil && p.UID != victim.UID && restarts == 1, fmt.Sprintf("%d restarts", restarts)
	})
	if err := os.WriteFile(until, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	st := waitState(t, c, "eok", api.StateFinished)
	if err := keyed.CheckExact(out, keys, perKey); err != nil {
		t.Fatal(err)
	}
	t.Logf("pod %s deleted: %d rollbacks (%s)", victim.Name, st.Checkpoints.Rollbacks, st.Checkpoints.LastRollback)
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	awaitNoObjects(t, kc)
}

// TestKubernetesTenants: two tenants' topologies of the same name run as
// pods side by side, each StatefulSet labelled with its tenant, each
// host with its tenant's NATS credential and machine policy from its
// topology's Secret: each writes exactly its own output.
func TestKubernetesTenants(t *testing.T) {
	testutil.RacedToo(t)
	kc, d, _ := kubeDaemon(t, daemon.Options{
		Tenants:  func(context.Context) ([]string, error) { return []string{"default", "acme", "globex"}, nil },
		Security: daemon.Security{TenantBuiltins: []string{"file"}},
	})
	dir := t.TempDir()
	want := map[string]int{"acme": 300, "globex": 400}
	ctx := t.Context()
	for tenant, n := range want {
		if err := d.Submit(as(tenant), api.SubmitRequest{Name: "wc", Spec: counted(t, "wc", filepath.Join(dir, tenant+".txt"), n), Deactivated: true}); err != nil {
			t.Fatalf("%s: submit wc: %v", tenant, err)
		}
	}
	// Paused, their pods run: a StatefulSet and a Secret per tenant's
	// topology, the tenant's policy in its Secret.
	for tenant := range want {
		sel := metav1.ListOptions{LabelSelector: "ardea.dev/tenant=" + tenant + ",ardea.dev/topology=wc"}
		sts, err := kc.Client.AppsV1().StatefulSets(kc.ns).List(ctx, sel)
		if err != nil || len(sts.Items) != 1 {
			t.Fatalf("%s's statefulsets: %v, %v", tenant, sts, err)
		}
		sec, err := kc.Client.CoreV1().Secrets(kc.ns).Get(ctx, sts.Items[0].Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p := string(sec.Data["ARDEA_MACHINE_POLICY"]); !strings.Contains(p, `"`+tenant+`"`) || len(sec.Data["container-1"]) == 0 {
			t.Errorf("%s's secret: policy %s, keys %d", tenant, p, len(sec.Data))
		}
		testutil.Eventually(t, tenant+"'s pod running", func() (bool, string) {
			pods, err := kc.Client.CoreV1().Pods(kc.ns).List(ctx, sel)
			if err != nil || len(pods.Items) != 1 {
				return false, fmt.Sprint(err)
			}
			return pods.Items[0].Status.Phase == "Running", string(pods.Items[0].Status.Phase)
		})
		// Its log (`ardea logs`, the UI's container log) is the pod's,
		// read through the API server (pods/log, from its kubelet).
		testutil.Eventually(t, tenant+"'s container log, through the API server", func() (bool, string) {
			ls, err := d.Tracker().ContainerLogs(as(tenant), "wc", 1, 100)
			if err != nil {
				return false, err.Error()
			}
			return slices.ContainsFunc(ls, func(l string) bool {
				return strings.Contains(l, `"topology":"wc"`) && strings.Contains(l, `"container":1`)
			}), fmt.Sprintf("%q", ls)
		})
		if _, err := d.SetActive(as(tenant), "wc", true); err != nil {
			t.Fatal(err)
		}
	}
	for tenant, n := range want {
		testutil.Eventually(t, tenant+"'s wc finishes", func() (bool, string) {
			top, err := d.Tracker().Topology(as(tenant), "wc")
			if err != nil {
				return false, err.Error()
			}
			return top.State == string(api.StateFinished), top.State
		})
		if got := lines(filepath.Join(dir, tenant+".txt")); got != n {
			t.Errorf("%s's wc wrote %d lines, want %d", tenant, got, n)
		}
	}
	// Finished: each topology's objects went with its last container.
	awaitNoObjects(t, kc)
}

// TestKubernetesFileSinkSurvivesPodDeletion: lines flow from the file
// spout into the file sink at least once over 2 pods; the sink's pod is
// deleted while they flow. Its replacement knows it is a restart (the
// Secret's started key) and appends to what the sink wrote: every input
// line is in the output, none foreign (duplicates are at least once's).
func TestKubernetesFileSinkSurvivesPodDeletion(t *testing.T) {
	testutil.RacedToo(t)
	kc, _, c := kubeDaemon(t, daemon.Options{})
	ctx := t.Context()
	dir := t.TempDir()
	const n = 6000
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	writeNumbered(t, in, "line", n)
	submitLinesToFile(t, c, "sinkpod", in, out, 1500)
	sink := 0
	testutil.Eventually(t, "the sink to write 500 lines", func() (bool, string) {
		st, err := c.Status(ctx, "sinkpod")
		if err != nil {
			return false, err.Error()
		}
		for _, ct := range st.Containers {
			for _, in := range ct.Instances {
				if strings.HasPrefix(in.Name, "out/") {
					sink = ct.ID
				}
			}
		}
		got := fileLines(out)
		return sink != 0 && got >= 500, fmt.Sprintf("sink in container %d, %d lines", sink, got)
	})
	pods, err := kc.Client.CoreV1().Pods(kc.ns).List(ctx, metav1.ListOptions{LabelSelector: "ardea.dev/topology=sinkpod"})
	if err != nil {
		t.Fatal(err)
	}
	victim := ""
	for _, p := range pods.Items {
		if strings.HasSuffix(p.Name, fmt.Sprintf("-%d", sink-1)) {
			victim = p.Name
		}
	}
	// The runtime records the container's first run in the Secret once it
	// sees its pod run: the replacement pod reads it.
	testutil.Eventually(t, "the sink's first run recorded", func() bool {
		sec, err := kc.Client.CoreV1().Secrets(kc.ns).Get(ctx, strings.TrimSuffix(victim, fmt.Sprintf("-%d", sink-1)), metav1.GetOptions{})
		return err == nil && len(sec.Data[fmt.Sprintf("started-%d", sink)]) > 0
	})
	before := fileLines(out)
	if err := kc.Client.CoreV1().Pods(kc.ns).Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	st := waitState(t, c, "sinkpod", api.StateFinished)
	lost, dups, extra := checkLines(t, in, out)
	if lost != 0 || extra != 0 || fileLines(out) < before {
		t.Fatalf("after the sink's pod %s was deleted: %d input lines lost, %d lines not in the input (%d duplicates; %d lines before the deletion)", victim, lost, extra, dups, before)
	}
	t.Logf("sink's pod %s deleted: every one of %d lines written, %d duplicates; %s", victim, n, dups, st.State)
}

// TestKubernetesClusterTakeover: three `ardea server` nodes with
// scheduler: kubernetes; the node managing a topology closes while its
// lines flow into the file sink (at least once): its pods keep running,
// the node that takes the topology over adopts its StatefulSet and
// replaces each pod (a new credential, a new manager), and the topology
// finishes there with every line written.
func TestKubernetesClusterTakeover(t *testing.T) {
	testutil.RacedToo(t)
	kc, k := kubeCluster(t)
	nodes := startNodesWith(t, 3, daemon.Options{Kubernetes: k})
	var admin string
	for _, d := range nodes {
		if d.AdminToken() != "" {
			admin = d.AdminToken()
		}
	}
	dir := t.TempDir()
	const n = 5000
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	writeNumbered(t, in, "line", n)
	c0 := nodes[0].Client()
	c0.Token = admin
	submitLinesToFile(t, c0, "move", in, out, 1500)
	first := owner(t, nodes, admin, "move")
	testutil.Eventually(t, "the sink to write 1000 lines", func() (bool, string) {
		got := fileLines(out)
		return got >= 1000, fmt.Sprintf("%d lines", got)
	})
	ctx := t.Context()
	sts, err := kc.Client.AppsV1().StatefulSets(kc.ns).List(ctx, metav1.ListOptions{LabelSelector: "ardea.dev/topology=move"})
	if err != nil || len(sts.Items) != 1 {
		t.Fatalf("the topology's statefulsets: %v, %v", sts, err)
	}
	uid := sts.Items[0].UID
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := first.Close(cctx); err != nil {
		t.Fatal(err)
	}
	var rest []*daemon.Daemon
	for _, d := range nodes {
		if d != first {
			rest = append(rest, d)
		}
	}
	second := owner(t, rest, admin, "move")
	c := second.Client()
	c.Token = admin
	waitState(t, c, "move", api.StateFinished)
	lost, dups, extra := checkLines(t, in, out)
	if lost != 0 || extra != 0 {
		t.Fatalf("after node %s closed: %d input lines lost, %d lines not in the input (%d duplicates)", first.NodeName(), lost, extra, dups)
	}
	t.Logf("node %s closed mid-stream (statefulset %s), node %s took the topology over: every one of %d lines written, %d duplicates",
		first.NodeName(), uid, second.NodeName(), n, dups)
	awaitNoObjects(t, kc)
}

// TestKubernetesDaemonRestart: a daemon alone with scheduler: kubernetes
// closes while lines flow into the file sink (at least once): its
// topology's objects are deleted with it, as its processes would stop.
// Started again on its data dir, it resumes the topology as pods again;
// the resumed sink appends (the plan it stores again is not fresh), and
// every line is in the output.
func TestKubernetesDaemonRestart(t *testing.T) {
	testutil.RacedToo(t)
	kc, k := kubeCluster(t)
	data := hostCache(t.TempDir())
	start := func() (*daemon.Daemon, *api.Client) {
		d, err := daemon.Start(context.Background(), daemon.Options{
			DataDir: data, Listen: "127.0.0.1:0", HostPath: ardeaBin, CacheDir: compileCache,
			HostArgs: []string{"--log-format", "json", "--log-level", "info", "host"}, MaxRestarts: 2, Kubernetes: k,
		})
		if err != nil {
			t.Fatal(err)
		}
		return withAdmin(d), d.Client()
	}
	closeDaemon := func(d *daemon.Daemon) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Errorf("close daemon: %v", err)
		}
	}
	d, c := start()
	dir := t.TempDir()
	const n = 5000
	in, out := filepath.Join(dir, "in.txt"), filepath.Join(dir, "out.txt")
	writeNumbered(t, in, "line", n)
	submitLinesToFile(t, c, "kresume", in, out, 1500)
	testutil.Eventually(t, "the sink to write 1000 lines", func() (bool, string) {
		got := fileLines(out)
		return got >= 1000, fmt.Sprintf("%d lines", got)
	})
	closeDaemon(d)
	awaitNoObjects(t, kc)
	before := fileLines(out)
	d, c = start()
	defer closeDaemon(d)
	waitState(t, c, "kresume", api.StateFinished)
	lost, dups, extra := checkLines(t, in, out)
	if lost != 0 || extra != 0 || dups < before {
		t.Fatalf("after a daemon restart: %d input lines lost, %d lines not in the input, %d duplicates (want at least the %d written before the close)", lost, extra, dups, before)
	}
	t.Logf("daemon closed after %d lines and started again: every one of %d lines written, %d duplicates", before, n, dups)
}
