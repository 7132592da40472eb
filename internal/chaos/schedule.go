package chaos

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// Fault is one kind of fault, a row of the matrix (with a delivery mode).
type Fault string

// The faults. Each is injected while data flows (docs/reliability.md says
// what each does and what the row expects).
const (
	HostKill       Fault = "host-kill"        // kill -9 of a container process
	DaemonKill     Fault = "daemon-kill"      // kill -9 of `ardea local`, restarted on its data dir
	HostDaemonKill Fault = "host+daemon-kill" // kill -9 of a container, then of the daemon, restarted
	SwapStart      Fault = "swap-start"       // kill -9 of a container as `ardea swap` begins
	SwapTasks      Fault = "swap-tasks"       // ... as the hosts swap tasks
	SwapProbation  Fault = "swap-probation"   // ... while the new version is on probation
	RescalePrepare Fault = "rescale-prepare"  // kill -9 of a container as `ardea update` (seqstate:3) stops the rescaled tasks
	RescaleHandoff Fault = "rescale-handoff"  // ... as state is handed off by key group
	RescaleSwitch  Fault = "rescale-switch"   // ... as the hosts take the new plan
	Apply          Fault = "apply"            // kill -9 of a container in a phase of `ardea apply` (the seed picks it)
	Checkpoint     Fault = "checkpoint"       // kill -9 of a container just after a checkpoint begins
	HostStop       Fault = "sigstop"          // SIGSTOP of a container past the heartbeat timeout, then SIGCONT
	DiskFull       Fault = "disk-full"        // the JetStream store's tmpfs filled for seconds, then freed
	CkptCorrupt    Fault = "checkpoint-corrupt"
	CkptDelete     Fault = "checkpoint-delete"
	GuestStateHog  Fault = "guest-state-hog" // a bolt that state_puts 1 MiB values under new keys
	GuestLogFlood  Fault = "guest-log-flood" // a bolt that logs 64 KiB lines without end
)

// Faults is every fault in the order rows run.
var Faults = []Fault{HostKill, DaemonKill, HostDaemonKill, SwapStart, SwapTasks, SwapProbation,
	RescalePrepare, RescaleHandoff, RescaleSwitch, Apply, Checkpoint, HostStop, DiskFull,
	CkptCorrupt, CkptDelete, GuestStateHog, GuestLogFlood}

// Modes is the delivery modes a fault's rows run in, effectively once
// first. Checkpoint faults exist only effectively once. A guest's abuse
// of host resources does not depend on the mode: its rows run at least
// once, so that the hog's state is not written to the checkpoint store
// every interval.
func (f Fault) Modes() []string {
	switch f {
	case Checkpoint, CkptCorrupt, CkptDelete:
		return []string{EffectivelyOnce}
	case GuestStateHog, GuestLogFlood:
		return []string{AtLeastOnce}
	}
	return []string{EffectivelyOnce, AtLeastOnce}
}

// Operation reports whether the fault strikes in a lifecycle operation
// (swap, rescale, apply).
func (f Fault) Operation() bool {
	switch f {
	case SwapStart, SwapTasks, SwapProbation, RescalePrepare, RescaleHandoff, RescaleSwitch, Apply:
		return true
	}
	return false
}

// Replan reports whether the fault strikes in a rescale or an apply.
func (f Fault) Replan() bool {
	switch f {
	case RescalePrepare, RescaleHandoff, RescaleSwitch, Apply:
		return true
	}
	return false
}

// Guest reports whether the row runs the abusive guest instead of the
// keyed example.
func (f Fault) Guest() bool { return f == GuestStateHog || f == GuestLogFlood }

// Phases of an operation a row can strike in (Apply's is picked by the
// seed; the swap and rescale faults name theirs).
const (
	PhasePrepare = "prepare"
	PhaseHandoff = "handoff"
	PhaseSwitch  = "switch"
)

// Row is one run: a fault in a mode, with everything the seed chose.
type Row struct {
	Fault Fault  `json:"fault"`
	Mode  string `json:"mode"`
	// Rep numbers the repetitions of the same fault and mode (long
	// schedule: several seeds); 0 in the short schedule.
	Rep  int    `json:"rep,omitempty"`
	Seed uint64 `json:"seed"`
	// Input: Keys x PerKey records, the file spout paced at Rate lines/s.
	Keys   int `json:"keys"`
	PerKey int `json:"per_key"`
	Rate   int `json:"rate"`
	// Faults is how many times the fault is injected in the run (host
	// kills, daemon kills, stops and checkpoint kills; once for the rest).
	Faults int `json:"faults"`
	// Picks are the seed's choices, one per injection: which container
	// (an index taken modulo the containers), how long after data flows
	// (or after the phase begins), and how long a stop or a full disk
	// lasts.
	Picks []Pick `json:"picks"`
	// Phase is Apply's phase (PhasePrepare, PhaseHandoff, PhaseSwitch).
	Phase string `json:"phase,omitempty"`
}

// Pick is one injection's seeded choices.
type Pick struct {
	Container int           `json:"container"` // index, modulo the containers at the time
	Delay     time.Duration `json:"delay"`     // after data flows, or after the phase's marker
	Hold      time.Duration `json:"hold"`      // SIGSTOP and full-disk duration
	Gap       time.Duration `json:"gap"`       // host+daemon: from the host kill to the daemon kill
}

// Name is "fault/mode" (with "#rep" for repetitions), the row's key in
// KnownFailing (without the repetition) and the subtest's name.
func (r Row) Name() string {
	n := string(r.Fault) + "/" + r.Mode
	if r.Rep > 0 {
		n += fmt.Sprintf("#%d", r.Rep)
	}
	return n
}

