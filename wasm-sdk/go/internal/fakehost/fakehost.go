// Package fakehost is an in-memory host for the Go SDK's runtime, with
// the real host's semantics where a guest can see them (state_get and
// state_scan copy only if the value fits; state_write's ops; user
// metrics). It records every call. The SDK's own tests and the public
// harness (ardeatest) run components against it, natively.
package fakehost

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/ardea-dev/ardea/wasm-sdk/go/internal/tuple"
)

// Host implements bridge.Host in memory.
type Host struct {
	State        map[string][]byte
	Emits        [][]byte // one entry per emit call
	NoRecord     bool     // count emit and state_write calls without keeping their bytes (benchmarks)
	Logs         []Log
	Errors       []string
	Metrics      map[string]int64
	MetricCalls  int
	Gauges       map[string]float64
	Observed     map[string][]int64
	ObserveCalls int // observe_many calls
	NowNanos     int64

	Gets, Writes, Scans int
	WriteOps            [][]byte // state_write payloads
	// Problems are the guest's violations of the ABI seen by the host
	// (a malformed state_write).
	Problems []string
}

// Log is one log line.
type Log struct {
	Level int32
	Msg   string
}

// New returns an empty host.
func New() *Host {
	return &Host{State: map[string][]byte{}, Metrics: map[string]int64{}}
}

func (h *Host) Emit(ops []byte) {
	if h.NoRecord {
		h.Emits = append(h.Emits, nil)
		return
	}
	h.Emits = append(h.Emits, slices.Clone(ops))
}
func (h *Host) Log(level int32, msg string) { h.Logs = append(h.Logs, Log{level, msg}) }
func (h *Host) Error(msg string)            { h.Errors = append(h.Errors, msg) }
func (h *Host) Metric(name string, d int64) {
	if h.Metrics == nil {
		h.Metrics = map[string]int64{}
	}
	h.Metrics[name] += d
	h.MetricCalls++
}
func (h *Host) Gauge(name string, v float64) {
	if h.Gauges == nil {
		h.Gauges = map[string]float64{}
	}
	h.Gauges[name] = v
}
func (h *Host) ObserveMany(name string, vs []int64) {
	h.ObserveCalls++
	for _, v := range vs {
		h.Observe(name, v)
	}
}
func (h *Host) Observe(name string, v int64) {
	if h.Observed == nil {
		h.Observed = map[string][]int64{}
	}
	h.Observed[name] = append(h.Observed[name], v)
}
func (h *Host) Now() int64 { return h.NowNanos }

func (h *Host) StateGet(key string, buf []byte) int32 {
	h.Gets++
	v, ok := h.State[key]
	if !ok {
		return -1
	}
	if len(v) <= len(buf) {
		copy(buf, v)
	}
	return int32(len(v))
}

func (h *Host) StateWrite(ops []byte) {
	h.Writes++
	if h.NoRecord {
		return
	}
	h.WriteOps = append(h.WriteOps, slices.Clone(ops))
	for len(ops) > 0 {
		if len(ops) < 9 {
			h.Problems = append(h.Problems, fmt.Sprintf("state_write: %d trailing bytes", len(ops)))
			return
		}
		op := ops[0]
		kl := binary.LittleEndian.Uint32(ops[1:])
		if uint64(len(ops)) < 9+uint64(kl) {
			h.Problems = append(h.Problems, "state_write: key past the end")
			return
		}
		k := string(ops[5 : 5+kl])
		ops = ops[5+kl:]
		vl := binary.LittleEndian.Uint32(ops)
		if uint64(len(ops)) < 4+uint64(vl) {
			h.Problems = append(h.Problems, "state_write: value past the end")
			return
		}
		v := slices.Clone(ops[4 : 4+vl])
		ops = ops[4+vl:]
		switch op {
		case 1:
			if h.State == nil {
				h.State = map[string][]byte{}
			}
			h.State[k] = v
		case 2:
			if vl != 0 {
				h.Problems = append(h.Problems, fmt.Sprintf("state_write delete of %q with %d value bytes", k, vl))
			}
			delete(h.State, k)
		default:
			h.Problems = append(h.Problems, fmt.Sprintf("state_write: op %d", op))
		}
	}
}

func (h *Host) StateScan(prefix string, buf []byte) int32 {
	h.Scans++
	var keys []string
	for k := range h.State {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(keys)))
	for _, k := range keys {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(k)))
		out = append(out, k...)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(h.State[k])))
		out = append(out, h.State[k]...)
	}
	if len(out) <= len(buf) {
		copy(buf, out)
	}
	return int32(len(out))
}

// Ops decodes every emit call's ops, in order.
func (h *Host) Ops() ([]tuple.Op, error) {
	var out []tuple.Op
	for _, b := range h.Emits {
		var spans []int
		for off := 0; off < len(b); {
			var op tuple.Op
			var err error
			op, off, spans, err = tuple.NextOp(b, off, spans)
			if err != nil {
				return out, fmt.Errorf("emit ops: %w", err)
			}
			out = append(out, op)
		}
	}
	return out, nil
}

// AllEmitted is every emit call's bytes concatenated.
func (h *Host) AllEmitted() []byte { return bytes.Join(h.Emits, nil) }

// Reset forgets the recorded calls (not the state or gauges).
func (h *Host) Reset() {
	h.Emits, h.Logs, h.Errors, h.WriteOps = nil, nil, nil, nil
	h.Gets, h.Writes, h.Scans, h.MetricCalls = 0, 0, 0, 0
	clear(h.Metrics)
}
