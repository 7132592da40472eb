package manager

import "github.com/ardea-dev/ardea/scheduler/api"

// killedMode: the topology was killed (from any mode but killed): every
// container stops and the hosts' credentials are revoked, then the kill
// command is answered and the loop ends. The caller (Manager.Kill) then
// releases the lock and removes the topology from the state manager.
type killedMode struct{ cmd *command }

func (*killedMode) name() api.Mode { return api.ModeKilled }
func (*killedMode) why() string    { return "killed" }

func (m *killedMode) run(t *Manager) mode {
	t.StopContainers(t.runCtx)
	t.revokeCreds()
	m.cmd.answer(nil, nil)
	return stopMode{}
}
