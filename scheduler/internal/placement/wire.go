package placement

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ardea-dev/ardea/scheduler/internal/launcher"
	"github.com/ardea-dev/ardea/scheduler/internal/logtail"
)

// Version is the messages' version; a node answers a request of another
// with an error naming both. It changes when a message's existing fields
// change meaning, not for a new operation or a new optional field: a node
// that does not know an operation answers "unknown operation" (OpLogs,
// added in version 1, gets that from a node built before it), and every
// node of a cluster being upgraded one by one keeps placing the others'
// containers.
const Version = 1

// Subjects, in the "ardea" account (only the nodes' daemons connect
// there).
func ctlSubject(node string) string   { return "ardea.node." + node + ".ctl" }
func eventSubject(node string) string { return "ardea.node." + node + ".event" }

const (
	eventsAll    = "ardea.node.*.event"
	fenceSubject = "ardea.nodes.fence"
)

// flushTimeout bounds the round trip that makes a subscription known to
// the server before it is relied on.
const flushTimeout = 10 * time.Second

// Op is a request's operation.
type Op string

const (
	OpStart   Op = "start"
	OpStop    Op = "stop"
	OpRestart Op = "restart"
	OpRemove  Op = "remove"
	OpKill    Op = "kill"
	OpList    Op = "list"
	// OpFence: a newer TM's epoch; the node removes what older ones
	// started before it answers.
	OpFence Op = "fence"
	// OpLogs reads a page of a container's log file on its node (the
	// request's Logs): the last lines before an offset, at most
	// MaxLogBytes of them per reply. It reads only, so it is not fenced:
	// the API has checked that the caller may read the topology.
	OpLogs Op = "logs"
)

// MaxLogBytes bounds the log lines of one OpLogs reply (their bytes,
// newlines not counted): the launcher's longest line (1 MiB), so a line
// always fits whole, and well under the cluster's NATS payload limit (8
// MiB) even if JSON escaping made every byte six. A longer tail is read
// page by page; a node whose connection allows less halves the limit
// until its reply fits.
const MaxLogBytes = 1 << 20

// LogsRequest is what an OpLogs request reads: the last Lines lines
// that Filter selects among those that end before offset End (-1: the
// file's end).
type LogsRequest struct {
	Lines  int            `json:"lines"`
	End    int64          `json:"end"`
	Filter logtail.Filter `json:"filter"`
}

// Spec is a container as the node that runs it needs it from its TM; the
// rest (the host executable, its NATS address, data directory and CPU
// cgroup) is the node's own.
type Spec struct {
	Tenant    string `json:"tenant"`
	Topology  string `json:"topology"`
	Container int    `json:"container"`
	// Args are the host's flags that are the topology's (its metrics
	// configuration, its share of the tenant's rates).
	Args []string `json:"args,omitempty"`
	// Env are KEY=value entries the host gets besides the node's allowed
	// environment (the tenant's machine policy).
	Env []string `json:"env,omitempty"`
	// Creds is the container's NATS credential (a creds file's content),
	// Inbox its inbox prefix, User its user's public key.
	Creds string `json:"creds,omitempty"`
	Inbox string `json:"inbox,omitempty"`
	User  string `json:"user,omitempty"`
	// MemoryBytes and CPU are the container's request (its packing).
	MemoryBytes int64   `json:"memory_bytes,omitempty"`
	CPU         float64 `json:"cpu,omitempty"`
}

// String leaves the credential out (specs are logged).
func (s Spec) String() string {
	return fmt.Sprintf("%s/%s container %d", s.Tenant, s.Topology, s.Container)
}

type request struct {
	V        int    `json:"v"`
	Op       Op     `json:"op"`
	ID       string `json:"id,omitempty"`
	Tenant   string `json:"tenant,omitempty"`
	Topology string `json:"topology,omitempty"`
	Epoch    uint64 `json:"epoch,omitempty"`
	PID      int    `json:"pid,omitempty"`
	Spec     *Spec  `json:"spec,omitempty"`
	// Logs: OpLogs's.
	Logs *LogsRequest `json:"logs,omitempty"`
}

// errCode carries the launcher's sentinel errors and fencing over the wire.
type errCode string

const (
	codeDuplicate errCode = "duplicate"
	codeUnknown   errCode = "unknown"
	codeFenced    errCode = "fenced"
)

// ErrFenced: a node refused a request of a TM older than one it has
// heard from for the same topology.
var ErrFenced = errors.New("placement: a newer topology manager runs this topology")

type reply struct {
	V      int                      `json:"v"`
	Err    string                   `json:"err,omitempty"`
	Code   errCode                  `json:"code,omitempty"`
	Status *launcher.ProcessStatus  `json:"status,omitempty"`
	List   []launcher.ProcessStatus `json:"list,omitempty"`
	// Logs: OpLogs's page (Start is where the next, earlier one ends).
	Logs *logtail.Page `json:"logs,omitempty"`
}

func replyOf(err error) reply {
	r := reply{V: Version}
	if err == nil {
		return r
	}
	r.Err = err.Error()
	switch {
	case errors.Is(err, launcher.ErrDuplicate):
		r.Code = codeDuplicate
	case errors.Is(err, launcher.ErrUnknown):
		r.Code = codeUnknown
	case errors.Is(err, ErrFenced):
		r.Code = codeFenced
	}
	return r
}

func (r reply) err(node string) error {
	if r.Err == "" {
		return nil
	}
	// A coded error is its sentinel again, named once.
	coded := func(sentinel error) error {
		return fmt.Errorf("node %s: %s: %w", node, strings.TrimSuffix(r.Err, ": "+sentinel.Error()), sentinel)
	}
	switch r.Code {
	case codeDuplicate:
		return coded(launcher.ErrDuplicate)
	case codeUnknown:
		return coded(launcher.ErrUnknown)
	case codeFenced:
		return coded(ErrFenced)
	}
	return fmt.Errorf("node %s: %s", node, r.Err)
}

// event is a change of a container's state on Node.
type event struct {
	V      int                    `json:"v"`
	Node   string                 `json:"node"`
	Epoch  uint64                 `json:"epoch"`
	Status launcher.ProcessStatus `json:"status"`
}

// fence tells every node that Epoch is the topology's newest TM.
type fence struct {
	V        int    `json:"v"`
	Tenant   string `json:"tenant"`
	Topology string `json:"topology"`
	Epoch    uint64 `json:"epoch"`
}

// decode reads a message of this version.
func decode(b []byte, v any, what string) error {
	var head struct {
		V int `json:"v"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return fmt.Errorf("placement: %s: %w", what, err)
	}
	if head.V != Version {
		return fmt.Errorf("placement: %s of version %d, this node speaks %d", what, head.V, Version)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("placement: %s: %w", what, err)
	}
	return nil
}
