package kube

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podWorker runs one pod (one UID) on a kubelet. Its goroutine (run)
// alone owns the pod's processes and state: the informer hands it the
// pod's newest version (update), each process's end arrives on exits,
// and it writes the pod's status after every change. The mutex guards
// only what other goroutines read: the newest pod handed over, and each
// container's pid and log file.
type podWorker struct {
	k    *Kubelet
	uid  types.UID
	dir  string
	wake chan struct{} // cap 1: the newest pod is waiting in next
	// exits receives each process's end; buffered for every
	// container, so a process ending while the worker writes a
	// status never blocks its reaper.
	exits chan exit

	mu         sync.Mutex
	next       *corev1.Pod  // newest pod not yet taken by run
	gone       bool         // the pod is no longer in the API
	inits      []*container // the init containers, run one by one first
	containers []*container // the app containers

	// Owned by run.
	pod        *corev1.Pod
	started    metav1.Time
	volumes    map[string]string // volume name: its local dir
	prepared   bool
	prepErr    error
	prepNext   time.Time
	prepWait   time.Duration
	initDone   bool // every init container has succeeded
	terminal   bool
	conditions map[corev1.PodConditionType]corev1.PodCondition
	written    *corev1.PodStatus // what the last status write sent
}

// container is one container of the pod and its current process.
type container struct {
	spec corev1.Container
	init bool
	// Read by other goroutines under the worker's mu.
	pid     int
	logPath string

	gen       int // counts starts; an exit of an older one is stale
	running   bool
	done      bool // terminated for good (restart policy)
	everRan   bool
	restarts  int32
	startedAt time.Time
	state     corev1.ContainerState
	last      corev1.ContainerState
	next      time.Time // when it may (re)start
	backoff   time.Duration
}

// exit is a process's end.
type exit struct {
	c    *container
	gen  int
	code int32
	at   time.Time
	err  error
}

func newPodWorker(k *Kubelet, pod *corev1.Pod) *podWorker {
	w := &podWorker{
		k:          k,
		uid:        pod.UID,
		dir:        filepath.Join(k.dir, "pods", fmt.Sprintf("%s_%s_%.8s", pod.Namespace, pod.Name, pod.UID)),
		wake:       make(chan struct{}, 1),
		exits:      make(chan exit, len(pod.Spec.InitContainers)+len(pod.Spec.Containers)+1),
		next:       pod,
		started:    metav1.Now(),
		conditions: map[corev1.PodConditionType]corev1.PodCondition{},
	}
	for _, c := range pod.Spec.InitContainers {
		w.inits = append(w.inits, &container{spec: c, init: true, backoff: k.opts.RestartBackoff})
	}
	for _, c := range pod.Spec.Containers {
		w.containers = append(w.containers, &container{spec: c, backoff: k.opts.RestartBackoff})
	}
	w.initDone = len(w.inits) == 0
	w.wake <- struct{}{}
	return w
}

// update hands the worker the pod's newest version (nil and gone when
// it left the API). Only the newest counts: an older one not yet taken
// is replaced.
func (w *podWorker) update(pod *corev1.Pod, gone bool) {
	w.mu.Lock()
	if pod != nil {
		w.next = pod
	}
	w.gone = w.gone || gone
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// take returns the newest pod handed over since the last take (nil if
// none) and whether the pod is gone.
func (w *podWorker) take() (*corev1.Pod, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.next
	w.next = nil
	return p, w.gone
}

// run is the pod's life on this node: prepare its volumes, start its
// containers, restart them by its restart policy, report each change,
// and on deletion stop them and remove the pod.
func (w *podWorker) run() {
	defer w.k.wg.Done()
	for {
		pod, gone := w.take()
		if pod != nil {
			w.pod = pod
		}
		switch {
		case gone:
			w.k.logf("%s/%s removed from the API: killing its processes", w.pod.Namespace, w.pod.Name)
			w.kill()
			return
		case w.pod.DeletionTimestamp != nil:
			w.terminate()
			return
		}
		if !w.terminal {
			w.sync()
		}
		w.writeStatus()
		var timer <-chan time.Time
		if at, ok := w.nextDue(); ok {
			timer = time.After(time.Until(at))
		}
		select {
		case <-w.wake:
		case e := <-w.exits:
			w.exited(e)
		case <-timer:
		case <-w.k.ctx.Done():
			w.kill()
			return
		}
	}
}

// all is the init containers, then the app containers.
func (w *podWorker) all() []*container {
	return append(append([]*container(nil), w.inits...), w.containers...)
}

// sync prepares the pod's volumes if not yet done, then runs the init
// containers one at a time, each to its success, then starts each app
// container that is due to (re)start.
func (w *podWorker) sync() {
	now := time.Now()
	if !w.prepared {
		if now.Before(w.prepNext) {
			return
		}
		w.volumes, w.prepErr = w.materialise()
		if w.prepErr != nil {
			w.prepWait = w.k.nextBackoff(w.prepWait, 0)
			w.prepNext = now.Add(w.prepWait)
			w.k.logf("%s/%s: volumes: %v (again in %v)", w.pod.Namespace, w.pod.Name, w.prepErr, w.prepWait)
			return
		}
		w.prepared = true
	}
	if !w.initDone {
		for _, c := range w.inits {
			if !c.done {
				w.startDue(c, now)
				return
			}
		}
	}
	for _, c := range w.containers {
		w.startDue(c, now)
	}
}

// startDue starts c unless it runs, is done or waits for its back-off;
// a start that fails waits for the next back-off, reporting why.
func (w *podWorker) startDue(c *container, now time.Time) {
	if c.running || c.done || now.Before(c.next) {
		return
	}
	err := w.startContainer(c)
	if err == nil {
		return
	}
	reason := "CreateContainerConfigError"
	if se, ok := err.(startError); ok {
		reason = se.reason
	}
	c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: err.Error()}}
	c.backoff = w.k.nextBackoff(c.backoff, 0)
	c.next = now.Add(c.backoff)
	w.k.logf("%s/%s: container %s: %v (again in %v)", w.pod.Namespace, w.pod.Name, c.spec.Name, err, c.backoff)
}

