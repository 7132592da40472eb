package kube

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/runtime"
)

// A container's state is its pod's, as the launcher's states say it:
//
//	no pod yet, Pending, ContainerCreating     STARTING
//	the host container running                 RUNNING
//	the host exited, CrashLoopBackOff, the pod
//	  being deleted (Kubernetes makes it again) BACKOFF
//	Stop                                       STOPPED
//
// Kubernetes restarts a host for ever (a StatefulSet's pods restart
// Always); as the launcher, the runtime gives a host up (FAILED, its
// topology fails) once it exited more than MaxRestarts times in a row,
// each run shorter than StableAfter. Restarts counts the
// restarts of its pods' host container and each pod replaced. PID is 0:
// a pod's processes are not the daemon's (the manager's watch of missed
// heartbeats, which kills a silent host's process, is the kubelet's and
// the pod's to do).

// Status is container id's state from its pod in the watch's cache.
func (r *Runtime[T]) Status(id string) (launcher.ProcessStatus, bool) {
	tp, c, err := r.lookup(id)
	if err != nil {
		return launcher.ProcessStatus{}, false
	}
	return r.status(tp, c), true
}

// List is every container's state, by topology and container.
func (r *Runtime[T]) List() []launcher.ProcessStatus {
	type key struct {
		tp *topo
		c  int
	}
	var keys []key
	r.mu.Lock()
	for _, tp := range r.tops {
		for c := range tp.wanted {
			keys = append(keys, key{tp, c})
		}
		for c := range tp.stopped {
			keys = append(keys, key{tp, c})
		}
	}
	r.mu.Unlock()
	out := make([]launcher.ProcessStatus, 0, len(keys))
	for _, k := range keys {
		out = append(out, r.status(k.tp, k.c))
	}
	slices.SortFunc(out, func(a, b launcher.ProcessStatus) int { return cmpString(a.ID, b.ID) })
	return out
}

func (r *Runtime[T]) status(tp *topo, c int) launcher.ProcessStatus {
	ps := launcher.ProcessStatus{ID: runtime.ID(tp.tenant, tp.name, c), State: launcher.StateStarting}
	r.mu.Lock()
	stopped, past, uid, failed := tp.stopped[c], tp.past[c], tp.uid, tp.failed[c]
	r.mu.Unlock()
	ps.Restarts = past
	if stopped {
		ps.State = launcher.StateStopped
		return ps
	}
	if failed {
		ps.State = launcher.StateFailed
	}
	p, err := r.pods.Pods(r.ns).Get(PodName(tp.sts, c))
	if err != nil || !ownedBy(p, uid) {
		return ps // not made yet
	}
	podStatus(&ps, p)
	if failed {
		ps.State = launcher.StateFailed // given up on, whatever the kubelet does meanwhile
	}
	return ps
}

// ownedBy says whether p is a pod of the StatefulSet of uid (not of an
// earlier one of the same name, going away).
func ownedBy(p *corev1.Pod, uid types.UID) bool {
	ref := metav1.GetControllerOf(p)
	return uid == "" || ref != nil && ref.UID == uid
}

