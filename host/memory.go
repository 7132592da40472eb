package host

import (
	"fmt"

	"github.com/tetratelabs/wazero/experimental"
)

// outOfMemory says that the guest ran out of memory, naming the limit, its
// value and the use (and the grow that was refused, when one was).
func (in *instance) outOfMemory() string {
	if in.memLim.refused != 0 {
		return "guest ran out of memory: " + in.refusedGrow()
	}
	return "guest ran out of memory at " + in.memoryUse()
}

// refusedGrow describes the last grow refused during the call.
func (in *instance) refusedGrow() string {
	return fmt.Sprintf("memory.grow to %d pages was refused at %s", in.memLim.refused/65536, in.memoryUse())
}

// memoryUse names the memory limit, its value and the use, for errors.
func (in *instance) memoryUse() string {
	use := fmt.Sprintf("the limit wasm.memory.pages = %d (%s", in.pages, sizeString(uint64(in.pages)*65536))
	if in.mem != nil {
		use += fmt.Sprintf(", %d pages in use", in.mem.Size()/65536)
	}
	return use + ")"
}

// memoryLimiter is an instance's linear memory, handed to wazero as its
// experimental.MemoryAllocator: it refuses to grow past limit bytes
// (wasm.memory.pages; wazero's own runtime limit is wasm's 4 GiB) and
// records the refused size, so that the trap that follows in a guest of
// any language (Go prints "out of memory", C, Rust and AssemblyScript
// abort or hit unreachable) is reported as the memory limit. wazero calls
// it on the guest's goroutine only, as does the instance.
type memoryLimiter struct {
	buf     []byte
	limit   uint64 // bytes
	refused uint64 // bytes asked for by the last refused grow of the call; 0 none
}

func (m *memoryLimiter) Allocate(capacity, _ uint64) experimental.LinearMemory {
	m.buf = make([]byte, 0, min(capacity, m.limit))
	return m
}

// Reallocate grows the memory to size bytes as wazero's own allocator does
// (append: amortised, zeroed; memories never shrink), or refuses with nil.
func (m *memoryLimiter) Reallocate(size uint64) []byte {
	switch {
	case size > m.limit:
		m.refused = size
		return nil
	case size <= uint64(cap(m.buf)):
		m.buf = m.buf[:size]
	default:
		m.buf = append(m.buf, make([]byte, size-uint64(len(m.buf)))...)
	}
	return m.buf
}

func (m *memoryLimiter) Free() { m.buf = nil }

func sizeString(b uint64) string {
	if b >= 1<<20 && b%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", b>>20)
	}
	return fmt.Sprintf("%d KiB", b>>10)
}
