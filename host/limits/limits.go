// Package limits holds what bounds one wasm instance of the host runtime
// (package host): the host-side limits (Limits: state, logs, emits) and
// the defaults a topology's settings fall back to. It is apart from the
// runtime so that what reads a topology's settings (scheduler/settings,
// internal/quota, the daemon's tenancy) does not link wazero; host
// re-exports each name.
package limits

import (
	"fmt"
	"math"
	"time"
)

// DefaultMemoryLimitPages is an instance's memory limit when its config
// sets no wasm.memory.pages: 1024 pages of 64 KiB (64 MiB).
const DefaultMemoryLimitPages = 1024

// DefaultMaxFailingTime is topology.bolt.max_failing_time's default.
const DefaultMaxFailingTime = 30 * time.Second

// Limits bounds the host resources one instance can push on. Zero fields
// keep the runtime's value (in Config: the defaults). Exceeding a hard
// limit fails the instance (ErrStateLimit, ErrEmitLimit); the log limits
// cut or drop lines instead.
type Limits struct {
	// StateMaxBytes caps the task's host-side state, keys + values
	// (state.max.bytes): a state_put or state_write that would grow it
	// beyond fails the instance.
	StateMaxBytes int64
	// StateMaxValueBytes and StateMaxKeyBytes cap one value and one key
	// (state.max.value.bytes, state.max.key.bytes).
	StateMaxValueBytes int
	StateMaxKeyBytes   int
	// LogMaxLineBytes caps one log line (a log call, or a line of stdout
	// or stderr; log.max.line.bytes): longer ones are cut and marked.
	LogMaxLineBytes int
	// LogMaxBytesPerSecond caps the guest's log output per second
	// (log.max.bytes.per.second): lines beyond it are dropped and counted,
	// and one line per second says how many.
	LogMaxBytesPerSecond int64
	// EmitMaxBytesPerCall caps the bytes a guest call hands to emit
	// (emit.max.bytes.per.call).
	EmitMaxBytesPerCall int64
}

// Or returns l with its zero fields taken from d.
func (l Limits) Or(d Limits) Limits {
	if l.StateMaxBytes <= 0 {
		l.StateMaxBytes = d.StateMaxBytes
	}
	if l.StateMaxValueBytes <= 0 {
		l.StateMaxValueBytes = d.StateMaxValueBytes
	}
	if l.StateMaxKeyBytes <= 0 {
		l.StateMaxKeyBytes = d.StateMaxKeyBytes
	}
	if l.LogMaxLineBytes <= 0 {
		l.LogMaxLineBytes = d.LogMaxLineBytes
	}
	if l.LogMaxBytesPerSecond <= 0 {
		l.LogMaxBytesPerSecond = d.LogMaxBytesPerSecond
	}
	if l.EmitMaxBytesPerCall <= 0 {
		l.EmitMaxBytesPerCall = d.EmitMaxBytesPerCall
	}
	return l
}

// minLogLineBytes is the smallest log.max.line.bytes: room for the marker
// of a cut line.
const minLogLineBytes = 128

// Check refuses limits no instance could work with, naming the key.
func (l Limits) Check() error {
	switch {
	case l.StateMaxValueBytes > math.MaxInt32:
		return fmt.Errorf("host: state.max.value.bytes %d exceeds the 2 GiB ABI limit", l.StateMaxValueBytes)
	case l.StateMaxKeyBytes > math.MaxInt32:
		return fmt.Errorf("host: state.max.key.bytes %d exceeds the 2 GiB ABI limit", l.StateMaxKeyBytes)
	case l.LogMaxLineBytes > 0 && l.LogMaxLineBytes < minLogLineBytes:
		return fmt.Errorf("host: log.max.line.bytes %d: want at least %d", l.LogMaxLineBytes, minLogLineBytes)
	}
	return nil
}
