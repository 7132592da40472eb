package manager

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
	"github.com/ardea-dev/ardea/sinks"
)

// What the rest of the daemon reads of a manager: set once, or the view
// its loop publishes (never the loop's fields).

// Name is the topology's name; Tenant its tenant's.
func (t *Manager) Name() string   { return t.name }
func (t *Manager) Tenant() string { return t.cfg.Tenant }

// Log is the manager's logger (it names the topology and the tenant).
func (t *Manager) Log() *slog.Logger { return t.log }

// Context lives as long as the manager.
func (t *Manager) Context() context.Context { return t.runCtx }

// View is the state the loop published last.
func (t *Manager) View() *View { return t.view.Load() }

// History keeps the containers' metrics and exceptions (the tracker's).
func (t *Manager) History() *sinks.History { return t.hist }

// Local is the in-process gateway (Config.InProcess; nil otherwise).
func (t *Manager) Local() *ctl.Local { return t.local }

// Finished is closed once FINISHED is recorded and the containers stopped.
func (t *Manager) Finished() <-chan struct{} { return t.finished }

// SetRate tells every host its bus rate share (Rates); nothing before
// the manager's gateway to its containers is set up (Controlled).
func (t *Manager) SetRate(ctx context.Context, tuplesPerSec, bytesPerSec float64) error {
	if t.ctl == nil {
		return nil
	}
	return t.ctl.SetRate(ctx, tuplesPerSec, bytesPerSec)
}

// Controlled reports a manager whose gateway to its containers is set up.
func (t *Manager) Controlled() bool { return t.ctl != nil }

// IsPermanent reports an error retrying cannot cure (a topology with no
// restorable checkpoint cannot resume).
func IsPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}

// The view's parts, for readers outside the loop.

func (v *View) State() api.State              { return v.state }
func (v *View) Mode() api.Mode                { return v.mode }
func (v *View) Message() string               { return v.message }
func (v *View) Top() *ardea.Topology          { return v.top } // nil until loaded
func (v *View) Doc() ctl.PlanDoc              { return v.doc }
func (v *View) PlanRevision() uint64          { return v.planRev }
func (v *View) Started() time.Time            { return v.started }
func (v *View) Transitions() []api.Transition { return v.transitions }
func (v *View) LostTo() string                { return v.lostTo }

// Checkpoints is the effectively-once status (nil otherwise).
func (v *View) Checkpoints() *api.CheckpointStatus { return v.ckpt }

// TMLock is the TM lock the manager holds now (it takes a new one when
// the old one vanished).
func (t *Manager) TMLock() *statemgr.Lock { return t.lock.Load() }

// LockLost reports whether the TM has lost its lock and not acquired it
// again: another daemon may run the topology by now, so the TM starts no
// container (the runtime asks) until it holds the lock again or steps
// down.
func (t *Manager) LockLost() bool { return t.holding() != nil }
