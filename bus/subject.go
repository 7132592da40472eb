package bus

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ardea-dev/ardea/internal/names"
)

// Subject kinds (the fourth token).
const (
	kindData   = "data"   // tuple batches and end-of-stream markers to a container
	kindCredit = "credit" // flow-control messages (hello, open, grant) to a container
	kindAck    = "ack"    // at-least-once ledger updates for a container's spout tasks
)

// Subjects builds the NATS subjects of one topology:
//
//	ardea.<tenant>.<topology>.<kind>.<target>
//
// data.<container> carries batches for the tasks of that container;
// credit.<container> carries flow-control messages for that container's
// senders. Tenant and topology come first so that tenants can later be fenced
// with NATS accounts and subject permissions (ardea.<tenant>.>).
type Subjects struct {
	prefix string // "ardea.<tenant>.<topology>."
}

// NewSubjects checks that tenant and topology are valid subject tokens (non
// empty, no '.', '*', '>' or whitespace) and returns the subject builder. An
// empty tenant means names.DefaultTenant.
func NewSubjects(tenant, topology string) (Subjects, error) {
	if tenant == "" {
		tenant = names.DefaultTenant
	}
	if err := checkToken("tenant", tenant); err != nil {
		return Subjects{}, err
	}
	if err := checkToken("topology", topology); err != nil {
		return Subjects{}, err
	}
	return Subjects{prefix: names.Subject(tenant, topology) + "."}, nil
}

func checkToken(what, s string) error {
	if s == "" {
		return fmt.Errorf("bus: %s name is empty", what)
	}
	if i := strings.IndexAny(s, ".*> \t\r\n"); i >= 0 {
		return fmt.Errorf("bus: %s name %q: character %q is not allowed in a NATS subject token", what, s, s[i])
	}
	return nil
}

// Data is the subject of batches sent to a container.
func (s Subjects) Data(container int) string {
	return s.prefix + kindData + "." + strconv.Itoa(container)
}

// Credit is the subject of flow-control messages sent to a container.
func (s Subjects) Credit(container int) string {
	return s.prefix + kindCredit + "." + strconv.Itoa(container)
}

// Ack is the subject of ack messages (acker wire format) for the ledger of
// a container's spout tasks.
func (s Subjects) Ack(container int) string {
	return s.prefix + kindAck + "." + strconv.Itoa(container)
}

// All is the wildcard matching every subject of the topology.
func (s Subjects) All() string { return s.prefix + ">" }
