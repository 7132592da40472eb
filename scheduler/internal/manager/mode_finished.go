package manager

import (
	"time"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// finishedMode: every container finished its input (and, effectively
// once, none died since the running lineage began): FINISHED is recorded,
// the containers stop and their credentials are revoked.
type finishedMode struct{}

func (finishedMode) name() api.Mode { return api.ModeFinished }
func (finishedMode) why() string    { return "every container finished its input" }

func (finishedMode) run(t *Manager) mode {
	ctx := t.runCtx
	if _, err := t.cfg.Store.SetState(ctx, t.name, statemgr.ExecState{State: api.StateFinished, Updated: time.Now(),
		Message: "every spout finished its input and every tuple was processed"}); err != nil {
		t.log.Error("record FINISHED", "err", err)
	}
	t.StopContainers(ctx)
	t.revokeCreds() // a finished topology's credentials connect no more
	t.cfg.Rates.Reshare(ctx, nil)
	t.log.Info("topology finished")
	t.signalFinished()
	return t.terminal()
}
