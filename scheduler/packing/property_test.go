package packing

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// randomRequest draws a small topology and settings; limits are sometimes
// too small, which must give errDoesNotFit.
func randomRequest(r *rand.Rand) Request {
	cpus := []float64{0, 0.1, 0.25, 0.5, 1, 1.5, 3}
	rams := []int64{0, 64 * miB, 256 * miB, 512 * miB, giB, 2 * giB, 3 * giB}
	req := Request{Topology: "t"}
	n := 1 + r.IntN(5)
	total := 0
	for i := range n {
		c := Component{Name: fmt.Sprintf("c%d", i), Parallelism: 1 + r.IntN(8),
			Resources: Resources{CPU: cpus[r.IntN(len(cpus))], RAM: rams[r.IntN(len(rams))]}}
		if r.IntN(4) == 0 {
			c.Resources.Disk = rams[r.IntN(len(rams))]
		}
		total += c.Parallelism
		req.Components = append(req.Components, c)
	}
	st := &req.Settings
	st.Algorithm = algorithms[r.IntN(len(algorithms))]
	if r.IntN(2) == 0 {
		st.Sort = sortCPU
	}
	st.Containers = 1 + r.IntN(total)
	if r.IntN(2) == 0 {
		st.MaxContainer = Resources{CPU: float64(1 + r.IntN(8)), RAM: int64(1+r.IntN(8)) * giB}
	}
	if r.IntN(3) == 0 {
		st.MaxInstances = 1 + r.IntN(6)
	}
	switch r.IntN(3) {
	case 0:
		st.Padding = &Padding{}
	case 1:
		st.Padding = &Padding{Percent: r.IntN(60), Min: Resources{CPU: 0.5, RAM: 128 * miB}}
	}
	return req
}

func TestPackProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	packed := map[Algorithm]int{}
	for i := range 600 {
		req := randomRequest(r)
		p, err := Pack(req)
		if err != nil {
			if !errors.Is(err, errDoesNotFit) {
				t.Fatalf("case %d: %+v: %v", i, req, err)
			}
			continue
		}
		packed[p.Algorithm]++
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			checkPlan(t, req, p)
			q, _ := Pack(req)
			if !reflect.DeepEqual(p, q) {
				t.Fatal("not deterministic")
			}
			// Round robin and resource-compliant round robin deal strictly:
			// task t (1-based) sits in container (t-1)%n+1.
			if p.Algorithm != firstFitDecreasing {
				n := len(p.Containers)
				if p.Algorithm == roundRobin && n != req.Settings.Containers ||
					p.Algorithm == resourceCompliantRoundRobin && n < req.Settings.Containers {
					t.Fatalf("%s: %d containers for %d requested", p.Algorithm, n, req.Settings.Containers)
				}
				for id, c := range p.Assignment()[1:] {
					if c != id%n+1 {
						t.Fatalf("task %d in container %d, want %d", id+1, c, id%n+1)
					}
				}
			}
		})
	}
	for _, a := range algorithms {
		if packed[a] < 50 {
			t.Errorf("only %d random requests packed with %s", packed[a], a)
		}
	}
}

func TestRepackProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	done := 0
	for i := range 600 {
		req := randomRequest(r)
		old, err := Pack(req)
		if err != nil {
			continue
		}
		change := map[string]int{}
		for _, c := range req.Components {
			if r.IntN(2) == 0 {
				change[c.Name] = 1 + r.IntN(10)
			}
		}
		p, err := Repack(old, change)
		if err != nil {
			if !errors.Is(err, errDoesNotFit) {
				t.Fatalf("case %d: %v", i, err)
			}
			continue
		}
		done++
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			newReq := cloneRequest(req)
			for j, c := range newReq.Components {
				if n, ok := change[c.Name]; ok {
					newReq.Components[j].Parallelism = n
				}
			}
			if !reflect.DeepEqual(p.Request, newReq) {
				t.Fatalf("plan request %+v, want %+v", p.Request, newReq)
			}
			checkPlan(t, newReq, p)
			checkMoves(t, req, old, p)
		})
	}
	if done < 200 {
		t.Fatalf("only %d repacks", done)
	}
}

