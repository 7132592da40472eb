package tenancy

import (
	"context"
	"log/slog"

	"github.com/ardea-dev/ardea"
)

// What tenancy needs from the daemon that runs the topologies, each as
// small as its uses: the daemon implements them over its topology
// managers (scheduler/internal/manager), which tenancy never links.

// Topologies lists a tenant's topologies the daemon runs.
type Topologies interface {
	// Of lists tenant's registered topology managers (a submit's not yet
	// registered is not among them). It takes the daemon's lock briefly
	// and calls nothing of Tenants under it.
	Of(tenant string) []Topology
}

// A Topology is one topology manager as tenancy sees it. Values are
// comparable: the same manager is the same Topology.
type Topology interface {
	Tenant() string
	Name() string
	// Footprint is what the topology runs now, and whether it counts
	// against its tenant's quotas (RUNNING or PAUSED, its topology
	// loaded).
	Footprint() (f Footprint, live bool)
	// Hosting is how many containers its hosts run, and whether they run
	// under its manager's control now (RUNNING, its control gateway up):
	// those take a share of the tenant's bus rates.
	Hosting() (containers int, ok bool)
	// SetRate tells its hosts their share of the tenant's bus rates.
	SetRate(ctx context.Context, tuplesPerSec, bytesPerSec float64) error
	// Context ends when its manager stops; Log is its logger.
	Context() context.Context
	Log() *slog.Logger
}

// Footprint is what one topology runs: its components packed into
// containers. The zero Footprint runs nothing (a submit's before, a
// resume's before). It converts to and from scheduler/internal/manager's.
type Footprint struct {
	Top        *ardea.Topology
	Containers int
}
