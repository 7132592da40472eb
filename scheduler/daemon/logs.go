package daemon

import (
	"context"

	"github.com/ardea-dev/ardea/scheduler/internal/logtail"
)

// logReader is a runtime that reads its containers' logs itself, not
// from a log file of this node: a cluster's Placer (a container on
// another node: its node's file, scheduler/internal/placement's OpLogs),
// and scheduler: kubernetes (a pod's log through the API server).
type logReader interface {
	Logs(ctx context.Context, id string, n int, f logtail.Filter) ([]string, error)
}

// containerLogs is the last n lines f selects of container id's log,
// oldest first, wherever it runs.
func (d *Daemon) containerLogs(ctx context.Context, id string, n int, f logtail.Filter) ([]string, error) {
	if r, ok := d.sup.(logReader); ok {
		return r.Logs(ctx, id, n, f)
	}
	page, err := logtail.Tail(d.sup.LogPath(id), -1, n, 0, f)
	return page.Lines, err
}
