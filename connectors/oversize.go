package connectors

import (
	"fmt"
	"unicode/utf8"

	"github.com/ardea-dev/ardea/connectors/plugin"
)

// Oversized records. Every tuple a component emits is bounded by the tuple
// limit that applies to it: its own config's max.tuple.bytes, else
// topology.max.tuple.bytes (the component's override, then the
// topology's), else defaultMaxTupleBytes. A source record larger than the
// pipeline takes goes to the spout's dead letters where they are
// configured (with its source position and the reason) and the spout goes
// on with the next record; otherwise the spout stops reading, lets what
// it emitted before drain to the sinks, and then fails with a
// *recordTooLargeError (the engine's "fail after drain",
// engine.FailsAfterDrain). The file spout's max_line_bytes, its per-record
// size setting, may not exceed the limit and defaults to it.

// The tuple limit's default and settings (package plugin defines them).
const (
	defaultMaxTupleBytes         = plugin.DefaultMaxTupleBytes
	settingMaxTupleBytes         = plugin.SettingMaxTupleBytes
	settingTopologyMaxTupleBytes = plugin.SettingTopologyMaxTupleBytes
)

// WithTopologySettings returns cfg with the topology's settings that cfg
// does not set itself (plugin.WithTopologySettings).
func WithTopologySettings(cfg, topology map[string]string) map[string]string {
	return plugin.WithTopologySettings(cfg, topology)
}

// recordTooLargeError is a spout's error for a record larger than the
// pipeline takes when it has no dead letters to put it in. It fails after
// a drain (FailAfterDrain, see engine.FailsAfterDrain): the spout stopped
// before the record, and what it emitted before reaches the sinks before
// the task fails.
type recordTooLargeError struct {
	Component string
	Spout     string // "file spout", "kafka spout", ...
	Source    string // where the record is: path:line, topic/partition/offset, ...
	What      string // "line", "record", "message"
	Size      int64  // its size in bytes; 0: not read to its end (longer than Limit)
	Setting   string // the limit it exceeds: max_line_bytes, topology.max.tuple.bytes, ...
	Limit     int64
	// DeadLetter is why the dead letter could not be written (nil: no
	// dead letters are configured).
	DeadLetter error
}

func (e *recordTooLargeError) Error() string {
	size := "longer than"
	if e.Size > 0 {
		size = fmt.Sprintf("of %d bytes exceeds", e.Size)
	}
	why := "and no dead letters to put it in"
	if e.DeadLetter != nil {
		why = "and its dead letter was not written: " + e.DeadLetter.Error()
	}
	return fmt.Sprintf("component %q: %s: %s: %s %s %s %d (%s; the spout ended its input there)",
		e.Component, e.Spout, e.Source, e.What, size, e.Setting, e.Limit, why)
}

func (e *recordTooLargeError) Unwrap() error { return e.DeadLetter }

// FailAfterDrain marks the error for the engine: finish the stream first.
func (e *recordTooLargeError) FailAfterDrain() {}

// tooLargeReason is the error a dead letter of an oversized record
// carries.
func tooLargeReason(what string, size int64, setting string, limit int64) string {
	return fmt.Sprintf("%s of %d bytes exceeds %s %d", what, size, setting, limit)
}

// jsonChars appends the JSON string content of s (without quotes) to b;
// it returns the tail of s that is an incomplete UTF-8 sequence, for the
// next chunk (final: the last chunk, where such a tail is replaced).
func jsonChars(b, s []byte, final bool) ([]byte, []byte) {
	keep := 0
	if !final {
		// Back off over a rune cut by the chunk's end.
		for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
			if utf8.RuneStart(s[i]) {
				if !utf8.FullRune(s[i:]) {
					keep = len(s) - i
				}
				break
			}
		}
	}
	q := appendJSONString(b, s[:len(s)-keep])
	// appendJSONString quotes: drop them.
	q = append(q[:len(b)], q[len(b)+1:len(q)-1]...)
	return q, s[len(s)-keep:]
}
