package packing

import (
	"cmp"
	"slices"
)

// Repack changes the parallelism of the components named in parallelism
// (absolute counts; components not named keep theirs) and returns the new
// plan, packed with current's settings (current.Request). It follows Heron's
// update flow and moves as little as it can:
//
//   - Instances that stay keep their container.
//   - A component that shrinks loses its highest indexes, so indexes stay
//     0..p-1 (key groups map onto contiguous index ranges).
//   - A container left empty is dropped; to keep ids 1..n, the containers
//     with the highest ids take the freed ids (their instances count as
//     moved in Moves).
//   - New instances go to existing containers with room, else to new ones:
//     round robin puts each into the container with the fewest instances
//     (the lowest id on a tie; a new container while fewer than
//     Settings.Containers exist), first-fit-decreasing into the first
//     container with room (components in FFD order), resource-compliant
//     round robin into the next container with room, cycling from
//     container 1 (Heron's flexible policy).
//
// To change the container count of a round-robin topology, Pack again (every
// instance may move). current is not modified. Errors wrap errInvalid or
// errDoesNotFit.
func Repack(current *Plan, parallelism map[string]int) (*Plan, error) {
	req := cloneRequest(current.Request)
	s0 := &settings{topo: req.Topology}
	for _, name := range sortedParallelism(parallelism) {
		i := slices.IndexFunc(req.Components, func(c Component) bool { return c.Name == name })
		if i < 0 {
			return nil, s0.invalid(name, "parallelism", "unknown component")
		}
		req.Components[i].Parallelism = parallelism[name]
	}
	s, err := resolve(req)
	if err != nil {
		return nil, err
	}
	old, err := resolve(current.Request)
	if err != nil {
		return nil, err
	}

	// Existing containers minus the instances that go.
	var bins []*bin
	for _, c := range current.Containers {
		b := &bin{id: c.ID}
		for _, in := range c.Instances {
			ci, ok := s.byName[in.Component]
			if !ok || in.Index < 0 || in.Index >= old.comps[ci].par {
				return nil, s.invalid(in.Component, "instances", "plan has instance %d, which its request does not", in.Index)
			}
			if in.Index < s.comps[ci].par {
				s.add(b, inst{ci, in.Index})
			}
		}
		if len(b.insts) > 0 {
			bins = append(bins, b)
		}
	}
	slices.SortFunc(bins, func(a, b *bin) int { return cmp.Compare(a.id, b.id) })
	compact(bins)

	// New instances, in the algorithm's order.
	var add []inst
	order := make([]int, len(s.comps))
	for i := range order {
		order[i] = i
	}
	if s.alg == firstFitDecreasing {
		order = s.ffdOrder()
	}
	for _, ci := range order {
		for k := old.comps[ci].par; k < s.comps[ci].par; k++ {
			add = append(add, inst{ci, k})
		}
	}
	next := 0 // resource-compliant round robin's cursor into bins
	for _, in := range add {
		r := s.comps[in.comp].res
		switch s.alg {
		case roundRobin:
			var best *bin
			for _, b := range bins {
				if s.fits(b, r) && (best == nil || len(b.insts) < len(best.insts)) {
					best = b
				}
			}
			if best == nil || len(bins) < s.containers {
				best = &bin{id: len(bins) + 1}
				bins = append(bins, best)
			}
			s.add(best, in)
		case firstFitDecreasing:
			bins = s.firstFit(bins, in)
		case resourceCompliantRoundRobin:
			placed := -1
			for j := range bins {
				k := (next + j) % len(bins)
				if s.fits(bins[k], r) {
					placed = k
					break
				}
			}
			if placed < 0 {
				bins = append(bins, &bin{id: len(bins) + 1})
				placed = len(bins) - 1
			}
			s.add(bins[placed], in)
			next = (placed + 1) % len(bins)
		}
	}
	return s.plan(req, bins), nil
}

// compact renumbers bins (sorted by id, none empty) to 1..n: each bin whose
// id is beyond n takes the lowest free id, the bins with the highest ids
// first in ascending order, so the bins that keep their id are untouched.
func compact(bins []*bin) {
	n := len(bins)
	used := make([]bool, n+1)
	for _, b := range bins {
		if b.id <= n {
			used[b.id] = true
		}
	}
	free := 1
	for _, b := range bins {
		if b.id > n {
			for used[free] {
				free++
			}
			b.id = free
			used[free] = true
		}
	}
	slices.SortFunc(bins, func(a, b *bin) int { return cmp.Compare(a.id, b.id) })
}

func sortedParallelism(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Move is one instance that a repack starts, stops or moves, named by its
// stable identity (component, index). From is 0 for a new instance, To is 0
// for a removed one.
type Move struct {
	Component string `json:"component"`
	Index     int    `json:"index"`
	From      int    `json:"from"`
	To        int    `json:"to"`
}

// Moves lists what changes from old to new: instances added (From 0),
// removed (To 0) and moved between containers, ordered by component (new's
// request order, then removed components in old's) and index. The scheduler
// starts the added instances, stops the removed ones and hands the moved
// ones over.
func Moves(old, new *Plan) []Move {
	type key struct {
		comp  string
		index int
	}
	where := func(p *Plan) map[key]int {
		m := map[key]int{}
		for _, c := range p.Containers {
			for _, in := range c.Instances {
				m[key{in.Component, in.Index}] = c.ID
			}
		}
		return m
	}
	before, after := where(old), where(new)
	rank := map[string]int{}
	for _, c := range new.Request.Components {
		rank[c.Name] = len(rank)
	}
	for _, c := range old.Request.Components {
		if _, ok := rank[c.Name]; !ok {
			rank[c.Name] = len(rank)
		}
	}
	var out []Move
	for k, from := range before {
		if to := after[k]; to != from {
			out = append(out, Move{Component: k.comp, Index: k.index, From: from, To: to})
		}
	}
	for k, to := range after {
		if _, ok := before[k]; !ok {
			out = append(out, Move{Component: k.comp, Index: k.index, To: to})
		}
	}
	slices.SortFunc(out, func(a, b Move) int {
		if c := cmp.Compare(rank[a.Component], rank[b.Component]); c != 0 {
			return c
		}
		return cmp.Compare(a.Index, b.Index)
	})
	return out
}
