// Package kube is the Kubernetes runtime of a daemon (the deployment
// file's scheduler: kubernetes), after Heron's Kubernetes scheduler: a
// topology's containers are the pods of one StatefulSet, container c
// the pod of ordinal c-1, each running `ardea host --container-from-pod`
// from the configured image; the hosts' NATS credentials are in one
// Secret beside it (a key per container, mounted 0400). Starting a
// container beyond the replicas scales the StatefulSet up, removing the
// last one scales it down, and removing every container (a kill) or
// closing the runtime deletes the StatefulSet and the Secret. States
// come from a watch of the pods (an informer): Kubernetes restarts a
// host, and the pod's restarts and phase are the container's.
package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/ardea-dev/ardea/scheduler/container/process"
	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/runtime"
	"github.com/ardea-dev/ardea/scheduler/packing"
)

// Pod is what the daemon says a topology's pods run, made when the
// topology's first container starts (a StatefulSet has one template:
// the pods differ only by their ordinal, and their credential).
type Pod struct {
	// Args are ardea's arguments (the image's `ardea` runs them): the
	// host's command line, with --container-from-pod for --container.
	Args []string
	// Env is plain environment; SecretEnv environment kept in the
	// topology's Secret (the tenant's machine policy), by variable.
	Env, SecretEnv map[string]string
	// Creds is this container's NATS credential (a creds file; nil:
	// none, NATS without accounts).
	Creds []byte
	// Resources is each pod's size (the packing plan's largest
	// container; zero fields: Config.Resources).
	Resources packing.Resources
}

// Options makes a Runtime.
type Options[T runtime.Topology] struct {
	Config    Config
	Client    kubernetes.Interface
	Namespace string // default Config.Namespace, else "default"
	// Pod is container c of t's pod (Args, Env and Resources are used
	// when the topology's StatefulSet is made, Creds each time).
	Pod func(ctx context.Context, t T, c int) (Pod, error)
	// OnChange hears a container that exited and will be started again
	// (BACKOFF: its pod's container restarted, or its pod was deleted by
	// someone else than the runtime), as the launcher's OnChange.
	OnChange func(launcher.ProcessStatus)
	Logger   *slog.Logger
	// MaxRestarts and StableAfter are the launcher's: a host that exits
	// in its pod more than MaxRestarts times in a row, each run shorter
	// than StableAfter, is FAILED (reported once; Kubernetes would restart
	// it for ever). 0: the launcher's defaults; MaxRestarts < 0: never.
	MaxRestarts int
	StableAfter time.Duration
	// KeepOnClose leaves the topologies' objects running at Close: a
	// cluster's node, whose topologies another node takes over and
	// adopts (their pods replaced then), where deleting them would race
	// with it. A daemon alone deletes them (its processes would stop).
	KeepOnClose bool
}

// Runtime runs containers as StatefulSet pods. Make it with New; Close
// deletes every topology's objects and stops its watch.
type Runtime[T runtime.Topology] struct {
	cfg    Config
	client kubernetes.Interface
	ns     string
	pod    func(ctx context.Context, t T, c int) (Pod, error)
	change func(launcher.ProcessStatus)
	// maxRestarts, stableAfter and keep: Options'.
	maxRestarts int
	stableAfter time.Duration
	keep        bool
	log         *slog.Logger

	factory informers.SharedInformerFactory
	pods    corelisters.PodLister
	// ctx lives until Close (the watch's, and the calls its handlers make).
	ctx    context.Context
	cancel context.CancelFunc

	// ops serializes the calls that change objects (a topology's
	// StatefulSet and Secret are read, changed and written back).
	ops sync.Mutex
	mu  sync.Mutex
	// tops are the topologies this runtime runs, by StatefulSet name.
	tops   map[string]*topo
	closed bool
}

