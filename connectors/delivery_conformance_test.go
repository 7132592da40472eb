package connectors

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ardea-dev/ardea/connectors/plugin"
	"github.com/ardea-dev/ardea/connectors/plugin/conformance"
	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/internal/tuple"
)

// sourceFixture feeds a spout of an external source for the delivery
// conformance suite. feed makes records with the given payloads available
// (before Open when beforeOpen); payload reads a record's payload back from
// an emitted tuple. Each call of a sources entry gives a fresh source.
type sourceFixture struct {
	cfg        map[string]string
	feed       func(t *testing.T, payloads []string)
	beforeOpen bool
	payload    func(vals []tuple.Value) string
	// bus is the container's connection the spout gets (builtin:stream).
	bus *nats.Conn
}

// sources are the spouts of external sources, each run through every
// reliability mode with a crash in between (TestSpoutDeliveryConformance).
// Test-only sources (generator) and request-scoped ones (http) have their
// own tests.
var sources = map[string]func(t *testing.T) sourceFixture{
	"file": func(t *testing.T) sourceFixture {
		path := filepath.Join(t.TempDir(), "in.txt")
		return sourceFixture{cfg: map[string]string{"path": path}, beforeOpen: true,
			feed:    func(t *testing.T, p []string) { writeFile(t, path, strings.Join(p, "\n")+"\n") },
			payload: func(v []tuple.Value) string { return v[0].AsString() }}
	},
}

