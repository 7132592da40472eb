package container

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ardea-dev/ardea/host"
	"github.com/ardea-dev/ardea/internal/engine"
	"github.com/ardea-dev/ardea/scheduler/settings"
)

// A failing tuple (docs/delivery.md, "A failing tuple"): a bolt whose
// module exports ardea_cursor fails the tuple its execute failed on, not
// the instance (host/failing.go). What becomes of the tuple is decided
// here, by the topology's delivery mode:
//
//   - at least once: a fail op for it fails its tree; the spout replays
//     it, and after its max_retries writes it to its dead letters;
//   - at most once: it is dropped and counted in __fail-count (the same
//     fail op, which nothing tracks);
//   - effectively once: the task fails with a *TupleRollback, and the
//     container process asks the topology manager to roll the topology
//     back to its last checkpoint (ctl.Heartbeat.TupleRollback). The
//     manager counts the rollbacks each tuple caused (by tupleHash); once
//     a tuple caused topology.bolt.max_tuple_rollbacks of them it is
//     named in the plan (Options.DeadLetterTuples), and its next failure
//     writes it to the bolt's dead letters (topology.bolt.dead_letter)
//     instead.
//
// On probation (a swapped-in version) a failing tuple fails the batch as
// any other failure of the new version: the previous version comes back
// and executes the batch again.
//
// Every case records an exception (OnTaskError) naming the component,
// task, module version, the tuple and the guest's message.

// TupleRollback is a bolt task's result when a tuple failed effectively
// once: the topology rolls back to its last global checkpoint.
type TupleRollback struct {
	Component string
	Task      uint32
	Version   string
	Hash      uint64 // tupleHash
	Tuple     string // host.FormatTuple
	Err       error
}

func (e *TupleRollback) Error() string {
	return fmt.Sprintf("%s: tuple %s failed (effectively once: the topology rolls back to its last checkpoint): %v",
		describe(e.Component, e.Task, e.Version), e.Tuple, e.Err)
}
func (e *TupleRollback) Unwrap() error { return e.Err }

// tupleHash identifies a tuple across rollbacks: FNV-1a 64 over the
// component's name, a 0 byte and the tuple's values block.
func tupleHash(component string, values []byte) uint64 {
	h := fnv.New64a()
	h.Write([]byte(component))
	h.Write([]byte{0})
	h.Write(values)
	return h.Sum64()
}

func describe(component string, task uint32, version string) string {
	s := fmt.Sprintf("component %s task %d", component, task)
	if version != "" {
		s += " version " + version[:min(12, len(version))]
	}
	return s
}

// tupleFailed is the container's answer to a failing tuple
// (host.InstanceConfig.OnTupleFailure); it runs on the task's goroutine.
func (c *Container) tupleFailed(t *engine.Task, f host.TupleFailure) error {
	if t.OnProbation() {
		return f.Err
	}
	version := c.Version(t.ID)
	who := describe(f.Component, f.Task, version)
	tupleText := host.FormatTuple(f.Values)
	var fate string
	switch c.mode {
	case settings.EffectivelyOnce:
		h := tupleHash(f.Component, f.Values)
		if !c.o.DeadLetterTuples[h] {
			return &TupleRollback{Component: f.Component, Task: f.Task, Version: version, Hash: h, Tuple: tupleText, Err: f.Err}
		}
		fate = "it failed again after topology.bolt.max_tuple_rollbacks rollbacks: " + c.deadLetter(t, f, version, h)
	case settings.AtLeastOnce:
		fate = "its tree fails (the spout replays it, or after its max_retries writes it to its dead letters)"
		c.failures.Note(f.Task, guestMessage(f.Err))
	default:
		fate = "dropped (at most once), counted in __fail-count"
	}
	err := fmt.Errorf("%s: tuple %s failed; %s: %v", who, tupleText, fate, f.Err)
	c.runLog.Warn("a tuple failed", "component", f.Component, "task", f.Task, "version", version,
		"tuple", tupleText, "consecutive", f.Consecutive, "fate", fate, "err", guestMessage(f.Err))
	if fn := c.o.OnTaskError; fn != nil {
		fn(f.Component, f.Task, err)
	}
	return nil
}

// guestMessage is a failed call's error in one line: its first line,
// and for a trap whose message is only on the guest's stderr (a Go panic)
// the first line printed there.
func guestMessage(err error) string {
	s := err.Error()
	first, rest, _ := strings.Cut(s, "\n")
	if _, tail, ok := strings.Cut(rest, "guest stderr:\n"); ok {
		line, _, _ := strings.Cut(strings.TrimSpace(tail), "\n")
		first += " (" + strings.TrimSpace(line) + ")"
	}
	return first
}

// deadLetters appends a container's given-up bolt tuples to their files.
type deadLetters struct {
	mu sync.Mutex
}

