package kube

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/logtail"
)

// Log reading limits: a line longer than maxLogLine is cut to it (a
// pod's output has no launcher to split it); a filtered read asks for up
// to maxTailLines lines of the pod's log.
const (
	maxLogLine   = 1 << 20
	maxTailLines = 1 << 16
)

// Logs returns the last n lines f selects of container id's log, oldest
// first: its pod's host container's output of its current run, read
// through the API server (pods/log, which the pod's kubelet serves). The
// filter is applied here: a filtered read asks for n lines first, then
// four times more each time, until it has n or the log has no more (or
// maxTailLines were asked). An error wrapping launcher.ErrUnknown: the
// container has no pod.
func (r *Runtime[T]) Logs(ctx context.Context, id string, n int, f logtail.Filter) ([]string, error) {
	if n < 1 {
		return nil, nil
	}
	tp, c, err := r.lookup(id)
	if err != nil {
		return nil, err
	}
	pod := PodName(tp.sts, c)
	for ask := n; ; ask = min(4*ask, max(n, maxTailLines)) {
		kept, all, err := r.podLog(ctx, pod, ask, n, f)
		if err != nil {
			return nil, fmt.Errorf("kubernetes: container %s: log of pod %s/%s: %w", id, r.ns, pod, err)
		}
		if len(kept) >= n || all < ask || ask >= max(n, maxTailLines) {
			return kept, nil
		}
	}
}

// podLog reads the last ask lines of pod's host container and keeps the
// last n of them that f selects; all is how many lines it read.
func (r *Runtime[T]) podLog(ctx context.Context, pod string, ask, n int, f logtail.Filter) (kept []string, all int, err error) {
	tail := int64(ask)
	rc, err := r.client.CoreV1().Pods(r.ns).GetLogs(pod, &corev1.PodLogOptions{Container: hostContainer, TailLines: &tail}).Stream(ctx)
	if apierrors.IsNotFound(err) {
		return nil, 0, fmt.Errorf("%w: %v", launcher.ErrUnknown, err)
	}
	if err != nil {
		return nil, 0, err
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 64<<10)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) <= maxLogLine+1 {
			line = append(line, chunk...)
		} else if len(line) < maxLogLine {
			line = append(line, chunk[:maxLogLine-len(line)]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if l := string(bytes.TrimSuffix(line, []byte("\n"))); l != "" {
			all++
			if f.Keep(l) {
				kept = append(kept, l)
				if len(kept) > n {
					kept = kept[1:]
				}
			}
		}
		line = line[:0]
		if err == io.EOF {
			return kept, all, nil
		}
		if err != nil {
			return nil, 0, err
		}
	}
}
