// Package packing is Ardea's own (not a public API): it decides which
// container runs which instance, as Heron's packing algorithms do: round
// robin (the default; a fixed number of equal containers),
// first-fit-decreasing (as few containers as the per-container limits allow)
// and resource-compliant round robin (round robin that adds containers until
// every container is within its limits). Repack changes the parallelism of a
// packed topology while moving as few instances as possible.
//
// The package is pure: no I/O, no clocks, no randomness. The same Request
// always gives the same Plan. All functions are safe for concurrent use; a
// Plan is a value the caller owns (Repack returns a new one).
//
// Resources are requests, not measurements: a Plan says what each container
// needs (its instances plus padding for the container's own processes, the
// stream manager and metrics), which is what a scheduler asks a machine or a
// cgroup for. CPU is kept in thousandths of a core internally so sums and
// comparisons are exact.
package packing

import (
	"errors"
	"math"
)

// Algorithm names a packing algorithm (the values of topology.packing.algorithm).
type Algorithm string

const (
	// roundRobin deals instances in task-id order to Settings.Containers
	// containers; container sizes differ by at most one instance.
	roundRobin Algorithm = "round_robin"
	// firstFitDecreasing sorts components by RAM (or CPU) descending and puts
	// each instance into the first container with room, opening a new
	// container when none has room.
	firstFitDecreasing Algorithm = "first_fit_decreasing"
	// resourceCompliantRoundRobin deals instances round robin over
	// Settings.Containers containers and, when an instance does not fit the
	// container whose turn it is, starts over with one more container.
	resourceCompliantRoundRobin Algorithm = "resource_compliant_round_robin"
)

// algorithms lists every algorithm name.
var algorithms = []Algorithm{roundRobin, firstFitDecreasing, resourceCompliantRoundRobin}

// SortBy is first-fit-decreasing's sort key (topology.packing.ffd.sort).
type SortBy string

const (
	sortRAM SortBy = "ram" // RAM descending, then CPU descending (default)
	sortCPU SortBy = "cpu" // CPU descending, then RAM descending
)

// Byte units.
const (
	kiB int64 = 1 << 10
	miB int64 = 1 << 20
	giB int64 = 1 << 30
	tiB int64 = 1 << 40
)

// Heron's defaults.
const (
	// defaultMaxInstances is the default topology.container.max.instances
	// (first_fit_decreasing and resource_compliant_round_robin).
	defaultMaxInstances = 10
	// defaultPaddingPercent is the default topology.container.padding.percentage.
	defaultPaddingPercent = 10
	// defaultContainerInstances is how many default-sized instances the
	// default max container holds (Heron's FFD hint: 4 instances' worth).
	defaultContainerInstances = 4
)

// defaultInstance is the per-instance request when nothing is configured
// (Heron: 1 CPU, 1 giB RAM, 1 giB disk).
var defaultInstance = Resources{CPU: 1, RAM: giB, Disk: giB}

// defaultPaddingMin is the least padding a container gets (Heron: 1 CPU,
// 1 giB RAM, 1 giB disk for the stream manager and metrics manager).
var defaultPaddingMin = Resources{CPU: 1, RAM: giB, Disk: giB}

// Sentinel errors; every error from this package wraps one of them.
var (
	// errInvalid: a setting or a component's resources are invalid.
	errInvalid = errors.New("invalid packing request")
	// errDoesNotFit: an instance or a container exceeds the container limits.
	errDoesNotFit = errors.New("does not fit")
)

// Resources is a CPU, RAM and disk request. CPU is in cores (0.5 = half a
// core; resolution 0.001), RAM and Disk in bytes. In Component and Settings a
// zero field means "the default"; in a Plan every field is resolved.
type Resources struct {
	CPU  float64 `json:"cpu"`
	RAM  int64   `json:"ram"`
	Disk int64   `json:"disk"`
}

// Component is one spout or bolt to pack.
type Component struct {
	Name        string `json:"name"`
	Parallelism int    `json:"parallelism"`
	// Resources per instance; zero fields take Settings.Instance's.
	Resources Resources `json:"resources"`
}

// Padding is what a container needs beyond its instances: per resource, the
// larger of Min and Percent% of the instances' sum (rounded up).
type Padding struct {
	Percent int       `json:"percent"`
	Min     Resources `json:"min"`
}

// Settings are a topology's packing settings. The zero value is Heron's
// defaults: round robin into one container.
type Settings struct {
	// Algorithm; "" means roundRobin.
	Algorithm Algorithm `json:"algorithm"`
	// Sort is first-fit-decreasing's sort key; "" means sortRAM.
	Sort SortBy `json:"sort,omitempty"`
	// Containers is the container count for roundRobin and the starting
	// count for resourceCompliantRoundRobin (firstFitDecreasing ignores it);
	// 0 means 1 (Heron's topology.stmgrs).
	Containers int `json:"containers,omitempty"`
	// Instance is the default per-instance request; zero fields mean
	// defaultInstance's.
	Instance Resources `json:"instance"`
	// MaxContainer is the most a container may request, padding included.
	// A zero field means: for firstFitDecreasing and
	// resourceCompliantRoundRobin, defaultContainerInstances default
	// instances plus their padding; for roundRobin, no limit (a limit that is
	// set is checked, and exceeding it is an error).
	MaxContainer Resources `json:"max_container"`
	// MaxInstances is the most instances per container; 0 means
	// defaultMaxInstances (roundRobin: no limit unless set).
	MaxInstances int `json:"max_instances,omitempty"`
	// Padding; nil means defaultPaddingPercent with defaultPaddingMin, and
	// &Padding{} means none.
	Padding *Padding `json:"padding,omitempty"`
}