// openSource opens spout name ("<connector>[/<variant>]"); metrics, if
// set, receives its metric deltas.
func openSource(t *testing.T, name string, fx sourceFixture, acking bool, st *conformance.MemState, metrics ...map[string]int64) plugin.Spout {
	t.Helper()
	cfg := fx.cfg
	name, _, _ = strings.Cut(name, "/")
	spec, _ := plugin.Default().Lookup(plugin.KindSpout, name)
	s, err := newSpout(name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := taskContext("src", 0, 1, cfg, spec.Outputs, nil)
	ctx.Acking, ctx.State, ctx.Bus = acking, st, fx.bus
	if len(metrics) > 0 {
		ctx.Metric = func(n string, d int64) { metrics[0][n] += d }
	}
	if err := s.Open(context.Background(), ctx, &recorder{}); err != nil {
		t.Fatal(err)
	}
	return s
}

// pullUntil calls Next until done reports true: at once again while the
// spout emits, polling while it is idle.
func pullUntil(t *testing.T, s plugin.Spout, out *recorder, what string, done func() bool) {
	t.Helper()
	testutil.Eventually(t, what, func() (bool, string) {
		for !done() {
			st, err := s.Next(context.Background(), 16, out)
			if err != nil {
				t.Fatal(err)
			}
			if st != plugin.Emitted {
				return false, fmt.Sprintf("%d emits", len(out.emits))
			}
		}
		return true, ""
	})
}

// TestSpoutDeliveryConformance: for every external source,
//   - at most once a restarted spout emits nothing twice;
//   - at least once, with 10 records acked, 5 failed and 15 left pending
//     when the spout stops, failed records come back from Next and a new
//     spout brings back every pending one: each record is acked at least
//     once over both;
//   - metrics: a <connector>_* custom metric counts the records emitted.
func TestSpoutDeliveryConformance(t *testing.T) {
	for name, mk := range sources {
		t.Run(name, func(t *testing.T) {
			payloads := make([]string, 30)
			for i := range payloads {
				payloads[i] = fmt.Sprintf("p%02d", i)
			}
			t.Run("at_most_once", func(t *testing.T) {
				fx := mk(t)
				st := conformance.NewMemState()
				if fx.beforeOpen {
					fx.feed(t, payloads)
				}
				metrics := map[string]int64{}
				s := openSource(t, name, fx, false, st, metrics)
				if !fx.beforeOpen {
					fx.feed(t, payloads)
				}
				out := &recorder{}
				seen := map[string]int{}
				pullUntil(t, s, out, "every record", func() bool {
					for _, v := range out.decode(t)[len(seenAll(seen)):] {
						seen[fx.payload(v)]++
					}
					return len(seen) == len(payloads)
				})
				if err := s.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				// Metrics: the connector counted the records it emitted.
				prefix, _, _ := strings.Cut(name, "/")
				counted := false
				for m, v := range metrics {
					counted = counted || strings.HasPrefix(m, prefix+"_") && v == int64(len(payloads))
				}
				if !counted {
					t.Errorf("no %s_* metric counts the %d records emitted: %v", prefix, len(payloads), metrics)
				}
				s2 := openSource(t, name, fx, false, st)
				defer s2.Close(context.Background())
				out2 := &recorder{}
				for range 20 {
					if _, err := s2.Next(context.Background(), 16, out2); err != nil {
						t.Fatal(err)
					}
					time.Sleep(5 * time.Millisecond) // a window in which nothing may come, not a wait
				}
				for _, v := range out2.decode(t) {
					t.Errorf("restarted spout emitted %q again at most once", fx.payload(v))
				}
			})
			t.Run("at_least_once_crash", func(t *testing.T) {
				fx := mk(t)
				if fx.beforeOpen {
					fx.feed(t, payloads)
				}
				s := openSource(t, name, fx, true, conformance.NewMemState())
				if !fx.beforeOpen {
					fx.feed(t, payloads)
				}
				out := &recorder{}
				byID := map[uint64]string{}
				idOf := map[string]uint64{}
				track := func() {
					for i, e := range out.emits {
						if _, ok := byID[e.msgID]; ok || e.msgID == 0 {
							if e.msgID == 0 {
								t.Fatalf("emit %d has no message id at least once", i)
							}
							continue
						}
						vals, _, _ := tuple.DecodeValues(nil, e.values)
						byID[e.msgID] = fx.payload(vals)
						idOf[fx.payload(vals)] = e.msgID
					}
				}
				pullUntil(t, s, out, "every record", func() bool { track(); return len(idOf) == len(payloads) })
				acked := map[string]bool{}
				var ackIDs, failIDs []uint64
				for i, p := range payloads {
					switch {
					case i < 10:
						ackIDs, acked[p] = append(ackIDs, idOf[p]), true
					case i < 15:
						failIDs = append(failIDs, idOf[p])
					}
				}
				if err := s.Ack(context.Background(), ackIDs, out); err != nil {
					t.Fatal(err)
				}
				if err := s.Fail(context.Background(), failIDs, out); err != nil {
					t.Fatal(err)
				}
				// The failed ones come back (with ids of their own or not).
				before := len(out.emits)
				replayed := map[string]uint64{}
				pullUntil(t, s, out, "the failed records again", func() bool {
					for _, e := range out.emits[before:] {
						vals, _, _ := tuple.DecodeValues(nil, e.values)
						if p := fx.payload(vals); p >= "p10" && p < "p15" {
							replayed[p] = e.msgID
						}
					}
					before = len(out.emits)
					return len(replayed) == 5
				})
				var again []uint64
				for p, id := range replayed {
					again, acked[p] = append(again, id), true
				}
				if err := s.Ack(context.Background(), again, out); err != nil {
					t.Fatal(err)
				}
				// Stop with 15 trees pending; a new spout brings them back.
				if err := s.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				s2 := openSource(t, name, fx, true, conformance.NewMemState())
				defer s2.Close(context.Background())
				out2 := &recorder{}
				pullUntil(t, s2, out2, "the pending records after the restart", func() bool {
					var ids []uint64
					for _, e := range out2.emits {
						vals, _, _ := tuple.DecodeValues(nil, e.values)
						acked[fx.payload(vals)] = true
						ids = append(ids, e.msgID)
					}
					if err := s2.Ack(context.Background(), ids, out2); err != nil {
						t.Fatal(err)
					}
					out2.emits = out2.emits[:0]
					return len(acked) == len(payloads)
				})
			})
		})
	}
}

func seenAll(seen map[string]int) []struct{} {
	n := 0
	for _, c := range seen {
		n += c
	}
	return make([]struct{}, n)
}
