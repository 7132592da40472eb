package process

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/ardea-dev/ardea/scheduler/planner"

	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/tuple"
	"github.com/ardea-dev/ardea/scheduler/api"
	"github.com/ardea-dev/ardea/scheduler/ctl"
	"github.com/ardea-dev/ardea/scheduler/statemgr"
)

// handoff stops the container and stores every bolt task's state, key
// group by key group, under epoch.
func (h *proc) handoff(ctx context.Context, epoch uint64) error {
	r := h.cur
	if r != nil {
		r.cancel()
		<-r.done
	}
	if r != nil {
		p := r.plan
		for _, id := range planner.ContainerTasks(p, h.o.Container) {
			st := r.c.State(id)
			comp := p.Components[p.Tasks[id].Component].Name
			for _, kg := range st.KeyGroups() {
				data := encodeGroup(st.ExportGroup(kg))
				if err := h.store.PutKeyGroupState(ctx, h.o.Topology, comp, kg, epoch, data); err != nil {
					return fmt.Errorf("host: hand off component %s key group %d: %w", comp, kg, err)
				}
			}
		}
		h.closeCur()
	}
	h.handedOff = epoch
	h.state = api.HostStopped
	h.log.Info("state handed off", "epoch", epoch)
	return nil
}

// restore loads the handed-off key groups each local task owns under the
// plan (only the tasks of comps, if given).
func (h *proc) restore(ctx context.Context, doc ctl.PlanDoc, comps []int) (map[uint32]*host.MemoryState, error) {
	if doc.HandoffEpoch == 0 {
		return nil, nil
	}
	p := doc.Plan
	out := map[uint32]*host.MemoryState{}
	for _, id := range planner.ContainerTasks(p, h.o.Container) {
		t := p.Tasks[id]
		if comps != nil && !slices.Contains(comps, t.Component) {
			continue
		}
		pc := &p.Components[t.Component]
		st := host.NewMemoryState(pc.MaxKeyGroups)
		for kg := range pc.MaxKeyGroups {
			if tuple.TaskIndexForKeyGroup(kg, pc.MaxKeyGroups, pc.Parallelism) != t.Index {
				continue
			}
			data, err := h.store.GetKeyGroupState(ctx, h.o.Topology, pc.Name, kg, doc.HandoffEpoch)
			if errors.Is(err, statemgr.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("host: restore component %s key group %d: %w", pc.Name, kg, err)
			}
			m, err := decodeGroup(data)
			if err != nil {
				return nil, fmt.Errorf("host: restore component %s key group %d: %w", pc.Name, kg, err)
			}
			if err := st.ImportGroup(kg, m); err != nil {
				return nil, fmt.Errorf("host: restore component %s: %w", pc.Name, err)
			}
		}
		out[id] = st
	}
	return out, nil
}

// encodeGroup and decodeGroup are a key group's handoff format:
// u32 count, (u32 klen, key, u32 vlen, value)*.
func encodeGroup(m map[string][]byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(m)))
	for k, v := range m {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(k)))
		b = append(b, k...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
		b = append(b, v...)
	}
	return b
}

func decodeGroup(b []byte) (map[string][]byte, error) {
	bad := errors.New("corrupt key group state")
	if len(b) < 4 {
		return nil, bad
	}
	n := int(binary.LittleEndian.Uint32(b))
	b = b[4:]
	m := make(map[string][]byte, min(n, 1<<16))
	for range n {
		if len(b) < 4 {
			return nil, bad
		}
		kl := int(binary.LittleEndian.Uint32(b))
		if len(b) < 4+kl+4 {
			return nil, bad
		}
		k := string(b[4 : 4+kl])
		b = b[4+kl:]
		vl := int(binary.LittleEndian.Uint32(b))
		if len(b) < 4+vl {
			return nil, bad
		}
		m[k] = append([]byte(nil), b[4:4+vl]...)
		b = b[4+vl:]
	}
	if len(b) != 0 {
		return nil, bad
	}
	return m, nil
}
