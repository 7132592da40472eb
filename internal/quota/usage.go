package quota

import (
	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/host/limits"
	"github.com/ardea-dev/ardea/scheduler/settings"
)

// DefaultMemoryPages is the memory limit of a wasm instance whose
// config does not set wasm.memory.pages (64 MiB); TopologyUsage counts
// it for ComponentUsage.MemoryPages 0.
const DefaultMemoryPages = limits.DefaultMemoryLimitPages

// ComponentUsage is what TopologyUsage needs of one component: its
// instances (parallelism), whether they are wasm instances (builtins
// reserve no wasm memory), and each instance's memory limit in 64 KiB
// pages (settings.InstanceLimits(t, c).Pages; 0: DefaultMemoryPages).
type ComponentUsage struct {
	Instances   int
	Wasm        bool
	MemoryPages uint32
}

// TopologyUsage is what one topology holds of its tenant's quotas: one
// topology, its instances, its containers (host processes), and the sum
// of its wasm instances' memory limits. An update adds
// TopologyUsage(new).Sub(TopologyUsage(old)).
func TopologyUsage(containers int, comps []ComponentUsage) Usage {
	u := Usage{Topologies: 1, Containers: int64(containers)}
	for _, c := range comps {
		u.Instances += int64(c.Instances)
		if c.Wasm {
			pages := int64(c.MemoryPages)
			if pages == 0 {
				pages = DefaultMemoryPages
			}
			u.WasmMemoryPages += int64(c.Instances) * pages
		}
	}
	return u
}

// ContainerRates divides a tenant's tuple and byte rates among its
// running containers: each gets an equal share, rate/containers, for its
// stream manager (bus.Options.TuplesPerSecond, BytesPerSecond). Zero
// stays zero (unlimited). containers counts every running container of
// every topology of the tenant; when it changes (a submit, a kill, a
// rescale) or the quotas do, the daemon computes the shares again and
// tells every running host its new one (ctl.Commands.SetRate, which the
// host applies with bus.StreamManager.SetRate and keeps for the
// containers it starts later); a host that missed it reports another
// share in its heartbeats and is told again.
//
// Equal shares are simple and never let the tenant pass its rate, but a
// container that sends less than its share leaves the rest unused: a
// tenant whose load is uneven across containers gets less than its rate.
// Kafka's and Redpanda's per-broker quotas have the same property.
func ContainerRates(q Quotas, containers int) (tuplesPerSec, bytesPerSec float64) {
	if containers < 1 {
		containers = 1
	}
	share := func(rate int64) float64 {
		if rate <= 0 {
			return 0
		}
		return float64(rate) / float64(containers)
	}
	return share(q.TuplesPerSecond), share(q.BytesPerSecond)
}

// Components lists t's components for TopologyUsage: each one's
// parallelism, whether it runs as wasm (not a builtin) and its instances'
// memory limit from its config and the topology's
// (settings.InstanceLimits).
func Components(t *ardea.Topology) ([]ComponentUsage, error) {
	out := make([]ComponentUsage, 0, len(t.Components))
	for _, c := range t.Components {
		cu := ComponentUsage{Instances: max(1, c.Parallelism)}
		if c.BuiltinName() == "" {
			l, err := settings.InstanceLimits(t, c)
			if err != nil {
				return nil, err
			}
			cu.Wasm, cu.MemoryPages = true, l.Pages
		}
		out = append(out, cu)
	}
	return out, nil
}
