package kube

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// ownedConditions are the pod conditions the kubelet sets; every other
// (PodScheduled, set by the binding, or a readiness gate's) is kept as
// the API has it.
var ownedConditions = []corev1.PodConditionType{
	corev1.PodReadyToStartContainers,
	corev1.PodInitialized,
	corev1.ContainersReady,
	corev1.PodReady,
}

// status is the part of the pod's status the kubelet owns, as the
// worker's state says now. A container is ready while it runs: the test
// kubelet runs no probes.
func (w *podWorker) status() corev1.PodStatus {
	st := corev1.PodStatus{
		Phase:              corev1.PodPending,
		HostIP:             podIP,
		HostIPs:            []corev1.HostIP{{IP: podIP}},
		StartTime:          &w.started,
		ObservedGeneration: w.pod.Generation,
	}
	if w.prepared {
		st.PodIP, st.PodIPs = podIP, []corev1.PodIP{{IP: podIP}}
	}
	allReady, anyRan, allZero := true, false, true
	waiting := "ContainerCreating"
	if w.prepared && !w.initDone {
		waiting = "PodInitializing"
	}
	for _, c := range w.inits {
		st.InitContainerStatuses = append(st.InitContainerStatuses, w.containerStatus(c, "ContainerCreating"))
		if t := c.state.Terminated; t != nil && t.ExitCode != 0 {
			allZero = false
		}
	}
	for _, c := range w.containers {
		st.ContainerStatuses = append(st.ContainerStatuses, w.containerStatus(c, waiting))
		allReady = allReady && c.running
		anyRan = anyRan || c.everRan
		if t := c.state.Terminated; t != nil && t.ExitCode != 0 {
			allZero = false
		}
	}
	switch {
	case w.terminal && allZero:
		st.Phase = corev1.PodSucceeded
	case w.terminal:
		st.Phase = corev1.PodFailed
	case anyRan:
		st.Phase = corev1.PodRunning
	}
	ready := allReady && !w.terminal
	podReady := ready
	for _, g := range w.pod.Spec.ReadinessGates {
		if !gateTrue(w.pod, g.ConditionType) {
			podReady = false
		}
	}
	reason := func(ok bool, why string) string {
		if ok {
			return ""
		}
		return why
	}
	w.setCondition(corev1.PodReadyToStartContainers, w.prepared && !w.terminal, "")
	w.setCondition(corev1.PodInitialized, w.initDone, reason(w.initDone, "ContainersNotInitialized"))
	w.setCondition(corev1.ContainersReady, ready, reason(ready, "ContainersNotReady"))
	w.setCondition(corev1.PodReady, podReady, reason(podReady, "ContainersNotReady"))
	for _, typ := range ownedConditions {
		st.Conditions = append(st.Conditions, w.conditions[typ])
	}
	return st
}

// containerStatus is a container's status; one that has not started
// yet is waiting for the reason given (the volumes, or the init
// containers), with the volumes' error if any.
func (w *podWorker) containerStatus(c *container, waiting string) corev1.ContainerStatus {
	state := c.state
	if state == (corev1.ContainerState{}) {
		msg := ""
		if w.prepErr != nil {
			msg = w.prepErr.Error()
		}
		state.Waiting = &corev1.ContainerStateWaiting{Reason: waiting, Message: msg}
	}
	started := c.running
	return corev1.ContainerStatus{
		Name:                 c.spec.Name,
		Image:                c.spec.Image,
		ImageID:              "ardea-test://" + c.spec.Image,
		ContainerID:          w.containerIDIf(c),
		State:                state,
		LastTerminationState: c.last,
		Ready:                c.running && !c.init,
		Started:              &started,
		RestartCount:         c.restarts,
	}
}

// containerIDIf is a container's ID once it has run.
func (w *podWorker) containerIDIf(c *container) string {
	if !c.everRan {
		return ""
	}
	return w.containerID(c)
}

// setCondition records a condition, its transition time changing only
// when its status does.
func (w *podWorker) setCondition(typ corev1.PodConditionType, ok bool, reason string) {
	status := corev1.ConditionFalse
	if ok {
		status = corev1.ConditionTrue
	}
	old, seen := w.conditions[typ]
	if seen && old.Status == status && old.Reason == reason {
		return
	}
	w.conditions[typ] = corev1.PodCondition{
		Type:               typ,
		Status:             status,
		Reason:             reason,
		LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second)),
	}
}

func gateTrue(pod *corev1.Pod, typ corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == typ {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// writeStatus sends the status to the API when it changed since the
// last write: onto the pod's newest version (retrying a conflict), with
// the conditions the kubelet does not own kept. A pod gone or replaced
// (another UID under the name) is left alone.
func (w *podWorker) writeStatus() {
	st := w.status()
	if w.written != nil && equality.Semantic.DeepEqual(*w.written, st) {
		return
	}
	pods := w.k.c.Client.CoreV1().Pods(w.pod.Namespace)
	ctx, cancel := context.WithTimeout(w.k.ctx, 30*time.Second)
	defer cancel()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := pods.Get(ctx, w.pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != w.uid {
			return nil
		}
		// Onto the API's status: what the kubelet does not own
		// (qosClass, nominatedNodeName, other conditions) stays.
		s := &cur.Status
		s.Phase, s.HostIP, s.HostIPs, s.PodIP, s.PodIPs = st.Phase, st.HostIP, st.HostIPs, st.PodIP, st.PodIPs
		s.StartTime, s.ObservedGeneration = st.StartTime, st.ObservedGeneration
		s.InitContainerStatuses, s.ContainerStatuses = st.InitContainerStatuses, st.ContainerStatuses
		conds := s.Conditions[:0:0]
		for _, c := range s.Conditions {
			if !ownedCondition(c.Type) {
				conds = append(conds, c)
			}
		}
		s.Conditions = append(conds, st.Conditions...)
		_, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	switch {
	case err == nil:
		w.written = &st
	case apierrors.IsNotFound(err), w.k.ctx.Err() != nil:
	default:
		w.k.logf("%s/%s: status: %v", w.pod.Namespace, w.pod.Name, err)
	}
}

func ownedCondition(typ corev1.PodConditionType) bool {
	for _, o := range ownedConditions {
		if o == typ {
			return true
		}
	}
	return false
}