// topo is one topology's containers, under Runtime.mu.
type topo struct {
	tenant, name, sts string
	// wanted are the containers started and not removed or stopped;
	// stopped the ones stopped (STOPPED until started again).
	wanted, stopped map[int]bool
	// past is each container's restarts in its earlier pods; ours the
	// pods the runtime deleted itself (Restart).
	past map[int]int
	ours map[types.UID]bool
	// inherited are the pods of an adopted StatefulSet not started again
	// yet (their hosts ran under the former manager).
	inherited map[int]bool
	// uid is the StatefulSet's: a pod of an earlier one of the same name
	// (a topology killed and submitted again) is not the topology's.
	uid types.UID
	// exited is each container's last run reported ended (pod uid/run);
	// crashes its short runs in a row, failed the ones given up on.
	exited  map[int]string
	crashes map[int]int
	failed  map[int]bool
	// started are the containers whose first pod ran: the Secret says so
	// to the pods that replace it (process.StartedKey).
	started map[int]bool
}

// New starts the runtime's watch of its pods and returns once it has
// synced.
func New[T runtime.Topology](ctx context.Context, o Options[T]) (*Runtime[T], error) {
	if err := o.Config.Check(); err != nil {
		return nil, err
	}
	ns := o.Namespace
	if ns == "" {
		ns = o.Config.Namespace
	}
	if ns == "" {
		ns = "default"
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Runtime[T]{cfg: o.Config, client: o.Client, ns: ns, pod: o.Pod, change: o.OnChange, log: log,
		tops: map[string]*topo{}}
	if r.change == nil {
		r.change = func(launcher.ProcessStatus) {}
	}
	r.maxRestarts, r.stableAfter, r.keep = o.MaxRestarts, o.StableAfter, o.KeepOnClose
	if r.maxRestarts == 0 {
		r.maxRestarts = launcher.DefaultMaxRestarts
	}
	if r.stableAfter <= 0 {
		r.stableAfter = launcher.DefaultStableAfter
	}
	r.factory = informers.NewSharedInformerFactoryWithOptions(o.Client, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = Selector() }))
	inf := r.factory.Core().V1().Pods()
	r.pods = inf.Lister()
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) { r.updated(old, cur) },
		DeleteFunc: r.deleted,
	}); err != nil {
		return nil, fmt.Errorf("kubernetes: watch pods: %w", err)
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.ctx, r.cancel = wctx, cancel
	r.factory.Start(wctx.Done())
	for typ, ok := range r.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			cancel()
			r.factory.Shutdown()
			return nil, fmt.Errorf("kubernetes: the watch of %v in namespace %s did not sync (RBAC: list and watch pods?): %w", typ, ns, context.Cause(ctx))
		}
	}
	return r, nil
}

// Namespace is where the runtime makes its objects.
func (r *Runtime[T]) Namespace() string { return r.ns }

// lookup is the topology of container id and its number.
func (r *Runtime[T]) lookup(id string) (*topo, int, error) {
	tenant, name, num, ok := runtime.Parse(id)
	c, err := strconv.Atoi(num)
	if !ok || err != nil {
		return nil, 0, fmt.Errorf("%w %q", launcher.ErrUnknown, id)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	tp := r.tops[Name(tenant, name)]
	if tp == nil || (!tp.wanted[c] && !tp.stopped[c]) {
		return nil, 0, fmt.Errorf("%w %q", launcher.ErrUnknown, id)
	}
	return tp, c, nil
}

// StartContainer starts container c of t (launcher.ErrDuplicate if it
// runs): the first makes the topology's Secret and StatefulSet, a later
// one beyond the replicas adds its credential and scales up. A
// StatefulSet this runtime did not make (a daemon that took a lost
// one's topology over) is adopted: its container's pod is replaced, so
// that it starts with its new credential under its new manager.
func (r *Runtime[T]) StartContainer(ctx context.Context, t T, c int) error {
	tenant, name := t.Tenant(), t.Name()
	sts := Name(tenant, name)
	r.ops.Lock()
	defer r.ops.Unlock()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return launcher.ErrClosed
	}
	tp := r.tops[sts]
	if tp != nil && tp.wanted[c] {
		r.mu.Unlock()
		return fmt.Errorf("%w: %s", launcher.ErrDuplicate, runtime.ID(tenant, name, c))
	}
	// No container wanted: the objects are not there (or were deleted
	// when the last one stopped), and are made.
	fresh := tp == nil || len(tp.wanted) == 0
	r.mu.Unlock()
	pod, err := r.pod(ctx, t, c)
	if err != nil {
		return err
	}
	if fresh {
		if tp == nil {
			tp = &topo{tenant: tenant, name: name, sts: sts, wanted: map[int]bool{}, stopped: map[int]bool{},
				past: map[int]int{}, ours: map[types.UID]bool{}, inherited: map[int]bool{}, exited: map[int]string{},
				crashes: map[int]int{}, failed: map[int]bool{}, started: map[int]bool{}}
		}
		adopted, uid, err := r.create(ctx, tp, c, pod)
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.tops[sts] = tp
		tp.uid = uid
		tp.wanted[c] = true
		delete(tp.stopped, c)
		for i := 1; i <= adopted; i++ {
			tp.inherited[i] = i != c
		}
		r.mu.Unlock()
		if adopted > 0 {
			return r.replace(ctx, tp, c, 0)
		}
		return nil
	}
	if err := r.putCreds(ctx, tp, c, pod); err != nil {
		return err
	}
	r.mu.Lock()
	tp.wanted[c] = true
	delete(tp.stopped, c)
	n, inherited := tp.replicas(), tp.inherited[c]
	delete(tp.inherited, c)
	r.mu.Unlock()
	if err := r.scale(ctx, tp, n); err != nil {
		return err
	}
	if inherited {
		return r.replace(ctx, tp, c, 0)
	}
	return nil
}

