//go:build !linux

package quota

// machineMemory is the machine's physical memory: unknown here.
func machineMemory() int64 { return 0 }
