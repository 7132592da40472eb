package kube

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// KubeletOptions tunes a test kubelet. The zero value runs containers
// whose command names a local program, on a node of 4 CPUs, 8 GiB and
// 110 pods.
type KubeletOptions struct {
	// Images maps a container image to the local executable that
	// stands for it: the image's entrypoint. A container of a mapped
	// image runs that executable with the container's command[1:]
	// and args (command[0], the program's path inside the image, is
	// the executable's). A container of an image not mapped runs its
	// command as a local program (command[0] an absolute path or a
	// name looked up in PATH); without a command it cannot start
	// (CreateContainerConfigError).
	Images map[string]string
	// Env is added to every process's environment, before the
	// container's own variables (which win): for what the test's
	// programs need from the machine (GOCOVERDIR...). Each process
	// otherwise gets PATH, HOME and TMPDIR (dirs of its pod),
	// HOSTNAME (the pod's name) and KUBERNETES_SERVICE_HOST/PORT (the
	// API server), not the test process's environment.
	Env []string
	// Labels are added to the Node's (kubernetes.io/hostname, os and
	// arch); Taints are its taints. The binder honours both: a Pod's
	// nodeSelector and its tolerations of NoSchedule and NoExecute
	// taints.
	Labels map[string]string
	Taints []corev1.Taint
	// Capacity is the Node's capacity and allocatable; nil is 4 CPUs,
	// 8Gi of memory and 110 pods. Nothing is enforced.
	Capacity corev1.ResourceList
	// RestartBackoff is the first wait before restarting a container
	// that exited (restartPolicy Always, or OnFailure after a failure)
	// or could not start; each further restart waits twice as long,
	// up to MaxRestartBackoff. A container that ran for twice
	// MaxRestartBackoff starts over at RestartBackoff. Defaults: 100ms
	// and 2s (the real kubelet's 10s and 5min would stall a test).
	RestartBackoff, MaxRestartBackoff time.Duration
}

// Kubelet is a running test kubelet: a Node registered in the cluster,
// and the local processes of the Pods bound to it.
type Kubelet struct {
	c      *Cluster
	t      testing.TB
	name   string
	opts   KubeletOptions
	dir    string
	labels map[string]string // the Node's

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the informer and every pod worker
	once   sync.Once

	// logSrv serves the pods' logs to the API server (logserver.go).
	logSrv *httptest.Server

	mu      sync.Mutex
	workers map[types.UID]*podWorker // every pod seen, ended ones too
	byName  map[string]*podWorker    // namespace/name: the newest
}

// RunKubelet registers node nodeName (Ready, with Capacity) and runs the
// Pods bound to it until ctx is done, Stop is called or t ends. Running
// a kubelet again under the name of a stopped one takes the Node over.
func (c *Cluster) RunKubelet(ctx context.Context, t testing.TB, nodeName string, opts KubeletOptions) *Kubelet {
	t.Helper()
	if opts.RestartBackoff <= 0 {
		opts.RestartBackoff = 100 * time.Millisecond
	}
	if opts.MaxRestartBackoff < opts.RestartBackoff {
		opts.MaxRestartBackoff = max(2*time.Second, opts.RestartBackoff)
	}
	if opts.Capacity == nil {
		opts.Capacity = corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("4"),
			corev1.ResourceMemory: resource.MustParse("8Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
	}
	k := &Kubelet{
		c: c, t: t, name: nodeName, opts: opts,
		dir:     filepath.Join(c.Dir, "kubelets", nodeName),
		workers: map[types.UID]*podWorker{},
		byName:  map[string]*podWorker{},
	}
	k.ctx, k.cancel = context.WithCancel(ctx)
	if err := os.MkdirAll(k.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	port, err := k.serveLogs()
	if err != nil {
		t.Fatalf("kube: kubelet %s: log endpoint: %v", nodeName, err)
	}
	if err := k.registerNode(ctx, port); err != nil {
		k.logSrv.Close()
		t.Fatalf("kube: register node %s: %v", nodeName, err)
	}
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (kruntime.Object, error) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", nodeName).String()
			return c.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", nodeName).String()
			return c.Client.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, o)
		},
	}, &corev1.Pod{}, 0, cache.Indexers{})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.dispatch(obj.(*corev1.Pod)) },
		UpdateFunc: func(_, obj any) { k.dispatch(obj.(*corev1.Pod)) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				k.removed(pod)
			}
		},
	}); err != nil {
		t.Fatal(err)
	}
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		inf.RunWithContext(k.ctx)
	}()
	t.Cleanup(k.Stop)
	if !cache.WaitForCacheSync(k.ctx.Done(), inf.HasSynced) {
		t.Fatalf("kube: kubelet %s: the pod watch did not sync", nodeName)
	}
	c.addKubelet(k)
	return k
}

// NodeName is the kubelet's node.
func (k *Kubelet) NodeName() string { return k.name }