// replicas is the StatefulSet's size for the wanted containers (under
// mu): the highest one; a container below it that is not wanted keeps
// running until the ones above it go (a StatefulSet's pods are 0..N-1).
func (tp *topo) replicas() int {
	n := 0
	for c := range tp.wanted {
		n = max(n, c)
	}
	return n
}

// create makes the topology's Secret and StatefulSet with c replicas; an
// existing StatefulSet is adopted (its replicas, > 0) and scaled to at
// least c. uid is the StatefulSet's.
func (r *Runtime[T]) create(ctx context.Context, tp *topo, c int, pod Pod) (adopted int, uid types.UID, err error) {
	data := map[string][]byte{}
	for k, v := range pod.SecretEnv {
		data[k] = []byte(v)
	}
	if pod.Creds != nil {
		data[process.CredsKey(c)] = pod.Creds
	}
	sec := r.secret(tp.tenant, tp.name, data)
	if _, err := r.client.CoreV1().Secrets(r.ns).Create(ctx, sec, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		if err := r.putCreds(ctx, tp, c, pod); err != nil {
			return 0, "", err
		}
	} else if err != nil {
		return 0, "", fmt.Errorf("kubernetes: topology %s: create secret %s/%s: %w", tp.name, r.ns, tp.sts, err)
	}
	made, err := r.client.AppsV1().StatefulSets(r.ns).Create(ctx, r.statefulSet(tp.tenant, tp.name, c, pod), metav1.CreateOptions{})
	if err == nil {
		return 0, made.UID, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return 0, "", fmt.Errorf("kubernetes: topology %s: create statefulset %s/%s: %w", tp.name, r.ns, tp.sts, err)
	}
	// Adopted: its pods are this daemon's to replace, from this daemon's
	// template (another image, another NATS URL than the node that made
	// it); OnDelete, the controller rolls none itself.
	want := r.statefulSet(tp.tenant, tp.name, c, pod)
	sets := r.client.AppsV1().StatefulSets(r.ns)
	for {
		cur, err := sets.Get(ctx, tp.sts, metav1.GetOptions{})
		if err != nil {
			return 0, "", fmt.Errorf("kubernetes: topology %s: adopt statefulset %s/%s: %w", tp.name, r.ns, tp.sts, err)
		}
		n := 0
		if cur.Spec.Replicas != nil {
			n = int(*cur.Spec.Replicas)
		}
		cur.Spec.Template, cur.Spec.UpdateStrategy = want.Spec.Template, want.Spec.UpdateStrategy
		if n < c {
			cur.Spec.Replicas = want.Spec.Replicas
		}
		_, err = sets.Update(ctx, cur, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return 0, "", fmt.Errorf("kubernetes: topology %s: adopt statefulset %s/%s: %w", tp.name, r.ns, tp.sts, err)
		}
		r.log.Info("kubernetes: adopted a topology's statefulset", "topology", tp.name, "tenant", tp.tenant, "statefulset", tp.sts, "replicas", max(n, c))
		return max(n, 1), cur.UID, nil
	}
}