// Key is the row's name without the repetition.
func (r Row) Key() string { return string(r.Fault) + "/" + r.Mode }

// Schedule is the matrix for seed: every fault in each of its modes. The short
// schedule injects each fault once into 200 keys x 200 records paced at
// 8000 lines/s (5 s of data); the long one runs three repetitions with
// derived seeds, up to three injections per run, into 500 x 400 records
// at 12000 lines/s (about 17 s). Rows striking in an operation get a
// quarter of the rate (four times the flow). The same seed gives the same rows.
func Schedule(seed uint64, long bool) []Row {
	reps, keys, perKey, rate, maxFaults := 1, 200, 200, 8000, 1
	if long {
		reps, keys, perKey, rate, maxFaults = 3, 500, 400, 12000, 3
	}
	var rows []Row
	for rep := range reps {
		for _, f := range Faults {
			for _, mode := range f.Modes() {
				r := Row{Fault: f, Mode: mode, Rep: rep, Keys: keys, PerKey: perKey, Rate: rate, Faults: 1}
				if f.Operation() {
					// The operation (a swap's validation and compile, an
					// apply's validation of every module, a replan's pause)
					// takes a while to reach its phase: four times as long an
					// input, so that data is likely still in flight when the
					// fault strikes. The row does not depend on it: the input
					// ends only when the test says (the file spout's
					// follow_until), after the faults.
					r.Rate /= 4
				}
				r.Seed = rowSeed(seed, r.Name())
				rng := rand.New(rand.NewPCG(r.Seed, seed))
				switch f {
				case HostKill, DaemonKill, HostStop, Checkpoint, HostDaemonKill:
					r.Faults = 1 + rng.IntN(maxFaults)
				}
				flow := time.Duration(keys*perKey) * time.Second / time.Duration(r.Rate)
				for range r.Faults {
					r.Picks = append(r.Picks, Pick{
						Container: rng.IntN(1 << 16),
						// Early in the flow, leaving time for the next
						// injections and for data after the last one.
						Delay: time.Duration(rng.Int64N(int64(flow/time.Duration(4*r.Faults)))) + 200*time.Millisecond,
						Hold:  time.Duration(2000+rng.IntN(2000)) * time.Millisecond,
						Gap:   time.Duration(rng.IntN(400)) * time.Millisecond,
					})
				}
				if f == Apply {
					r.Phase = []string{PhasePrepare, PhaseHandoff, PhaseSwitch}[rng.IntN(3)]
				}
				rows = append(rows, r)
			}
		}
	}
	return rows
}

func rowSeed(seed uint64, name string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", seed, name)
	return h.Sum64()
}

// Verdicts of a row.
const (
	Pass    = "pass"
	Fail    = "FAIL"
	Skipped = "skipped"
)

// Result is one row's measured outcome.
type Result struct {
	Row      string `json:"row"`
	Fault    Fault  `json:"fault"`
	Mode     string `json:"mode"`
	Seed     uint64 `json:"seed"`
	Injected int    `json:"injected"` // faults injected
	// Lost, Dups, More and BadCounts are the checker's figures (-1: not
	// checked, for the guest rows or a run that never started).
	Lost      int `json:"lost"`
	Dups      int `json:"dups"`
	More      int `json:"more_produced"`
	BadCounts int `json:"bad_counts"`
	// RecoverySec is, per injection, the time from the fault to tuples
	// flowing again (every container runs the current plan, a rollback
	// has finished, and the sink has grown since), or to FAILED for a row
	// that ends FAILED. -1: not measured.
	RecoverySec []float64 `json:"recovery_s"`
	Terminal    string    `json:"terminal"` // FINISHED, FAILED, ..., or HUNG
	Message     string    `json:"message,omitempty"`
	WaitExit    int       `json:"wait_exit"` // `ardea wait`'s exit code (-1: not run)
	Verdict     string    `json:"verdict"`
	Why         string    `json:"why,omitempty"` // what failed, or why skipped
	Took        float64   `json:"took_s"`
}

// Matrix is a run's results, in row order.
type Matrix []Result

// Table renders the matrix as an aligned text table.
func (m Matrix) Table() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROW\tMODE\tLOST\tDUPS\tRECOVERY S\tTERMINAL\tVERDICT\tWHY")
	for _, r := range m {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", strings.TrimSuffix(r.Row, "/"+r.Mode), r.Mode,
			figure(r.Lost), figure(r.Dups), seconds(r.RecoverySec), r.Terminal, r.Verdict, clipText(r.Why, 140))
	}
	tw.Flush()
	return b.String()
}

func figure(n int) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func seconds(s []float64) string {
	if len(s) == 0 {
		return "-"
	}
	var parts []string
	for _, v := range s {
		if v < 0 {
			parts = append(parts, "-")
		} else {
			parts = append(parts, fmt.Sprintf("%.1f", v))
		}
	}
	return strings.Join(parts, ",")
}

func clipText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// Report is the JSON document WriteJSON writes.
type MatrixReport struct {
	Seed    uint64    `json:"seed"`
	Long    bool      `json:"long"`
	At      time.Time `json:"at"`
	Results Matrix    `json:"results"`
}

// WriteJSON writes the matrix to path.
func (m Matrix) WriteJSON(path string, seed uint64, long bool) error {
	b, err := json.MarshalIndent(MatrixReport{Seed: seed, Long: long, At: time.Now().UTC(), Results: m}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
