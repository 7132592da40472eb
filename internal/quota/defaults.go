package quota

import (
	"runtime"
	"strconv"
)

// Machine is a machine's size, which the built-in default quotas are
// sized from.
type Machine struct {
	Cores       int   // runtime.NumCPU
	MemoryBytes int64 // physical memory; 0: unknown (DefaultMachineMemory)
}

// DefaultMachineMemory is the memory assumed when the machine's cannot
// be read (4 GiB).
const DefaultMachineMemory = 4 << 30

// wasmPageBytes is a wasm memory page.
const wasmPageBytes = 64 << 10

// ThisMachine is the machine the daemon runs on.
func ThisMachine() Machine {
	return Machine{Cores: runtime.NumCPU(), MemoryBytes: machineMemory()}
}

// Defaults are the quotas every tenant but the daemon's default one gets
// when neither the deployment file nor an admin sets them, sized so that
// one tenant cannot take the machine (docs/tenancy.md, "Default quotas"):
//
//   - cpu: half the machine's cores, at least one;
//   - containers: two per core, at least 4 (each is an `ardea host`
//     process);
//   - instances: 16 per core, at least 32;
//   - wasm_memory_pages: a quarter of the machine's memory (each wasm
//     instance counts at its memory limit, 64 MiB by default).
//
// Topologies are bounded by containers (each runs at least one). The bus
// rates are left unlimited (the CPU quota bounds what a tenant
// can send), and so is JetStream storage (the NATS server's own bound,
// a share of the data dir's disk, holds).
func Defaults(m Machine) Overrides {
	cores := max(1, m.Cores)
	mem := m.MemoryBytes
	if mem <= 0 {
		mem = DefaultMachineMemory
	}
	containers := int64(max(4, 2*cores))
	var o Overrides
	for _, kv := range []struct{ name, value string }{
		{"instances", strconv.Itoa(max(32, 16*cores))},
		{"containers", strconv.FormatInt(containers, 10)},
		{"wasm_memory_pages", strconv.FormatInt(max(int64(DefaultMemoryPages), mem/4/wasmPageBytes), 10)},
		{"cpu", strconv.Itoa(max(1, cores/2))},
	} {
		if err := o.Set(kv.name, kv.value); err != nil {
			panic("quota: default " + kv.name + ": " + err.Error()) // a constant's mistake
		}
	}
	return o
}