// putCreds adds container c's credential to the topology's Secret.
func (r *Runtime[T]) putCreds(ctx context.Context, tp *topo, c int, pod Pod) error {
	if pod.Creds == nil {
		return nil
	}
	secrets := r.client.CoreV1().Secrets(r.ns)
	for {
		sec, err := secrets.Get(ctx, tp.sts, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("kubernetes: topology %s: secret %s/%s: %w", tp.name, r.ns, tp.sts, err)
		}
		if sec.Data == nil {
			sec.Data = map[string][]byte{}
		}
		sec.Data[process.CredsKey(c)] = pod.Creds
		for k, v := range pod.SecretEnv {
			sec.Data[k] = []byte(v)
		}
		_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue // changed meanwhile: read it again
		}
		if err != nil {
			return fmt.Errorf("kubernetes: topology %s: update secret %s/%s: %w", tp.name, r.ns, tp.sts, err)
		}
		return nil
	}
}

// markStarted records in the topology's Secret that container c ran, so
// that a pod that replaces its pod starts as a restart (a sink appends to
// what it wrote, process.ContainerFromPod). Called from the watch's
// handler; bounded by the runtime's life.
func (r *Runtime[T]) markStarted(tp *topo, c int) {
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	secrets := r.client.CoreV1().Secrets(r.ns)
	for {
		sec, err := secrets.Get(ctx, tp.sts, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return // the topology is gone
		}
		if err != nil {
			r.log.Warn("kubernetes: record a container's start", "topology", tp.name, "container", c, "err", err)
			return
		}
		if sec.Data == nil {
			sec.Data = map[string][]byte{}
		}
		sec.Data[process.StartedKey(c)] = []byte("1")
		_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			r.log.Warn("kubernetes: record a container's start", "topology", tp.name, "container", c, "err", err)
		}
		return
	}
}

// scale sets the StatefulSet's replicas.
func (r *Runtime[T]) scale(ctx context.Context, tp *topo, n int) error {
	patch := []byte(`{"spec":{"replicas":` + strconv.Itoa(n) + `}}`)
	if _, err := r.client.AppsV1().StatefulSets(r.ns).Patch(ctx, tp.sts, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("kubernetes: topology %s: scale statefulset %s/%s to %d: %w", tp.name, r.ns, tp.sts, n, err)
	}
	return nil
}

// Stop stops container c: it is no longer wanted (the StatefulSet
// shrinks when it is the last one) and shows as STOPPED.
func (r *Runtime[T]) Stop(ctx context.Context, id string) error {
	return r.drop(ctx, id, true)
}

// Remove forgets container c; removing a topology's last container
// deletes its StatefulSet and Secret.
func (r *Runtime[T]) Remove(ctx context.Context, id string) error {
	return r.drop(ctx, id, false)
}

func (r *Runtime[T]) drop(ctx context.Context, id string, stop bool) error {
	r.ops.Lock()
	defer r.ops.Unlock()
	tp, c, err := r.lookup(id)
	if err != nil {
		return err
	}
	r.mu.Lock()
	delete(tp.wanted, c)
	if stop {
		tp.stopped[c] = true
	} else {
		delete(tp.stopped, c)
	}
	n, gone := tp.replicas(), len(tp.wanted) == 0
	r.mu.Unlock()
	if !gone {
		return r.scale(ctx, tp, n)
	}
	// The topology's end is carried out whatever asked for it (its
	// manager may be closing): a deletion that fails keeps the topology,
	// for Close to try again.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
	defer cancel()
	if err := r.deleteObjects(dctx, tp); err != nil {
		return err
	}
	r.mu.Lock()
	if len(tp.wanted) == 0 && len(tp.stopped) == 0 && r.tops[tp.sts] == tp {
		delete(r.tops, tp.sts)
	}
	r.mu.Unlock()
	return nil
}

// deleteTimeout bounds the deletion of a topology's objects.
const deleteTimeout = 30 * time.Second

