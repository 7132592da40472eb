package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/api"
)

// DeadLetterFixture is a spout of an external source whose dead letters
// the suite makes, lists and replays.
type DeadLetterFixture struct {
	Name string
	// Config is the spout's config with its dead-letter destination set
	// and max_retries small (the suite fails the records it gives up on
	// until they are dead letters).
	Config map[string]string
	// NoDestination, if set, is a config without a destination: its dead
	// letters are refused with plugin.ErrNoDeadLetters.
	NoDestination map[string]string
	// Feed makes records with these payloads available at the source
	// (before the spout is opened when BeforeOpen).
	Feed       func(t *testing.T, payloads []string)
	BeforeOpen bool
	// Payload reads a record's payload back from an emitted tuple.
	Payload func(vals []plugin.Value) string
	// Replayed, if set, checks the source once the dead letters were
	// replayed (the payloads given up, in the order listed).
	Replayed func(t *testing.T, payloads []string)
}

// deadLetterOwner is the spout the suite's dead letters are of.
var deadLetterOwner = plugin.DeadLetterOwner{Topology: "conformance", Component: "src"}

// TestDeadLetter checks the dead-letter destination registered for spout
// (and the spout's writing of it) with each fixture: its fields are
// fields of the spout's spec with the same types and defaults; a config
// without a destination is refused with ErrNoDeadLetters; with the spout
// running at least once, records whose trees keep failing end up listed
// (component and destination named, values intact, listing leaves them);
// Replay returns them and sends them back to the source, where the spout
// (reopened with its state if it had finished) reads them again; the list
// is empty after.
func TestDeadLetter(t *testing.T, env *plugin.Environment, spout string, fixtures ...DeadLetterFixture) {
	t.Helper()
	spec := checkSpec(t, env, plugin.KindDeadLetter, spout)
	spoutSpec, ok := env.Lookup(plugin.KindSpout, spout)
	if !ok {
		t.Fatalf("dead-letter destination %q: no spout %q registered", spout, spout)
	}
	for _, f := range spec.Fields {
		if sf, ok := spoutSpec.Field(f.Name); !ok || sf.Type != f.Type || sf.Default != f.Default {
			t.Errorf("dead-letter destination %q: field %q (%s, default %q) is not the spout's (%s, default %q, declared %v)",
				spout, f.Name, f.Type, f.Default, sf.Type, sf.Default, ok)
		}
	}
	if len(fixtures) == 0 {
		t.Fatalf("dead-letter destination %q: no fixtures", spout)
	}
	for _, fx := range fixtures {
		t.Run(fx.Name, func(t *testing.T) { runDeadLetter(t, env, spout, spoutSpec, fx) })
	}
}

func runDeadLetter(t *testing.T, env *plugin.Environment, spout string, spoutSpec plugin.Spec, fx DeadLetterFixture) {
	ctx := t.Context()
	if fx.NoDestination != nil {
		st, err := env.NewDeadLetterStore(spout, deadLetterOwner, fx.NoDestination)
		if err == nil {
			_, err = st.List(ctx)
		}
		if !errors.Is(err, plugin.ErrNoDeadLetters) {
			t.Errorf("dead letters of a config without a destination: %v, want ErrNoDeadLetters", err)
		}
	}
	store, err := env.NewDeadLetterStore(spout, deadLetterOwner, fx.Config)
	if err != nil {
		t.Fatal(err)
	}
	if dl, err := store.List(ctx); err != nil || len(dl) != 0 {
		t.Fatalf("List before any record failed = %+v, %v; want none", dl, err)
	}

	good, bad := []string{"ok-0", "ok-1"}, []string{"dl-0", "dl-1", "dl-2"}
	state := NewMemState()
	r := &spoutRunner{t: t, env: env, name: spout, spec: spoutSpec, cfg: fx.Config, state: state, payload: fx.Payload}
	if fx.BeforeOpen {
		fx.Feed(t, slices.Concat(good, bad))
	}
	r.open()
	defer func() { r.close() }()
	if !fx.BeforeOpen {
		fx.Feed(t, slices.Concat(good, bad))
	}

	// Ack the good records, fail the bad ones (again whenever they come
	// back) until the bad ones are listed.
	failBad := func(p string) bool { return !strings.HasPrefix(p, "dl-") }
	var listed []api.DeadLetter
	testutil.EventuallyWithin(t, waitLimit, "the failed records listed as dead letters", func() (bool, string) {
		r.pump(failBad)
		if len(r.seenSet(slices.Concat(good, bad))) < len(good)+len(bad) {
			return false, fmt.Sprintf("emitted %v", r.seen)
		}
		dl, err := store.List(ctx)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		listed = dl
		return len(dl) >= len(bad), fmt.Sprintf("listed %d", len(dl))
	})
	checkLetters(t, "List", listed, bad)
	if again, err := store.List(ctx); err != nil {
		t.Fatalf("List again: %v", err)
	} else {
		checkLetters(t, "List again (listing leaves them)", again, bad)
	}

	replayed, err := store.Replay(ctx)
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	checkLetters(t, "Replay", replayed, bad)
	var values []string
	for _, d := range replayed {
		values = append(values, d.Value)
	}
	if fx.Replayed != nil {
		fx.Replayed(t, values)
	}
	r.seen = map[string]int{}
	testutil.EventuallyWithin(t, waitLimit, "the replayed records read again", func() (bool, string) {
		if r.done {
			r.close()
			r.open()
		}
		r.pump(func(string) bool { return true })
		return len(r.seenSet(bad)) == len(bad), fmt.Sprintf("emitted since the replay %v", r.seen)
	})
	testutil.EventuallyWithin(t, waitLimit, "no dead letters listed after the replay", func() (bool, string) {
		dl, err := store.List(ctx)
		if err != nil {
			t.Fatalf("List after Replay: %v", err)
		}
		return len(dl) == 0, fmt.Sprintf("%+v", dl)
	})
}

