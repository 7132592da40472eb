package kube

import (
	"context"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// binder stands for kube-scheduler, which the harness does not run: it
// binds every Pod without a node whose schedulerName is the default one
// to a running test kubelet, round-robin over those the Pod fits (its
// nodeSelector matches the node's labels, and it tolerates the node's
// NoSchedule and NoExecute taints). Resources, affinity and topology
// spread are not considered. A Pod that fits no kubelet stays Pending
// until one that it fits runs. A Pod of another scheduler (a scheduler
// under test) is left to it.
type binder struct {
	c      *Cluster
	cancel context.CancelFunc
	done   chan struct{}
	kick   chan struct{}
	store  cache.Store
	next   int // round-robin position
	// bound holds the pods bound but maybe still in the store (the
	// watch has not yet told they left the selector): binding one
	// again would fail and, worse, move the round-robin on.
	bound map[types.UID]bool
}

// addKubelet makes a running kubelet a target of the binder, started
// with the first kubelet unless Options.NoBinder.
func (c *Cluster) addKubelet(k *Kubelet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.kubelets[k.name] = k
	if c.opts.NoBinder {
		return
	}
	if c.binder == nil {
		c.binder = startBinder(c)
	}
	c.binder.poke()
}

// removeKubelet forgets a stopped kubelet. The last one stops the binder
// (the next kubelet starts another): with no kubelet it has nothing to
// bind to, and its watch would outlive the test that ran the kubelets,
// as goroutines a later test of a Shared cluster's package sees appear.
func (c *Cluster) removeKubelet(k *Kubelet) {
	c.mu.Lock()
	if c.kubelets[k.name] == k {
		delete(c.kubelets, k.name)
	}
	var b *binder
	if len(c.kubelets) == 0 {
		b, c.binder = c.binder, nil
	}
	c.mu.Unlock()
	if b != nil {
		b.stop()
	}
}

func startBinder(c *Cluster) *binder {
	ctx, cancel := context.WithCancel(context.Background())
	b := &binder{c: c, cancel: cancel, done: make(chan struct{}), kick: make(chan struct{}, 1), bound: map[types.UID]bool{}}
	unbound := fields.OneTermEqualSelector("spec.nodeName", "").String()
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (kruntime.Object, error) {
			o.FieldSelector = unbound
			return c.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = unbound
			return c.Client.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, o)
		},
	}, &corev1.Pod{}, 0, cache.Indexers{})
	b.store = inf.GetStore()
	poke := func(any) { b.poke() }
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    poke,
		UpdateFunc: func(_, o any) { b.poke() },
	})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		inf.RunWithContext(ctx)
	}()
	go func() {
		defer close(b.done)
		defer wg.Wait()
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return
		}
		var retry <-chan time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case <-b.kick:
			case <-retry:
			}
			retry = nil
			if !b.bindAll(ctx) {
				// A bind failed for a reason other than the pod
				// having moved on: try again shortly.
				retry = time.After(100 * time.Millisecond)
			}
		}
	}()
	return b
}

func (b *binder) poke() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

func (b *binder) stop() {
	b.cancel()
	<-b.done
}

// bindAll binds every unbound pod it can, oldest first; false when a
// binding failed and should be tried again.
func (b *binder) bindAll(ctx context.Context) bool {
	var pods []*corev1.Pod
	inStore := map[types.UID]bool{}
	for _, o := range b.store.List() {
		p := o.(*corev1.Pod)
		inStore[p.UID] = true
		if p.Spec.NodeName == "" && p.DeletionTimestamp == nil && p.Spec.SchedulerName == corev1.DefaultSchedulerName && !b.bound[p.UID] {
			pods = append(pods, p)
		}
	}
	for uid := range b.bound {
		if !inStore[uid] {
			delete(b.bound, uid)
		}
	}
	sort.Slice(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	ok := true
	for _, p := range pods {
		node := b.pick(p)
		if node == "" {
			continue
		}
		err := b.c.Client.CoreV1().Pods(p.Namespace).Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node},
		}, metav1.CreateOptions{})
		switch {
		case err == nil || apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			b.bound[p.UID] = true // bound, or no longer to bind
		case ctx.Err() == nil:
			ok = false
		}
	}
	return ok
}

// pick chooses the node of a pod: the next, round-robin, of the running
// kubelets (by name) that it fits; "" if none.
func (b *binder) pick(p *corev1.Pod) string {
	b.c.mu.Lock()
	var names []string
	for name, k := range b.c.kubelets {
		if fits(p, k) {
			names = append(names, name)
		}
	}
	b.c.mu.Unlock()
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	name := names[b.next%len(names)]
	b.next++
	return name
}

// fits: the pod's nodeSelector matches the kubelet's node labels, and
// it tolerates each taint that would keep it off the node.
func fits(p *corev1.Pod, k *Kubelet) bool {
	if !labels.SelectorFromSet(p.Spec.NodeSelector).Matches(labels.Set(k.labels)) {
		return false
	}
	for i := range k.opts.Taints {
		taint := &k.opts.Taints[i]
		if taint.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		tolerated := false
		for j := range p.Spec.Tolerations {
			if p.Spec.Tolerations[j].ToleratesTaint(klog.Background(), taint, false) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			return false
		}
	}
	return true
}