// BoltDeadLetter is one line of a bolt's dead-letter file (JSON).
type BoltDeadLetter struct {
	Time      time.Time `json:"time"`
	Topology  string    `json:"topology"`
	Component string    `json:"component"`
	Task      uint32    `json:"task"`
	Version   string    `json:"version,omitempty"`
	Hash      string    `json:"hash"`
	Error     string    `json:"error"`
	Tuple     string    `json:"tuple"`  // host.FormatTuple: at most 256 bytes of payload, escaped
	Values    []byte    `json:"values"` // the whole ABI values block (base64)
}

// deadLetter writes a given-up tuple to its bolt's dead letters (a file,
// or the tenant's dead-letter stream) and says where it went.
func (c *Container) deadLetter(_ *engine.Task, f host.TupleFailure, version string, h uint64) string {
	tc := c.o.Topology.Component(f.Component)
	var place settings.DeadLetterPlace
	if tc != nil {
		var err error
		if place, err = c.o.Machine.BoltDeadLetter(c.o.Topology, tc); err != nil {
			c.runLog.Error("bolt dead letter refused", "component", f.Component, "task", f.Task, "err", err)
			return fmt.Sprintf("dropped (%v)", err)
		}
	}
	if place.None() {
		return "dropped (the bolt keeps no dead letters: set " + settings.KeyDeadLetter + ")"
	}
	hash := fmt.Sprintf("%016x", h)
	rec, err := json.Marshal(BoltDeadLetter{Time: time.Now().UTC(), Topology: c.o.Topology.Name, Component: f.Component,
		Task: f.Task, Version: version, Hash: hash, Error: f.Err.Error(),
		Tuple: host.FormatTuple(f.Values), Values: f.Values})
	written := false
	if err == nil {
		if place.Stream != "" {
			written, err = PublishDeadLetter(context.Background(), c.o.Conn, place, hash, rec)
		} else {
			written, err = c.dead.write(place.File, hash, append(rec, '\n'), c.o.Machine.Confined)
		}
	}
	if err != nil {
		c.runLog.Error("bolt dead letter not written", "component", f.Component, "task", f.Task, "err", err)
		return fmt.Sprintf("dropped (writing its dead letter failed: %v)", err)
	}
	if !written {
		return "already in the dead letters " + place.String() + " (a rollback since replayed it)"
	}
	return "written to the dead letters " + place.String()
}

// write appends line to the file at path unless a line with the same
// hash is there already: a rollback to a checkpoint taken before the
// tuple was dead-lettered replays it, and it must be written once (the
// tuple is known by its hash, so equal tuples share one dead letter).
// The file must be a regular one of at most settings.MaxDeadLetterBytes
// (OpenDeadLetters); confined, its directory is made (0700) and a
// symbolic link is not followed.
func (d *deadLetters) write(path, hash string, line []byte, confined bool) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	flags := os.O_CREATE | os.O_RDWR | os.O_APPEND
	if confined {
		flags |= syscall.O_NOFOLLOW
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return false, err
		}
	}
	f, old, err := settings.OpenDeadLetters(path, flags)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if bytes.Contains(old, []byte(`"hash":"`+hash+`"`)) {
		return false, nil
	}
	if int64(len(old)+len(line)) > settings.MaxDeadLetterBytes {
		return false, fmt.Errorf("dead-letter file %s: a line of %d bytes would take it over its limit of %d bytes (settings.MaxDeadLetterBytes)", path, len(line), settings.MaxDeadLetterBytes)
	}
	_, err = f.Write(line)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err == nil, err
}

// TupleFailures keeps the error of the last tuple each bolt task failed
// (at least once), so that a spout running in the same process writes it
// into a dead letter: the ack message names only the task that failed a
// tree. Its owner is whatever runs a topology's containers in one process
// and lives as long as that run: the `ardea host` process (one
// container), or under `ardea run` the topology manager, whose containers
// share it (a bolt and a spout in two containers of one process). The
// zero value is ready; it is safe for concurrent use.
type TupleFailures struct {
	mu   sync.Mutex
	last map[uint32]string // by task id
}

// Note records msg as bolt task's last failing tuple's error.
func (f *TupleFailures) Note(task uint32, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last == nil {
		f.last = map[uint32]string{}
	}
	f.last[task] = msg
}

// Last is the error of the last tuple task failed ("" if none).
func (f *TupleFailures) Last(task uint32) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last[task]
}

// Clear forgets every task's failure.
func (f *TupleFailures) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.last)
}

// IsTupleRollback reports whether err asks for a rollback for a failing
// tuple, and returns it.
func IsTupleRollback(err error) (*TupleRollback, bool) {
	var r *TupleRollback
	ok := errors.As(err, &r)
	return r, ok
}
