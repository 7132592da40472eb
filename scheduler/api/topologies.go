package api

import (
	"time"
)

// DefaultListen is where the API listens and the CLI looks by default.
const DefaultListen = "127.0.0.1:7780"

// SubmitRequest is POST /api/v1/topologies.
type SubmitRequest struct {
	Name string `json:"name"`
	// Spec is the topology YAML as resolved by the CLI (overrides applied,
	// built-in file paths absolute).
	Spec string `json:"spec"`
	// Modules holds each wasm component's module bytes (base64 in JSON).
	Modules map[string][]byte `json:"modules"`
	// Sources names where each module came from (its file on the
	// submitter's machine): the module's name in errors and history.
	Sources     map[string]string `json:"sources,omitempty"`
	Deactivated bool              `json:"deactivated,omitempty"`
	By          string            `json:"by,omitempty"`
}

// Summary is one row of GET /api/v1/topologies.
type Summary struct {
	Name       string `json:"name"`
	State      State  `json:"state"`
	Containers int    `json:"containers"`
	Instances  int    `json:"instances"`
	Submitted  string `json:"submitted"`
}

// UpdateRequest is POST /api/v1/topologies/{name}/update.
type UpdateRequest struct {
	Parallelism map[string]int `json:"parallelism"`
}

// DeadLetterResult is what GET/POST .../dlq answer: the dead letters of
// the topology's spouts (listed, or replayed into their sources).
type DeadLetterResult struct {
	Replayed    bool         `json:"replayed"`
	DeadLetters []DeadLetter `json:"dead_letters"`
}

// DeadLetter is one record a spout gave up on, as a connector's
// dead-letter store lists it (connectors/plugin.DeadLetterStore).
type DeadLetter struct {
	Component   string `json:"component"`
	Destination string `json:"destination"` // file:<path>, kafka:<topic>, pulsar:<topic>, jetstream:<subject>
	Source      string `json:"source"`      // where it was read: line number, topic/partition/offset, message id
	Failures    int    `json:"failures,omitempty"`
	Error       string `json:"error,omitempty"`
	Value       string `json:"value"`
}

// ApplyRequest is POST /api/v1/topologies/{name}/apply: a topology file
// resolved by the CLI as for a submit.
type ApplyRequest struct {
	Spec    string            `json:"spec"`
	Modules map[string][]byte `json:"modules"`
	DryRun  bool              `json:"dry_run,omitempty"`
	By      string            `json:"by,omitempty"`
}

// Change is one difference between the running topology and a file.
type Change struct {
	Kind      string `json:"kind"` // add, remove, parallelism, module, inputs, config, outputs
	Component string `json:"component"`
	Detail    string `json:"detail"`
}

// ApplyResult is the diff, how it is (or would be) applied, and the plan.
type ApplyResult struct {
	Changes []Change `json:"changes"`
	// How: "nothing", "swap" (module changes only, task by task), "live
	// rescale" (parallelism only), or "paused" (the spouts pause while the
	// plan changes; state is kept by key group).
	How         string         `json:"how"`
	Parallelism map[string]int `json:"parallelism"`
	Containers  int            `json:"containers"`
	Applied     bool           `json:"applied"`
	Took        string         `json:"took,omitempty"`
}

// SwapRequest is POST /api/v1/topologies/{name}/swap.
type SwapRequest struct {
	Component string `json:"component"`
	// Module is the new module's bytes (base64 in JSON); Source says where
	// it came from (a path, for the history).
	Module []byte `json:"module"`
	Source string `json:"source,omitempty"`
	// Canary swaps this many tasks first and the rest only once they have
	// passed Probation (default 10s) without failing.
	Canary    int           `json:"canary,omitempty"`
	Probation time.Duration `json:"probation,omitempty"`
	By        string        `json:"by,omitempty"`
	// Health on probation, besides failed batches: a swapped task that
	// fails more than MaxFailRate of its input tuples (default 0.05, from
	// 100 tuples on), or whose execute time per tuple exceeds
	// MaxLatencyFactor times its time before the swap (default 10, and by
	// more than 1 ms), makes the swap roll back.
	MaxFailRate      float64 `json:"max_fail_rate,omitempty"`
	MaxLatencyFactor float64 `json:"max_latency_factor,omitempty"`
}

// SwapResult is the answer to a swap or a rollback.
type SwapResult struct {
	Component string        `json:"component"`
	Version   string        `json:"version"`
	Previous  string        `json:"previous"`
	Status    VersionStatus `json:"status"`
	Reason    string        `json:"reason,omitempty"`
	Tasks     int           `json:"tasks"`
	// Took is the whole swap, probation included; MaxPauseMs the longest
	// time a task took no input because of it.
	Took       string  `json:"took"`
	MaxPauseMs float64 `json:"max_pause_ms"`
}

// VersionStatus is what became of a module version (ModuleVersion.Status).
type VersionStatus string

// Version statuses.
const (
	VersionActive     VersionStatus = "active"
	VersionReplaced   VersionStatus = "replaced"
	VersionRolledBack VersionStatus = "rolled back" // it failed on probation and the previous version is back
	VersionRefused    VersionStatus = "refused"     // validation refused it
	VersionFailed     VersionStatus = "failed"
)

// ModuleVersion is one version of one component's module.
type ModuleVersion struct {
	Component string        `json:"component"`
	Version   string        `json:"version"` // the artifact's sha256 (hex)
	Source    string        `json:"source,omitempty"`
	Previous  string        `json:"previous,omitempty"`
	At        time.Time     `json:"at"`
	By        string        `json:"by,omitempty"`
	Status    VersionStatus `json:"status"`
	Reason    string        `json:"reason,omitempty"`
	Canary    int           `json:"canary,omitempty"`
}