// Stop ends the kubelet as a crash of its node would: every process of
// its pods is killed (SIGKILL) and nothing more is reported. The Node
// and its Pods stay as they were in the API (nothing here marks a
// silent node NotReady). It returns once every process is reaped; t's
// cleanup calls it.
func (k *Kubelet) Stop() {
	k.once.Do(func() {
		k.c.removeKubelet(k)
		k.cancel()
		k.wg.Wait()
		k.logSrv.Close()
	})
}

// registerNode creates the Node, or takes over one of the same name,
// and reports it Ready with the kubelet's capacity and its log endpoint's
// port.
func (k *Kubelet) registerNode(ctx context.Context, port int) error {
	nodes := k.c.Client.CoreV1().Nodes()
	labels := map[string]string{
		corev1.LabelHostname:   k.name,
		corev1.LabelOSStable:   runtime.GOOS,
		corev1.LabelArchStable: runtime.GOARCH,
	}
	for key, v := range k.opts.Labels {
		labels[key] = v
	}
	k.labels = labels
	node, err := nodes.Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: k.name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: k.opts.Taints},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		if node, err = nodes.Get(ctx, k.name, metav1.GetOptions{}); err != nil {
			return err
		}
		node.Labels, node.Spec.Taints = labels, k.opts.Taints
		node, err = nodes.Update(ctx, node, metav1.UpdateOptions{})
	}
	if err != nil {
		return err
	}
	now := metav1.Now()
	cond := func(typ corev1.NodeConditionType, status corev1.ConditionStatus, reason string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: status, Reason: reason, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	node.Status = corev1.NodeStatus{
		Capacity:    k.opts.Capacity,
		Allocatable: k.opts.Capacity,
		Phase:       corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{
			cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady"),
			cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory"),
			cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure"),
			cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID"),
		},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: podIP},
			{Type: corev1.NodeHostName, Address: k.name},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)}},
		NodeInfo: corev1.NodeSystemInfo{
			KubeletVersion:          Release,
			OperatingSystem:         runtime.GOOS,
			Architecture:            runtime.GOARCH,
			ContainerRuntimeVersion: "ardea-test://local-processes",
		},
	}
	_, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

// podIP is every pod's and node's address: the processes share the
// machine's network, on loopback.
const podIP = "127.0.0.1"

// dispatch hands a pod's newest state to its worker, starting one for a
// pod seen first. A pod that is already terminal when first seen (left
// by a kubelet that ran before under this name) is not run again.
func (k *Kubelet) dispatch(pod *corev1.Pod) {
	if pod.Spec.NodeName != k.name {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ctx.Err() != nil {
		return
	}
	if w := k.workers[pod.UID]; w != nil {
		w.update(pod, false)
		return
	}
	terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	if terminal && pod.DeletionTimestamp == nil {
		return
	}
	w := newPodWorker(k, pod)
	k.workers[pod.UID] = w
	k.byName[pod.Namespace+"/"+pod.Name] = w
	k.wg.Add(1)
	go w.run()
}

// removed tells a pod's worker that the pod is gone from the API (the
// kubelet deleted it, or someone deleted it with no grace period).
func (k *Kubelet) removed(pod *corev1.Pod) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if w := k.workers[pod.UID]; w != nil {
		w.update(nil, true)
	}
}

// worker is the newest worker of pod namespace/name, or nil.
func (k *Kubelet) worker(namespace, name string) *podWorker {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.byName[namespace+"/"+name]
}

// PodDir is the directory of the newest pod of that name on this node:
// its volumes (volumes/NAME), logs (logs/CONTAINER/N.log) and each
// container's home. "" when the kubelet has run no such pod.
func (k *Kubelet) PodDir(namespace, pod string) string {
	if w := k.worker(namespace, pod); w != nil {
		return w.dir
	}
	return ""
}

// LogPath is the log file (stdout and stderr) of the current or last run
// of a container of the newest pod of that name on this node; each
// restart writes a new file (logs/CONTAINER/RESTARTS.log). "" when the
// container has not started.
func (k *Kubelet) LogPath(namespace, pod, container string) string {
	w := k.worker(namespace, pod)
	if w == nil {
		return ""
	}
	return w.logPath(container)
}

// Logs reads LogPath.
func (k *Kubelet) Logs(namespace, pod, container string) (string, error) {
	p := k.LogPath(namespace, pod, container)
	if p == "" {
		return "", fmt.Errorf("kube: %s/%s has run no container %s on node %s", namespace, pod, container, k.name)
	}
	b, err := os.ReadFile(p)
	return string(b), err
}

// PID is the process id of a running container of the newest pod of
// that name on this node, or 0: for a test that makes a process crash
// (syscall.Kill) and watches the kubelet restart it.
func (k *Kubelet) PID(namespace, pod, container string) int {
	w := k.worker(namespace, pod)
	if w == nil {
		return 0
	}
	return w.pid(container)
}

func (k *Kubelet) logf(format string, args ...any) {
	k.t.Logf("kubelet %s: "+format, append([]any{k.name}, args...)...)
}
