package keyed

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ardea-dev/ardea/internal/testutil"
	"github.com/ardea-dev/ardea/scheduler/settings"

	"github.com/ardea-dev/ardea"
	"github.com/ardea-dev/ardea/scheduler/daemon"
)

func write(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "out.tsv")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckers(t *testing.T) {
	for _, tc := range []struct {
		name       string
		lines      []string
		alo, exact string // error substrings; "" = passes
		dups       int
	}{
		{"exact", []string{"k0\t1\t1", "k1\t1\t1", "k0\t2\t2", "k1\t2\t2"}, "", "", 0},
		{"duplicate", []string{"k0\t1\t1", "k1\t1\t1", "k0\t2\t2", "k0\t2\t3", "k1\t2\t2"}, "", "key k0: seq 2 count 3 after 2", 1},
		{"gap", []string{"k0\t1\t1", "k1\t1\t1", "k1\t2\t2"}, "record k0:2 is missing", "key k0 ends at 1 of 2", 0},
		{"out of order", []string{"k0\t2\t1", "k0\t1\t2", "k1\t1\t1", "k1\t2\t2"}, "", "key k0: seq 2 count 1 after 0", 0},
		{"foreign line", []string{"k0\t1\t1", "hello"}, `"hello" is not a record`, `"hello" is not a record`, 0},
		{"key out of range", []string{"k7\t1\t1"}, "is not a record", "is not a record", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := write(t, tc.lines...)
			dups, err := CheckAtLeastOnce(p, 2, 2)
			if (tc.alo == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.alo)) {
				t.Errorf("CheckAtLeastOnce: %v, want %q", err, tc.alo)
			}
			if err == nil && dups != tc.dups {
				t.Errorf("%d duplicates, want %d", dups, tc.dups)
			}
			err = CheckExact(p, 2, 2)
			if (tc.exact == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.exact)) {
				t.Errorf("CheckExact: %v, want %q", err, tc.exact)
			}
		})
	}
}

// TestExampleRuns runs topology.yaml in each reliability mode (in one
// process, no faults): the output is exact.
func TestExampleRuns(t *testing.T) {
	testutil.StartsProcesses(t, "go build of the example's Go components")
	const keys, perKey = 50, 200
	dir := t.TempDir()
	in := filepath.Join(dir, "input.txt")
	if err := WriteInput(in, keys, perKey); err != nil {
		t.Fatal(err)
	}
	cache := testutil.RunCacheDir(t)
	for _, mode := range []string{settings.AtMostOnce, settings.AtLeastOnce, settings.EffectivelyOnce} {
		t.Run(mode, func(t *testing.T) {
			top, err := ardea.LoadFile("topology.yaml")
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "records.tsv")
			for _, s := range []string{"lines.path=" + in, "out.path=" + out, "topology.reliability=" + mode, "topology.checkpoint.interval=50ms"} {
				if err := top.Set(s); err != nil {
					t.Fatal(err)
				}
			}
			res, err := daemon.Run(context.Background(), daemon.RunOptions{Topology: top, Containers: 2, CacheDir: cache})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Finished {
				t.Fatal("the run did not finish its input")
			}
			if err := CheckExact(out, keys, perKey); err != nil {
				t.Fatal(err)
			}
		})
	}
}
