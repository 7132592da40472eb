// Package quota holds a tenant's quotas: how many topologies, instances
// and containers it may run, how much wasm memory its instances may
// reserve, how fast it may hand tuples to the bus, how much CPU its host
// processes get and how much JetStream storage it may use. Zero means
// unlimited, field by field.
//
// Where each is enforced (docs/tenancy.md, "Quotas"):
//
//   - topologies, instances, containers, wasm_memory_pages: Check, when
//     the daemon admits a change of what a tenant runs (submit, update,
//     apply, swap, resume at start: it computes the tenant's usage and
//     what the request adds, TopologyUsage after minus before);
//   - tuples_per_second, bytes_per_second: the stream managers' token
//     buckets (bus.Options), the tenant's rate divided among its running
//     containers (ContainerRates);
//   - cpu: a cgroup per tenant for its host processes
//     (scheduler/internal/launcher's Cgroups), where the machine has one;
//   - jetstream_memory, jetstream_disk: the tenant's NATS account's
//     JetStream limits.
//
// The quotas come from built-in defaults sized from the machine
// (Defaults; every tenant but the daemon's default one), the deployment
// file's quotas: section (a default and per-tenant entries, Config) and
// overrides set through the admin API (Store), in that order: each level
// sets only the fields it names.
package quota

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/ardea-dev/ardea/scheduler/packing"
)

// Quotas are one tenant's limits. Zero is unlimited.
type Quotas struct {
	Topologies int64 `json:"topologies"`
	Instances  int64 `json:"instances"`  // tasks of all its topologies
	Containers int64 `json:"containers"` // host processes of all its topologies
	// WasmMemoryPages bounds the sum over its wasm instances of each
	// instance's memory limit (wasm.memory.pages, 64 KiB pages).
	WasmMemoryPages int64 `json:"wasm_memory_pages"`
	// TuplesPerSecond and BytesPerSecond bound what its tasks hand to the
	// bus (tuple copies and data batch bytes), over all its containers.
	TuplesPerSecond int64 `json:"tuples_per_second"`
	BytesPerSecond  int64 `json:"bytes_per_second"`
	// CPU is how many cores its host processes may use together (0.5: half
	// a core).
	CPU             float64 `json:"cpu"`
	JetStreamMemory int64   `json:"jetstream_memory"` // bytes
	JetStreamDisk   int64   `json:"jetstream_disk"`   // bytes
}

// Usage is what a tenant holds of the quotas checked at submit and
// update, or what one request adds.
type Usage struct {
	Topologies      int64 `json:"topologies"`
	Instances       int64 `json:"instances"`
	Containers      int64 `json:"containers"`
	WasmMemoryPages int64 `json:"wasm_memory_pages"`
	JetStreamMemory int64 `json:"jetstream_memory"`
	JetStreamDisk   int64 `json:"jetstream_disk"`
}

// Add returns u + v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		Topologies:      u.Topologies + v.Topologies,
		Instances:       u.Instances + v.Instances,
		Containers:      u.Containers + v.Containers,
		WasmMemoryPages: u.WasmMemoryPages + v.WasmMemoryPages,
		JetStreamMemory: u.JetStreamMemory + v.JetStreamMemory,
		JetStreamDisk:   u.JetStreamDisk + v.JetStreamDisk,
	}
}

// Sub returns u - v: what an update adds is the topology's new usage
// minus its old one.
func (u Usage) Sub(v Usage) Usage {
	return Usage{
		Topologies:      u.Topologies - v.Topologies,
		Instances:       u.Instances - v.Instances,
		Containers:      u.Containers - v.Containers,
		WasmMemoryPages: u.WasmMemoryPages - v.WasmMemoryPages,
		JetStreamMemory: u.JetStreamMemory - v.JetStreamMemory,
		JetStreamDisk:   u.JetStreamDisk - v.JetStreamDisk,
	}
}

// ErrQuota is wrapped by every refusal for a quota (errors.Is); the
// *Error (errors.As) names which.
var ErrQuota = errors.New("over quota")

// Error is a refusal: the request would take the tenant past Quota.
type Error struct {
	Quota  string // the quota's name in the deployment file, e.g. "instances"
	Limit  int64
	InUse  int64
	Adds   int64
	Action string // what was refused ("submit", "update"); "" for "request"
}

func (e *Error) Error() string {
	action := e.Action
	if action == "" {
		action = "request"
	}
	f := func(n int64) string { return formatValue(e.Quota, n) }
	return fmt.Sprintf("quota %s: limit %s, in use %s, this %s adds %s", e.Quota, f(e.Limit), f(e.InUse), action, f(e.Adds))
}

// Is makes errors.Is(err, ErrQuota) hold.
func (e *Error) Is(target error) bool { return target == ErrQuota }

// FormatValue prints a value (a limit, a usage) of quota name: sizes
// with units.
func FormatValue(name string, n int64) string { return formatValue(name, n) }

// formatValue prints a value of quota name: sizes with units.
func formatValue(name string, n int64) string {
	if name == "jetstream_memory" || name == "jetstream_disk" {
		return packing.FormatBytes(n)
	}
	return strconv.FormatInt(n, 10)
}

// Check refuses add on top of usage if it takes the tenant past a quota
// of q. Only quotas that add grows are checked, so a request that adds
// nothing of a quota is not refused because an operator lowered it below
// the usage. Every quota passed is named (errors.Join; errors.As finds
// the first *Error).
func Check(q Quotas, usage, add Usage) error { return CheckAction("", q, usage, add) }

// CheckAction is Check naming the action in the refusal ("submit":
// "this submit adds 4").
func CheckAction(action string, q Quotas, usage, add Usage) error {
	var errs []error
	for _, c := range []struct {
		name              string
		limit, inUse, add int64
	}{
		{"topologies", q.Topologies, usage.Topologies, add.Topologies},
		{"instances", q.Instances, usage.Instances, add.Instances},
		{"containers", q.Containers, usage.Containers, add.Containers},
		{"wasm_memory_pages", q.WasmMemoryPages, usage.WasmMemoryPages, add.WasmMemoryPages},
		{"jetstream_memory", q.JetStreamMemory, usage.JetStreamMemory, add.JetStreamMemory},
		{"jetstream_disk", q.JetStreamDisk, usage.JetStreamDisk, add.JetStreamDisk},
	} {
		if c.limit > 0 && c.add > 0 && c.inUse+c.add > c.limit {
			errs = append(errs, &Error{Quota: c.name, Limit: c.limit, InUse: c.inUse, Adds: c.add, Action: action})
		}
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// Of is u's usage of quota name; false for the quotas not counted as
// usage (the rates, cpu).
func (u Usage) Of(name string) (int64, bool) {
	switch name {
	case "topologies":
		return u.Topologies, true
	case "instances":
		return u.Instances, true
	case "containers":
		return u.Containers, true
	case "wasm_memory_pages":
		return u.WasmMemoryPages, true
	case "jetstream_memory":
		return u.JetStreamMemory, true
	case "jetstream_disk":
		return u.JetStreamDisk, true
	}
	return 0, false
}
