package plugin

import (
	"context"
	"errors"
	"log/slog"

	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/sinks/metric"
)

// SpoutFactory builds a spout from its validated config. It should not
// block or connect: Open does, with the task's context.
type SpoutFactory func(cfg Config) (Spout, error)

// BoltFactory builds a bolt from its validated config (Prepare connects).
type BoltFactory func(cfg Config) (Bolt, error)

// MaxDeadLetterFileBytes bounds a dead-letter file that is read whole (a
// file spout's, a bolt's): a longer one is neither read nor appended to.
const MaxDeadLetterFileBytes = 64 << 20

// ErrNoDeadLetters is returned (wrapped) for a spout that keeps no dead
// letters: it has no dead-letter destination, or its config does not set
// one.
var ErrNoDeadLetters = errors.New("keeps no dead letters")

// DeadLetterOwner is the spout whose dead letters a store holds.
type DeadLetterOwner struct {
	Topology  string
	Component string
}

// DeadLetterStore lists and replays one spout's dead letters. The spout
// writes them (where its config says); the store reads them back.
type DeadLetterStore interface {
	// List returns the dead letters not yet replayed, leaving them there.
	List(ctx context.Context) ([]api.DeadLetter, error)
	// Replay sends the dead letters back to the spout's source (where the
	// running topology reads them again), marks them replayed and returns
	// them.
	Replay(ctx context.Context) ([]api.DeadLetter, error)
}

// DeadLetterFactory builds the dead-letter store of a spout from the
// fields of the spout's config its spec declares (the spout's config was
// validated first). It returns an error wrapping ErrNoDeadLetters when the
// config sets no destination. It should not connect: List and Replay do.
type DeadLetterFactory func(cfg Config, owner DeadLetterOwner) (DeadLetterStore, error)

// The metrics data a sink gets (package sinks/metric; package sinks
// aliases the same names).
type (
	MetricsBatch     = metric.Batch
	MetricsSample    = metric.Sample
	MetricsException = api.Exception
	MetricsKind      = metric.Kind
)

// Sample kinds.
const (
	MetricsCounter = metric.Counter // Value cumulative, Delta since the previous collection
	MetricsGauge   = metric.Gauge   // Value current
)

// MetricsSink receives a container's metrics batches. Write is called from
// one goroutine per sink, in order; it may block (the bounded queue in
// front of it absorbs that) but gives up when ctx ends. Close releases
// what the sink holds, bounding its own waits.
type MetricsSink interface {
	Write(ctx context.Context, b *MetricsBatch) error
	Close() error
}

// MetricsSinkFactory builds a metrics sink from its validated config. It
// should connect lazily (a receiver that is down is not an error here);
// what it starts may keep ctx's values but not its cancellation (the sink
// lives until Close). log is tagged with the sink's name.
type MetricsSinkFactory func(ctx context.Context, cfg Config, log *slog.Logger) (MetricsSink, error)