// checkLetters checks that dl are the dead letters of payloads want.
func checkLetters(t *testing.T, what string, dl []api.DeadLetter, want []string) {
	t.Helper()
	var got []string
	for _, d := range dl {
		got = append(got, d.Value)
		if d.Component != deadLetterOwner.Component || d.Destination == "" {
			t.Errorf("%s: dead letter %+v: want component %q and a destination", what, d, deadLetterOwner.Component)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: dead letters of %v, want %v", what, got, want)
	}
}

// spoutRunner drives a spout at least once, acking or failing what it
// emits.
type spoutRunner struct {
	t       *testing.T
	env     *plugin.Environment
	name    string
	spec    plugin.Spec
	cfg     map[string]string
	state   *MemState
	payload func([]plugin.Value) string

	s    plugin.Spout
	out  *Recorder
	next int // emits handled
	done bool
	seen map[string]int // payload -> times emitted
}

func (r *spoutRunner) open() {
	r.t.Helper()
	s, err := r.env.NewSpout(r.name, r.cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	tc := NewTaskContext(deadLetterOwner.Component, 0, 1, r.cfg, r.spec.Outputs, nil)
	tc.Topology, tc.Acking, tc.State = deadLetterOwner.Topology, true, r.state
	r.out, r.next, r.done = &Recorder{}, 0, false
	if err := s.Open(r.t.Context(), tc, r.out); err != nil {
		r.t.Fatalf("Open: %v", err)
	}
	if err := s.Activate(r.t.Context()); err != nil {
		r.t.Fatalf("Activate: %v", err)
	}
	r.s = s
	if r.seen == nil {
		r.seen = map[string]int{}
	}
}

func (r *spoutRunner) close() {
	if r.s != nil {
		if err := r.s.Close(context.WithoutCancel(r.t.Context())); err != nil {
			r.t.Errorf("Close: %v", err)
		}
		r.s = nil
	}
}

// pump calls Next once and acks each new tuple whose payload ack says,
// failing the others (noting a failure by a bolt first).
func (r *spoutRunner) pump(ack func(payload string) bool) {
	r.t.Helper()
	ctx := r.t.Context()
	st, err := r.s.Next(ctx, 16, r.out)
	if err != nil {
		r.t.Fatalf("Next: %v", err)
	}
	r.done = st == plugin.Done
	emits := r.out.Emits()
	for _, e := range emits[r.next:] {
		vals, _, err := plugin.DecodeValues(nil, e.Values)
		if err != nil {
			r.t.Fatalf("emitted a malformed tuple: %v", err)
		}
		p := r.payload(vals)
		r.seen[p]++
		if e.MsgID == 0 {
			r.t.Fatalf("at least once, %q was emitted without a message id", p)
		}
		if ack(p) {
			err = r.s.Ack(ctx, []uint64{e.MsgID}, r.out)
		} else {
			if n, ok := r.s.(plugin.FailureNoter); ok {
				n.NoteFailures([]plugin.Failure{{MsgID: e.MsgID, By: "conformance[0] version test"}})
			}
			err = r.s.Fail(ctx, []uint64{e.MsgID}, r.out)
		}
		if err != nil {
			r.t.Fatalf("Ack/Fail of %q: %v", p, err)
		}
	}
	r.next = len(emits)
}

// seenSet returns the payloads of want seen at least once.
func (r *spoutRunner) seenSet(want []string) []string {
	var out []string
	for _, p := range want {
		if r.seen[p] > 0 {
			out = append(out, p)
		}
	}
	return out
}