// deleteObjects deletes the topology's StatefulSet (its pods go with it:
// the garbage collector deletes them) and Secret.
func (r *Runtime[T]) deleteObjects(ctx context.Context, tp *topo) error {
	bg := metav1.DeletePropagationBackground
	var errs []error
	if err := r.client.AppsV1().StatefulSets(r.ns).Delete(ctx, tp.sts, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("kubernetes: topology %s: delete statefulset %s/%s: %w", tp.name, r.ns, tp.sts, err))
	}
	if err := r.client.CoreV1().Secrets(r.ns).Delete(ctx, tp.sts, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("kubernetes: topology %s: delete secret %s/%s: %w", tp.name, r.ns, tp.sts, err))
	}
	return errors.Join(errs...)
}

// Restart replaces container c's pod (the StatefulSet controller makes
// it again).
func (r *Runtime[T]) Restart(ctx context.Context, id string) error {
	tp, c, err := r.lookup(id)
	if err != nil {
		return err
	}
	return r.replace(ctx, tp, c, -1)
}

// replace deletes container c's pod with grace seconds (-1: the pod's
// own), as the runtime's own doing: no BACKOFF is reported for it.
func (r *Runtime[T]) replace(ctx context.Context, tp *topo, c int, grace int64) error {
	name := PodName(tp.sts, c)
	p, err := r.client.CoreV1().Pods(r.ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil // not made yet: it starts as it is
	}
	if err != nil {
		return fmt.Errorf("kubernetes: container %d of %s: pod %s/%s: %w", c, tp.name, r.ns, name, err)
	}
	r.mu.Lock()
	tp.ours[p.UID] = true
	r.mu.Unlock()
	return r.deletePod(ctx, tp, c, p.UID, grace)
}

func (r *Runtime[T]) deletePod(ctx context.Context, tp *topo, c int, uid types.UID, grace int64) error {
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
	if grace >= 0 {
		opts.GracePeriodSeconds = &grace
	}
	name := PodName(tp.sts, c)
	if err := r.client.CoreV1().Pods(r.ns).Delete(ctx, name, opts); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("kubernetes: container %d of %s: delete pod %s/%s: %w", c, tp.name, r.ns, name, err)
	}
	return nil
}

// Kill deletes the pod of a container declared lost at once (grace 0);
// the StatefulSet controller makes it again, reported as after any exit.
// pid is not used: a pod's processes are the cluster's.
func (r *Runtime[T]) Kill(id string, _ int) error {
	tp, c, err := r.lookup(id)
	if err != nil {
		return err
	}
	p, err := r.pods.Pods(r.ns).Get(PodName(tp.sts, c))
	if err != nil {
		return fmt.Errorf("kubernetes: container %s: no pod to kill: %w", id, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	return r.deletePod(ctx, tp, c, p.UID, 0)
}

// killTimeout bounds Kill's call (the manager's Kill takes no context).
const killTimeout = 30 * time.Second

// LogPath is "": a pod's output is the cluster's, which Logs reads.
func (r *Runtime[T]) LogPath(string) string { return "" }

// Close deletes every topology's StatefulSet and Secret (their pods go
// with them, as a daemon's processes stop with it; with KeepOnClose, only
// those of topologies with no container wanted) and stops the watch.
func (r *Runtime[T]) Close(ctx context.Context) error {
	r.ops.Lock()
	defer r.ops.Unlock()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	tops := make([]*topo, 0, len(r.tops))
	for _, tp := range r.tops {
		tops = append(tops, tp)
	}
	r.tops = map[string]*topo{}
	r.mu.Unlock()
	slices.SortFunc(tops, func(a, b *topo) int { return cmpString(a.sts, b.sts) })
	var errs []error
	for _, tp := range tops {
		if r.keep && len(tp.wanted) > 0 {
			r.log.Info("kubernetes: the topology's pods keep running for the node that takes it over", "topology", tp.name, "tenant", tp.tenant, "statefulset", tp.sts)
			continue
		}
		errs = append(errs, r.deleteObjects(ctx, tp))
	}
	r.cancel()
	r.factory.Shutdown()
	return errors.Join(errs...)
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
