package packing

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// packingError is a packing error naming the topology, component (if any) and the
// setting or field at fault. It wraps errInvalid or errDoesNotFit.
type packingError struct {
	Topology  string
	Component string // "" for topology-level settings
	Field     string // a config key: topology.packing.containers, resources.ram, ...
	Msg       string
	Kind      error // errInvalid or errDoesNotFit
}

func (e *packingError) Error() string {
	var b strings.Builder
	if e.Topology != "" {
		b.WriteString("topology " + e.Topology + ": ")
	}
	if e.Component != "" {
		b.WriteString("component " + e.Component + ": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func (e *packingError) Unwrap() error { return e.Kind }

// Upper bounds that keep the arithmetic far from overflow.
const (
	maxCPU   = 1e6     // cores
	maxBytes = 1 << 50 // 1 PiB
)

// comp is a resolved component.
type comp struct {
	name string
	par  int
	res  vec
}

// inst is one placed instance: component position and index.
type inst struct{ comp, index int }

// bin is a container being filled.
type bin struct {
	id    int
	insts []inst
	sum   vec // the instances' resources, padding excluded
}

// settings are a Request resolved: defaults applied, everything validated.
type settings struct {
	topo       string
	alg        Algorithm
	sort       SortBy
	containers int
	comps      []comp
	byName     map[string]int
	total      int // instances
	max        vec // 0 = no limit in that dimension
	maxSet     [3]bool
	maxInst    int   // 0 = no limit
	padPct     int64 // 0..100
	padMin     vec
}

func (s *settings) invalid(component, field, format string, args ...any) error {
	return &packingError{Topology: s.topo, Component: component, Field: field, Msg: fmt.Sprintf(format, args...), Kind: errInvalid}
}

func (s *settings) tooBig(component, field, format string, args ...any) error {
	return &packingError{Topology: s.topo, Component: component, Field: field, Msg: fmt.Sprintf(format, args...), Kind: errDoesNotFit}
}

// resolve validates req and applies the defaults.
func resolve(req Request) (*settings, error) {
	st := req.Settings
	s := &settings{topo: req.Topology, alg: st.Algorithm, sort: st.Sort, containers: st.Containers, byName: map[string]int{}}
	switch s.alg {
	case "":
		s.alg = roundRobin
	case roundRobin, firstFitDecreasing, resourceCompliantRoundRobin:
	default:
		return nil, s.invalid("", keyAlgorithm, "unknown algorithm %q (want round_robin, first_fit_decreasing or resource_compliant_round_robin)", s.alg)
	}
	switch s.sort {
	case "":
		s.sort = sortRAM
	case sortRAM, sortCPU:
	default:
		return nil, s.invalid("", keyFFDSort, "unknown sort %q (want ram or cpu)", s.sort)
	}
	switch {
	case s.containers < 0:
		return nil, s.invalid("", KeyContainers, "must be at least 1, got %d", s.containers)
	case s.containers == 0:
		s.containers = 1
	}
	switch {
	case st.MaxInstances < 0:
		return nil, s.invalid("", keyMaxInstances, "must be at least 1, got %d", st.MaxInstances)
	case st.MaxInstances > 0:
		s.maxInst = st.MaxInstances
	case s.alg != roundRobin:
		s.maxInst = defaultMaxInstances
	}
	pad := Padding{Percent: defaultPaddingPercent, Min: defaultPaddingMin}
	if st.Padding != nil {
		pad = *st.Padding
	}
	if pad.Percent < 0 || pad.Percent > 100 {
		return nil, s.invalid("", keyPaddingPercent, "must be in 0..100, got %d", pad.Percent)
	}
	s.padPct = int64(pad.Percent)
	padMin, err := s.vector("", paddingKeys, pad.Min, true)
	if err != nil {
		return nil, err
	}
	s.padMin = padMin

	instDefault, err := s.vector("", instanceKeys, st.Instance, false)
	if err != nil {
		return nil, err
	}
	def := toVec(defaultInstance)
	for d := range instDefault {
		if instDefault[d] == 0 {
			instDefault[d] = def[d]
		}
	}
	max, err := s.vector("", maxKeys, st.MaxContainer, false)
	if err != nil {
		return nil, err
	}
	// The default max container holds defaultContainerInstances default
	// instances plus their padding (round robin: no default limit).
	var fill vec
	for d := range fill {
		fill[d] = instDefault[d] * defaultContainerInstances
	}
	fill = fill.add(s.padding(fill))
	for d := range max {
		s.maxSet[d] = max[d] > 0
		if max[d] == 0 && s.alg != roundRobin {
			max[d] = fill[d]
		}
	}
	s.max = max

	if len(req.Components) == 0 {
		return nil, s.invalid("", "components", "nothing to pack")
	}
	for i, c := range req.Components {
		if c.Name == "" {
			return nil, s.invalid("", "components", "component %d has no name", i)
		}
		if _, dup := s.byName[c.Name]; dup {
			return nil, s.invalid(c.Name, "name", "duplicate component name")
		}
		if c.Parallelism < 1 {
			return nil, s.invalid(c.Name, "parallelism", "must be at least 1, got %d", c.Parallelism)
		}
		r, err := s.vector(c.Name, componentKeys, c.Resources, false)
		if err != nil {
			return nil, err
		}
		for d := range r {
			if r[d] == 0 {
				r[d] = instDefault[d]
			}
		}
		s.byName[c.Name] = i
		s.comps = append(s.comps, comp{name: c.Name, par: c.Parallelism, res: r})
		s.total += c.Parallelism
	}
	for _, c := range s.comps {
		if err := s.fitsAlone(c); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// vector converts and checks one Resources value; keys name its fields.
// Negative values are errors; zeros are allowed (they mean "default" or, for
// padding, "none").
func (s *settings) vector(component string, keys [3]string, r Resources, zeroCPUOK bool) (vec, error) {
	if math.IsNaN(r.CPU) || math.IsInf(r.CPU, 0) || r.CPU < 0 || r.CPU > maxCPU {
		return vec{}, s.invalid(component, keys[dimCPU], "must be a number of cores in (0, %g], got %v", float64(maxCPU), r.CPU)
	}
	v := toVec(r)
	if r.CPU > 0 && v[dimCPU] == 0 && !zeroCPUOK {
		return vec{}, s.invalid(component, keys[dimCPU], "%v is below the resolution of 0.001 cores", r.CPU)
	}
	for _, d := range []int{dimRAM, dimDisk} {
		if v[d] < 0 || v[d] > maxBytes {
			return vec{}, s.invalid(component, keys[d], "must be a size in (0, 1 PiB], got %d bytes", v[d])
		}
	}
	return v, nil
}

// padding is a container's padding for an instance sum.
func (s *settings) padding(sum vec) vec {
	var p vec
	for d := range p {
		p[d] = max(s.padMin[d], (sum[d]*s.padPct+99)/100)
	}
	return p
}

// fits reports whether r fits into b: instance count and, per limited
// dimension, the new sum plus its padding within the limit.
func (s *settings) fits(b *bin, r vec) bool {
	if s.maxInst > 0 && len(b.insts)+1 > s.maxInst {
		return false
	}
	ns := b.sum.add(r)
	p := s.padding(ns)
	for d := range ns {
		if s.max[d] > 0 && ns[d]+p[d] > s.max[d] {
			return false
		}
	}
	return true
}

// fitsAlone checks that one instance of c fits an empty container, with an
// error naming the component and the limit.
func (s *settings) fitsAlone(c comp) error {
	p := s.padding(c.res)
	for d := range c.res {
		if s.max[d] > 0 && c.res[d]+p[d] > s.max[d] {
			limit := fmt.Sprintf("the container limit %s (%s)", formatDim(d, s.max[d]), maxKeys[d])
			if !s.maxSet[d] {
				limit = fmt.Sprintf("the default container limit %s (%d default instances plus padding; set %s)",
					formatDim(d, s.max[d]), defaultContainerInstances, maxKeys[d])
			}
			return s.tooBig(c.name, componentKeys[d], "one instance needs %s plus %s padding, more than %s",
				formatDim(d, c.res[d]), formatDim(d, p[d]), limit)
		}
	}
	return nil
}

func (s *settings) add(b *bin, in inst) {
	b.insts = append(b.insts, in)
	b.sum = b.sum.add(s.comps[in.comp].res)
}

// taskOrder lists every instance in global task-id order.
func (s *settings) taskOrder() []inst {
	out := make([]inst, 0, s.total)
	for ci, c := range s.comps {
		for k := 0; k < c.par; k++ {
			out = append(out, inst{ci, k})
		}
	}
	return out
}

// ffdOrder is the components' first-fit-decreasing order: by the sort key
// descending, the other resource breaking ties, then topology order (the
// sort is stable), so equal components keep their declared order.
func (s *settings) ffdOrder() []int {
	order := make([]int, len(s.comps))
	for i := range order {
		order[i] = i
	}
	first, second := dimRAM, dimCPU
	if s.sort == sortCPU {
		first, second = dimCPU, dimRAM
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ra, rb := s.comps[a].res, s.comps[b].res
		if c := cmp.Compare(rb[first], ra[first]); c != 0 {
			return c
		}
		return cmp.Compare(rb[second], ra[second])
	})
	return order
}

func (s *settings) checkContainerCount() error {
	if s.containers > s.total {
		return s.invalid("", KeyContainers, "%d containers for %d instances: every container needs at least one instance",
			s.containers, s.total)
	}
	return nil
}

// packRoundRobin deals instances in task order to s.containers containers,
// then checks the limits that were set.
func packRoundRobin(s *settings) ([]*bin, error) {
	if err := s.checkContainerCount(); err != nil {
		return nil, err
	}
	bins := newBins(s.containers)
	for t, in := range s.taskOrder() {
		s.add(bins[t%len(bins)], in)
	}
	for _, b := range bins {
		if err := s.checkBin(b); err != nil {
			return nil, err
		}
	}
	return bins, nil
}

// checkBin reports a round-robin container over a limit that was set.
func (s *settings) checkBin(b *bin) error {
	hint := fmt.Sprintf("raise %s or use %s", KeyContainers, resourceCompliantRoundRobin)
	if s.maxInst > 0 && len(b.insts) > s.maxInst {
		return s.tooBig("", keyMaxInstances, "round robin puts %d instances into container %d, more than %d: %s",
			len(b.insts), b.id, s.maxInst, hint)
	}
	p := s.padding(b.sum)
	for d := range b.sum {
		if s.max[d] > 0 && b.sum[d]+p[d] > s.max[d] {
			return s.tooBig("", maxKeys[d], "round robin puts %s (padding included) into container %d, more than %s: %s",
				formatDim(d, b.sum[d]+p[d]), b.id, formatDim(d, s.max[d]), hint)
		}
	}
	return nil
}

// packFFD places instances, components in ffdOrder, into the first container
// with room, opening a container when none has any.
func packFFD(s *settings) ([]*bin, error) {
	var bins []*bin
	for _, ci := range s.ffdOrder() {
		for k := 0; k < s.comps[ci].par; k++ {
			bins = s.firstFit(bins, inst{ci, k})
		}
	}
	return bins, nil
}

// firstFit adds in to the first bin with room, or to a new bin.
func (s *settings) firstFit(bins []*bin, in inst) []*bin {
	for _, b := range bins {
		if s.fits(b, s.comps[in.comp].res) {
			s.add(b, in)
			return bins
		}
	}
	b := &bin{id: len(bins) + 1}
	s.add(b, in)
	return append(bins, b)
}

// packRCRR is Heron's resource-compliant round robin: strict round robin
// over n containers starting at s.containers; when an instance does not fit
// the container whose turn it is, start over with n+1. It ends at the latest
// with one instance per container, which fits (resolve checked every
// instance alone), so the result keeps round robin's balance with the fewest
// containers that strict dealing allows.
func packRCRR(s *settings) ([]*bin, error) {
	if err := s.checkContainerCount(); err != nil {
		return nil, err
	}
	order := s.taskOrder()
	for n := s.containers; ; n++ {
		bins := newBins(n)
		ok := true
		for t, in := range order {
			b := bins[t%n]
			if !s.fits(b, s.comps[in.comp].res) {
				ok = false
				break
			}
			s.add(b, in)
		}
		if ok {
			return bins, nil
		}
	}
}

func newBins(n int) []*bin {
	bins := make([]*bin, n)
	for i := range bins {
		bins[i] = &bin{id: i + 1}
	}
	return bins
}

// plan turns bins (ids 1..n in order) into a Plan with task ids.
func (s *settings) plan(req Request, bins []*bin) *Plan {
	base := make([]int, len(s.comps))
	next := 1
	for i, c := range s.comps {
		base[i] = next
		next += c.par
	}
	p := &Plan{
		Topology:  s.topo,
		Algorithm: s.alg,
		Limits: Limits{
			MaxContainer: s.max.resources(),
			MaxInstances: s.maxInst,
			Padding:      Padding{Percent: int(s.padPct), Min: s.padMin.resources()},
		},
		Request: cloneRequest(req),
	}
	var total vec
	for _, b := range bins {
		c := Container{ID: b.id}
		for _, in := range b.insts {
			cp := s.comps[in.comp]
			c.Instances = append(c.Instances, Instance{
				TaskID: uint32(base[in.comp] + in.index), Component: cp.name, ComponentID: in.comp,
				Index: in.index, Resources: cp.res.resources(),
			})
		}
		slices.SortFunc(c.Instances, func(a, b Instance) int { return cmp.Compare(a.TaskID, b.TaskID) })
		pad := s.padding(b.sum)
		c.Padding = pad.resources()
		c.Resources = b.sum.add(pad).resources()
		total = total.add(b.sum.add(pad))
		p.Containers = append(p.Containers, c)
	}
	p.Total = total.resources()
	return p
}

func cloneRequest(r Request) Request {
	r.Components = slices.Clone(r.Components)
	if r.Settings.Padding != nil {
		p := *r.Settings.Padding
		r.Settings.Padding = &p
	}
	return r
}