// checkMoves asserts that a repack only adds the new indexes, removes the
// highest ones and moves nothing but the instances of a container that took
// a freed id (compaction).
func checkMoves(t *testing.T, req Request, old, p *Plan) {
	t.Helper()
	oldPar := map[string]int{}
	for _, c := range req.Components {
		oldPar[c.Name] = c.Parallelism
	}
	newPar := map[string]int{}
	for _, c := range p.Request.Components {
		newPar[c.Name] = c.Parallelism
	}
	relabel := map[int]int{} // old container id -> new id
	movedCount := map[int]int{}
	added, removed := 0, 0
	for _, m := range Moves(old, p) {
		switch {
		case m.From == 0:
			added++
			if m.Index < oldPar[m.Component] || m.Index >= newPar[m.Component] {
				t.Fatalf("added %s/%d (parallelism %d -> %d)", m.Component, m.Index, oldPar[m.Component], newPar[m.Component])
			}
		case m.To == 0:
			removed++
			if m.Index < newPar[m.Component] {
				t.Fatalf("removed %s/%d, below the new parallelism %d", m.Component, m.Index, newPar[m.Component])
			}
		default:
			if m.To >= m.From {
				t.Fatalf("moved %s/%d up from container %d to %d", m.Component, m.Index, m.From, m.To)
			}
			if to, ok := relabel[m.From]; ok && to != m.To {
				t.Fatalf("container %d split across %d and %d", m.From, to, m.To)
			}
			relabel[m.From] = m.To
			movedCount[m.From]++
		}
	}
	// A container that moves, moves whole, and only into the id of a
	// container that was emptied.
	survivors := map[int]int{}
	for _, c := range old.Containers {
		for _, in := range c.Instances {
			if in.Index < newPar[in.Component] {
				survivors[c.ID]++
			}
		}
	}
	for from, to := range relabel {
		if movedCount[from] != survivors[from] {
			t.Fatalf("container %d: %d of %d remaining instances moved", from, movedCount[from], survivors[from])
		}
		if survivors[to] != 0 {
			t.Fatalf("container %d took id %d, whose container still has %d instances", from, to, survivors[to])
		}
	}
	wantAdded, wantRemoved := 0, 0
	for name, n := range newPar {
		wantAdded += max(0, n-oldPar[name])
		wantRemoved += max(0, oldPar[name]-n)
	}
	if added != wantAdded || removed != wantRemoved {
		t.Fatalf("added %d removed %d, want %d and %d", added, removed, wantAdded, wantRemoved)
	}
}

func TestRepackNoChangeIsIdentity(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		req := randomRequest(r)
		old, err := Pack(req)
		if err != nil {
			continue
		}
		same := map[string]int{req.Components[0].Name: req.Components[0].Parallelism}
		p, err := Repack(old, same)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p, old) {
			t.Fatalf("repack without change differs:\n%q\n%q", shape(old), shape(p))
		}
		if m := Moves(old, p); len(m) != 0 {
			t.Fatalf("moves %v", m)
		}
	}
}

// BenchmarkPack packs 1000 instances (50 components x 20) with each
// algorithm (round robin into 10 containers, the others under a 4 CPU /
// 4 giB limit); resource-compliant round robin starts from one container and
// restarts with one more until strict dealing fits.
func BenchmarkPack(b *testing.B) {
	var cs []Component
	for i := range 50 {
		cs = append(cs, Component{Name: fmt.Sprintf("c%d", i), Parallelism: 20,
			Resources: Resources{CPU: 0.1 * float64(1+i%5), RAM: int64(1+i%7) * 64 * miB, Disk: miB}})
	}
	for _, a := range algorithms {
		req := Request{Topology: "bench", Components: cs, Settings: Settings{Algorithm: a, Containers: 10}}
		if a != roundRobin {
			req.Settings.MaxContainer = Resources{CPU: 4, RAM: 4 * giB}
		}
		if a == resourceCompliantRoundRobin {
			req.Settings.Containers = 1
		}
		b.Run(string(a), func(b *testing.B) {
			for b.Loop() {
				if _, err := Pack(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