// hostStatus is the status of the pod's host container (nil before it
// is created).
func hostStatus(p *corev1.Pod) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == hostContainer {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// podStatus sets ps from pod p.
func podStatus(ps *launcher.ProcessStatus, p *corev1.Pod) {
	cs := hostStatus(p)
	if cs != nil {
		ps.Restarts += int(cs.RestartCount)
		if t := cs.LastTerminationState.Terminated; t != nil {
			ps.LastExit, ps.LastError = exitText(t), t.Message
		}
	}
	switch {
	case p.DeletionTimestamp != nil, p.Status.Phase == corev1.PodFailed, p.Status.Phase == corev1.PodSucceeded:
		ps.State = launcher.StateBackoff
	case cs == nil:
		ps.State = launcher.StateStarting
		if c := podCondition(p, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse {
			ps.LastError = c.Reason + ": " + c.Message
		}
	case cs.State.Running != nil:
		ps.State, ps.StartedAt = launcher.StateRunning, cs.State.Running.StartedAt.Time
	case cs.State.Terminated != nil:
		ps.State, ps.LastExit, ps.LastError = launcher.StateBackoff, exitText(cs.State.Terminated), cs.State.Terminated.Message
	case cs.State.Waiting != nil:
		w := cs.State.Waiting
		ps.State = launcher.StateStarting
		if cs.RestartCount > 0 || w.Reason == "CrashLoopBackOff" {
			ps.State = launcher.StateBackoff
		}
		if w.Message != "" || (w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "CrashLoopBackOff") {
			ps.LastError = strings.TrimSuffix(w.Reason+": "+w.Message, ": ")
		}
	}
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// exitText says how a run ended, as the launcher's LastExit does.
func exitText(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Signal != 0:
		return fmt.Sprintf("signal %d", t.Signal)
	case t.ExitCode > 128:
		return fmt.Sprintf("exit status %d (signal %d; %s)", t.ExitCode, t.ExitCode-128, t.Reason)
	case t.Reason != "" && t.Reason != "Error" && t.Reason != "Completed":
		return fmt.Sprintf("exit status %d (%s)", t.ExitCode, t.Reason)
	}
	return fmt.Sprintf("exit status %d", t.ExitCode)
}

// container is the topology and container of one of the runtime's pods
// (its name is <statefulset>-<ordinal>), if the runtime runs it.
func (r *Runtime[T]) container(p *corev1.Pod) (*topo, int, bool) {
	i := strings.LastIndexByte(p.Name, '-')
	if i < 0 {
		return nil, 0, false
	}
	ord, err := strconv.Atoi(p.Name[i+1:])
	if err != nil {
		return nil, 0, false
	}
	tp := r.tops[p.Name[:i]]
	return tp, ord + 1, tp != nil && tp.wanted[ord+1] && ownedBy(p, tp.uid)
}

// updated reports a host that exited in its pod (the kubelet restarts
// it), once per run: seen as its container leaving the running state, or
// as its restart count growing, whichever the watch shows first. A pod
// being deleted is deleted's to report.
func (r *Runtime[T]) updated(old, cur any) {
	op, ok1 := old.(*corev1.Pod)
	p, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 || op.UID != p.UID {
		return
	}
	ocs, cs := hostStatus(op), hostStatus(p)
	if cs == nil {
		return
	}
	if cs.State.Running != nil {
		r.mu.Lock()
		tp, c, ok := r.container(p)
		first := ok && !tp.started[c]
		if first {
			tp.started[c] = true
		}
		r.mu.Unlock()
		if first {
			r.markStarted(tp, c)
		}
	}
	ended := -1 // the restart count of the run that ended
	switch {
	case ocs != nil && cs.RestartCount > ocs.RestartCount:
		ended = int(ocs.RestartCount)
	case ocs == nil && cs.RestartCount > 0:
		ended = int(cs.RestartCount) - 1
	case ocs != nil && ocs.State.Running != nil && cs.State.Running == nil && p.DeletionTimestamp == nil:
		ended = int(cs.RestartCount)
	}
	if ended < 0 {
		return
	}
	run := fmt.Sprintf("%s/%d", p.UID, ended)
	r.mu.Lock()
	tp, c, ok := r.container(p)
	if !ok || tp.exited[c] == run {
		r.mu.Unlock()
		return
	}
	tp.exited[c] = run
	t := cs.State.Terminated
	if t == nil {
		t = cs.LastTerminationState.Terminated
	}
	if t != nil && !t.StartedAt.IsZero() && t.FinishedAt.Sub(t.StartedAt.Time) >= r.stableAfter {
		tp.crashes[c] = 1 // a run long enough: the count starts over
	} else {
		tp.crashes[c]++
	}
	failed := r.maxRestarts >= 0 && tp.crashes[c] > r.maxRestarts
	tp.failed[c] = failed
	ps := launcher.ProcessStatus{ID: runtime.ID(tp.tenant, tp.name, c), Restarts: tp.past[c]}
	r.mu.Unlock()
	podStatus(&ps, p)
	ps.State, ps.PID = launcher.StateBackoff, 0
	if t != nil {
		ps.LastExit = exitText(t)
		if t.Message != "" {
			ps.LastError = t.Message
		}
	}
	if failed {
		ps.State = launcher.StateFailed
		r.log.Error("kubernetes: a host exited too often in a row: failed", "container", ps.ID, "pod", p.Name, "restarts", ps.Restarts, "last_exit", ps.LastExit)
	} else {
		r.log.Warn("kubernetes: a host exited; the kubelet restarts it", "container", ps.ID, "pod", p.Name, "restarts", ps.Restarts, "last_exit", ps.LastExit)
	}
	r.change(ps)
}

// deleted counts a pod that is gone as a restart of its container (the
// StatefulSet controller makes it again) and, unless the runtime deleted
// it itself (Restart), reports the container exited.
func (r *Runtime[T]) deleted(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	tp, c, ok := r.container(p)
	if !ok {
		r.mu.Unlock()
		return
	}
	restarts := 0
	if cs := hostStatus(p); cs != nil {
		restarts = int(cs.RestartCount)
	}
	tp.past[c] += restarts + 1
	ours := tp.ours[p.UID]
	delete(tp.ours, p.UID)
	ps := launcher.ProcessStatus{ID: runtime.ID(tp.tenant, tp.name, c), State: launcher.StateBackoff, Restarts: tp.past[c],
		LastExit: "pod " + p.Name + " deleted"}
	r.mu.Unlock()
	if ours {
		return
	}
	r.log.Warn("kubernetes: a host's pod was deleted; the StatefulSet makes it again", "container", ps.ID, "pod", p.Name)
	r.change(ps)
}
