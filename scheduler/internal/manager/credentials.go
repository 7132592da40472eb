package manager

import (
	"fmt"

	"github.com/ardea-dev/ardea"
)

// IssueCredential runs issue (it makes a host's NATS credential for the
// topology as the loop last published it) unless the manager has begun
// revoking its hosts' credentials: both happen under credsMu, so a
// container the runtime restarts meanwhile either gets its credential
// before the revocation (which removes it) or none.
func (t *Manager) IssueCredential(issue func(top *ardea.Topology) error) error {
	t.credsMu.Lock()
	defer t.credsMu.Unlock()
	v := t.view.Load()
	if t.credsOff || v.top == nil {
		return fmt.Errorf("topology %s is %s: no NATS credential for its hosts", t.name, v.state)
	}
	return issue(v.top)
}

// revokeCreds makes IssueCredential refuse from now on, then revokes
// every credential issued to t's hosts (Credentials.Revoke). The loop
// calls it as the topology ends (finished, failed, killed).
func (t *Manager) revokeCreds() {
	t.credsMu.Lock()
	t.credsOff = true
	t.credsMu.Unlock()
	t.cfg.Credentials.Revoke(t)
}
