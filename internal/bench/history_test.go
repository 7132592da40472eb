package bench

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRecordAppends: each Record is one more JSON line with the date,
// the machine and the result; the lines before it stay.
func TestRecordAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	for i, v := range []float64{1.5e6, 2.5e6} {
		if err := Record(path, "wordcount", []string{"bench", "wordcount", "--rounds", "5"}, map[string]float64{"median": v}); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []HistoryEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e HistoryEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, e)
	}
	if len(got) != 2 {
		t.Fatalf("%d lines, want 2", len(got))
	}
	for i, e := range got {
		if e.Bench != "wordcount" || e.Date == "" || e.Machine.CPUs <= 0 || e.Machine.GoVersion == "" || strings.Join(e.Args, " ") != "bench wordcount --rounds 5" {
			t.Errorf("line %d: %+v", i, e)
		}
	}
	if got[1].Result.(map[string]any)["median"] != 2.5e6 {
		t.Errorf("second line's result: %v", got[1].Result)
	}
}

// TestPeersSummary: medians, spreads (max/min) and ratios to Flink over
// interleaved rounds, and the table names every engine and round.
func TestPeersSummary(t *testing.T) {
	r := &PeersResult{Engines: []string{"ardea-go", "flink"}, Versions: map[string]string{"ardea-go": "go1.26", "flink": "2.3.0"},
		Median: map[string]float64{}, Spread: map[string]float64{}}
	for _, pair := range [][2]float64{{4e6, 5e6}, {6e6, 5.5e6}, {5e6, 6e6}} {
		r.Rounds = append(r.Rounds, []PeerRun{{Engine: "flink", WordsPerSec: pair[1]}, {Engine: "ardea-go", WordsPerSec: pair[0]}})
	}
	r.summarize()
	if r.Median["ardea-go"] != 5e6 || r.Median["flink"] != 5.5e6 {
		t.Errorf("medians %v", r.Median)
	}
	if r.Spread["ardea-go"] != 1.5 || r.Spread["flink"] != 1.2 {
		t.Errorf("spreads %v", r.Spread)
	}
	if got := r.RatioToFlink["ardea-go"]; got < 0.909 || got > 0.91 {
		t.Errorf("ardea-go / flink = %v, want 5/5.5", got)
	}
	table := FormatPeers(r)
	for _, want := range []string{"ardea-go", "flink", "median", "spread", "/flink", "6.00 M", "0.91x", "2.3.0"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func TestMedianSpread(t *testing.T) {
	for _, c := range []struct {
		v              []float64
		median, spread float64
	}{
		{nil, 0, 0},
		{[]float64{3}, 3, 1},
		{[]float64{4, 1, 2}, 2, 4},
		{[]float64{1, 2, 3, 4}, 2.5, 4},
	} {
		m, s := medianSpread(c.v)
		if m != c.median || s != c.spread {
			t.Errorf("medianSpread(%v) = %v, %v; want %v, %v", c.v, m, s, c.median, c.spread)
		}
	}
}

// TestBenchOptionsRefused: a negative figure or a step outside 1 to
// --topologies is refused by name before anything starts.
func TestBenchOptionsRefused(t *testing.T) {
	for _, c := range []struct {
		o    DensityOptions
		want string
	}{
		{DensityOptions{Topologies: -1}, "none may be negative"},
		{DensityOptions{Topologies: 5, Steps: []int{0}}, "--steps"},
		{DensityOptions{Topologies: 5, Steps: []int{10}}, "--steps"},
		{DensityOptions{Idle: -time.Second}, "none may be negative"},
	} {
		if _, err := Density(t.Context(), c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Density(%+v) = %v, want an error naming %q", c.o, err, c.want)
		}
	}
	if _, err := Peers(t.Context(), PeersOptions{Rounds: -2}); err == nil || !strings.Contains(err.Error(), "--rounds -2") {
		t.Errorf("Peers with --rounds -2: %v", err)
	}
}