// nextBackoff doubles a back-off up to the kubelet's maximum; a
// container that ran for twice the maximum starts over.
func (k *Kubelet) nextBackoff(prev, ran time.Duration) time.Duration {
	if prev == 0 || ran >= 2*k.opts.MaxRestartBackoff {
		return k.opts.RestartBackoff
	}
	return min(2*prev, k.opts.MaxRestartBackoff)
}

// startContainer starts c's process, the output to a new log file.
func (w *podWorker) startContainer(c *container) error {
	l, err := w.launchSpec(&c.spec)
	if err != nil {
		return err
	}
	restarts := c.restarts
	if c.everRan {
		restarts++
	}
	logPath := filepath.Join(w.dir, "logs", c.spec.Name, strconv.Itoa(int(restarts))+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command(l.path, l.args...)
	cmd.Env, cmd.Dir = l.env, l.dir
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return startError{reason: "RunContainerError", err: err}
	}
	c.gen++
	c.running, c.everRan, c.restarts = true, true, restarts
	c.startedAt = time.Now()
	c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(c.startedAt)}}
	w.mu.Lock()
	c.pid, c.logPath = cmd.Process.Pid, logPath
	w.mu.Unlock()
	w.k.logf("%s/%s: container %s started (pid %d, restarts %d)", w.pod.Namespace, w.pod.Name, c.spec.Name, cmd.Process.Pid, restarts)
	gen := c.gen
	go func() {
		err := cmd.Wait()
		w.exits <- exit{c: c, gen: gen, code: exitCode(cmd.ProcessState), at: time.Now(), err: err}
	}()
	return nil
}

// startError is a start that failed past the container's configuration
// (the program could not be executed): the reason differs.
type startError struct {
	reason string
	err    error
}

func (e startError) Error() string { return e.err.Error() }

// exitCode is a process's exit as a container runtime reports it: its
// status, or 128 + the signal that killed it.
func exitCode(ps *os.ProcessState) int32 {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int32(ws.Signal())
	}
	return int32(ps.ExitCode())
}

// exited records a process's end and, by the pod's restart policy,
// schedules its restart or marks the container done; once every
// container is done the pod is terminal.
func (w *podWorker) exited(e exit) {
	c := e.c
	if e.gen != c.gen || !c.running {
		return
	}
	c.running = false
	w.mu.Lock()
	c.pid = 0
	w.mu.Unlock()
	reason := "Completed"
	if e.code != 0 {
		reason = "Error"
	}
	term := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode:    e.code,
		Reason:      reason,
		StartedAt:   metav1.NewTime(c.startedAt),
		FinishedAt:  metav1.NewTime(e.at),
		ContainerID: w.containerID(c),
	}}
	w.k.logf("%s/%s: container %s exited with %d", w.pod.Namespace, w.pod.Name, c.spec.Name, e.code)
	if c.init && e.code == 0 {
		c.state, c.done = term, true
		w.initDone = true
		for _, o := range w.inits {
			w.initDone = w.initDone && o.done
		}
		return
	}
	policy := w.pod.Spec.RestartPolicy
	if policy == corev1.RestartPolicyAlways || (policy == corev1.RestartPolicyOnFailure && e.code != 0) {
		c.last = term
		c.backoff = w.k.nextBackoff(c.backoff, e.at.Sub(c.startedAt))
		c.next = e.at.Add(c.backoff)
		c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason:  "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off %v restarting container %s", c.backoff, c.spec.Name),
		}}
		return
	}
	c.state, c.done = term, true
	if c.init { // failed, not to be restarted: the pod has failed
		w.terminal = true
		return
	}
	w.terminal = true
	for _, o := range w.containers {
		w.terminal = w.terminal && o.done
	}
}