// Request is what to pack: components in topology order (the order that
// numbers the global task ids) and the settings.
type Request struct {
	// Topology names the topology in error messages.
	Topology   string      `json:"topology"`
	Components []Component `json:"components"`
	Settings   Settings    `json:"settings"`
}

// Plan is a packing plan: containers 1..len(Containers) in id order, each
// with its instances in task-id order.
type Plan struct {
	Topology   string      `json:"topology"`
	Algorithm  Algorithm   `json:"algorithm"`
	Limits     Limits      `json:"limits"`
	Containers []Container `json:"containers"`
	// Total is the sum of the containers' requests.
	Total Resources `json:"total"`
	// Request is what was packed (Repack packs its changes with the same
	// settings).
	Request Request `json:"request"`
}

// Limits are the resolved per-container limits a plan was packed under.
type Limits struct {
	// MaxContainer: a zero field means no limit (round robin without one set).
	MaxContainer Resources `json:"max_container"`
	// MaxInstances: 0 means no limit.
	MaxInstances int     `json:"max_instances"`
	Padding      Padding `json:"padding"`
}

// Container is one container of a plan.
type Container struct {
	ID        int        `json:"id"`
	Instances []Instance `json:"instances"`
	// Resources is the container's request: its instances plus Padding.
	Resources Resources `json:"resources"`
	Padding   Resources `json:"padding"`
}

// Instance is one instance (task) of a component. (Component, Index) is its
// identity across repacks; TaskID is derived: global task ids run 1..n over
// the components in request order, then by index, as planner.BuildPlan
// numbers them, so a repack that changes a component's parallelism renumbers
// the tasks of the components after it.
type Instance struct {
	TaskID uint32 `json:"task"`
	// Component is the component's name, ComponentID its position in
	// Request.Components, Index the instance's index within the component
	// (0..parallelism-1).
	Component   string    `json:"component"`
	ComponentID int       `json:"component_id"`
	Index       int       `json:"index"`
	Resources   Resources `json:"resources"`
}

// Instances counts the plan's instances.
func (p *Plan) Instances() int {
	n := 0
	for _, c := range p.Containers {
		n += len(c.Instances)
	}
	return n
}

// Assignment returns the container of every task, indexed by task id (index
// 0 unused): the shape of planner.Packer's result.
func (p *Plan) Assignment() []int {
	out := make([]int, p.Instances()+1)
	for _, c := range p.Containers {
		for _, in := range c.Instances {
			out[in.TaskID] = c.ID
		}
	}
	return out
}

// ContainerOf returns the id of the container running instance index of
// component, or 0 if the plan has no such instance.
func (p *Plan) ContainerOf(component string, index int) int {
	for _, c := range p.Containers {
		for _, in := range c.Instances {
			if in.Component == component && in.Index == index {
				return c.ID
			}
		}
	}
	return 0
}

// Pack packs req with its algorithm. Errors wrap errInvalid (a bad setting or
// resource, naming the component and field) or errDoesNotFit (an instance
// larger than a container, or a round-robin container over a limit that was
// set).
func Pack(req Request) (*Plan, error) {
	s, err := resolve(req)
	if err != nil {
		return nil, err
	}
	var bins []*bin
	switch s.alg {
	case roundRobin:
		bins, err = packRoundRobin(s)
	case firstFitDecreasing:
		bins, err = packFFD(s)
	case resourceCompliantRoundRobin:
		bins, err = packRCRR(s)
	}
	if err != nil {
		return nil, err
	}
	return s.plan(req, bins), nil
}

// vec is Resources in exact units: thousandths of a core, bytes, bytes.
type vec [3]int64

const (
	dimCPU = iota
	dimRAM
	dimDisk
)

// Field names per dimension, as the config keys spell them.
var dimNames = [3]string{"cpu", "ram", "disk"}

func toVec(r Resources) vec {
	return vec{int64(math.Round(r.CPU * 1000)), r.RAM, r.Disk}
}

func (v vec) resources() Resources {
	return Resources{CPU: float64(v[dimCPU]) / 1000, RAM: v[dimRAM], Disk: v[dimDisk]}
}

func (v vec) add(w vec) vec { return vec{v[0] + w[0], v[1] + w[1], v[2] + w[2]} }
func (v vec) sub(w vec) vec { return vec{v[0] - w[0], v[1] - w[1], v[2] - w[2]} }

// formatDim prints one dimension for a message.
func formatDim(d int, x int64) string {
	if d == dimCPU {
		return FormatCPU(float64(x)/1000) + " CPU"
	}
	return FormatBytes(x)
}
