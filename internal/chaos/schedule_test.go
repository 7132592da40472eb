package chaos

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestScheduleReproducible: the same seed gives the same matrix, another
// seed other choices; every fault is in it, effectively once first.
func TestScheduleReproducible(t *testing.T) {
	for _, long := range []bool{false, true} {
		a, b := Schedule(20, long), Schedule(20, long)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("long %v: two schedules of seed 20 differ", long)
		}
		if c := Schedule(21, long); reflect.DeepEqual(a, c) {
			t.Fatalf("long %v: seeds 20 and 21 give the same schedule", long)
		}
		seen := map[Fault][]string{}
		names := map[string]bool{}
		for _, r := range a {
			seen[r.Fault] = append(seen[r.Fault], r.Mode)
			if names[r.Name()] {
				t.Fatalf("row %s twice", r.Name())
			}
			names[r.Name()] = true
			if len(r.Picks) != r.Faults || r.Faults < 1 || (!long && r.Faults != 1) {
				t.Fatalf("row %s: %d faults, %d picks", r.Name(), r.Faults, len(r.Picks))
			}
			if r.Fault == Apply && r.Phase == "" {
				t.Fatalf("row %s has no phase", r.Name())
			}
		}
		for _, f := range Faults {
			modes := seen[f]
			if len(modes) == 0 {
				t.Fatalf("long %v: no row for %s", long, f)
			}
			if len(f.Modes()) == 2 && modes[0] != EffectivelyOnce {
				t.Fatalf("%s runs %s first", f, modes[0])
			}
		}
	}
}

func TestMatrixTableAndJSON(t *testing.T) {
	m := Matrix{
		{Row: "host-kill/effectively_once", Fault: HostKill, Mode: EffectivelyOnce, Lost: 0, Dups: 0, RecoverySec: []float64{0.7}, Terminal: StateFinished, Verdict: Pass},
		{Row: "sigstop/at_least_once", Fault: HostStop, Mode: AtLeastOnce, Lost: -1, Dups: 3, Terminal: "HUNG", Verdict: Fail, Why: "tuples flowing again: not within 3m0s"},
	}
	tab := m.Table()
	for _, want := range []string{"ROW", "host-kill", "0.7", "FINISHED", "pass", "sigstop", "HUNG", "FAIL", "not within 3m0s"} {
		if !strings.Contains(tab, want) {
			t.Fatalf("table lacks %q:\n%s", want, tab)
		}
	}
	p := filepath.Join(t.TempDir(), "m.json")
	if err := m.WriteJSON(p, 20, false); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	var rep MatrixReport
	if err := json.Unmarshal(b, &rep); err != nil || len(rep.Results) != 2 || rep.Seed != 20 || rep.Results[1].Dups != 3 {
		t.Fatalf("%v %+v", err, rep)
	}
}