// nextDue is the earliest time a container (or the volumes) is due to
// (re)start, for the run loop's timer.
func (w *podWorker) nextDue() (time.Time, bool) {
	var at time.Time
	consider := func(t time.Time) {
		if at.IsZero() || t.Before(at) {
			at = t
		}
	}
	if w.terminal {
		return at, false
	}
	if !w.prepared {
		consider(w.prepNext)
		return at, true
	}
	due := w.containers
	if !w.initDone {
		due = w.inits
	}
	for _, c := range due {
		if !c.running && !c.done {
			consider(c.next)
		}
	}
	return at, !at.IsZero()
}

// terminate is a graceful deletion: SIGTERM to every process, SIGKILL
// to those left once the pod's grace period is over (prestop hooks are
// not run), the final status written, and the pod removed from the API
// with grace 0 (as the kubelet does once its containers are gone), which
// lets a StatefulSet make its successor.
func (w *podWorker) terminate() {
	grace := 30 * time.Second
	switch {
	case w.pod.DeletionGracePeriodSeconds != nil:
		grace = time.Duration(*w.pod.DeletionGracePeriodSeconds) * time.Second
	case w.pod.Spec.TerminationGracePeriodSeconds != nil:
		grace = time.Duration(*w.pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	w.k.logf("%s/%s deleted: stopping its processes (grace %v)", w.pod.Namespace, w.pod.Name, grace)
	// No grace (a forced deletion, whose update the API server writes
	// before removing the pod) is SIGKILL at once: a SIGTERM first
	// would let the process act on it in the moment before the KILL.
	sig := syscall.SIGTERM
	if grace <= 0 {
		sig = syscall.SIGKILL
	}
	w.signalAll(sig)
	deadline := time.After(grace)
	for w.anyRunning() {
		select {
		case e := <-w.exits:
			w.exited(e)
		case <-w.wake:
			if _, gone := w.take(); gone {
				w.signalAll(syscall.SIGKILL)
			}
		case <-deadline:
			w.signalAll(syscall.SIGKILL)
		case <-w.k.ctx.Done():
			w.kill()
			return
		}
	}
	w.finalStatus()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := w.k.c.Client.CoreV1().Pods(w.pod.Namespace).Delete(ctx, w.pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64),
		Preconditions:      &metav1.Preconditions{UID: &w.uid},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		w.k.logf("%s/%s: delete: %v", w.pod.Namespace, w.pod.Name, err)
	}
}

// finalStatus marks every container terminated for good (those that
// were waiting to restart keep their last end) and writes the status a
// deleted pod ends with.
func (w *podWorker) finalStatus() {
	for _, c := range w.all() {
		if c.state.Terminated == nil && c.last.Terminated != nil {
			c.state = c.last
		}
		c.done = true
	}
	w.terminal = true
	w.writeStatus()
}

// kill ends every process at once (SIGKILL) and waits for each: the
// pod left the API without a grace period, or the kubelet stops.
func (w *podWorker) kill() {
	w.signalAll(syscall.SIGKILL)
	for w.anyRunning() {
		w.exited(<-w.exits)
	}
}

func (w *podWorker) signalAll(sig syscall.Signal) {
	for _, c := range w.all() {
		if c.running {
			w.mu.Lock()
			pid := c.pid
			w.mu.Unlock()
			_ = syscall.Kill(-pid, sig) // the process's group: what it forked too
		}
	}
}

func (w *podWorker) anyRunning() bool {
	for _, c := range w.all() {
		if c.running {
			return true
		}
	}
	return false
}

func (w *podWorker) containerID(c *container) string {
	return fmt.Sprintf("ardea-test://%s/%s/%d", w.uid, c.spec.Name, c.restarts)
}

func (w *podWorker) logPath(name string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.all() {
		if c.spec.Name == name {
			return c.logPath
		}
	}
	return ""
}

func (w *podWorker) pid(name string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.all() {
		if c.spec.Name == name {
			return c.pid
		}
	}
	return 0
}
