package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exact is what a fault-free run writes for 2 keys x 3 records (keys
// interleaved; each key's lines in sequence order).
var exact = []string{"k0\t1\t1", "k1\t1\t1", "k0\t2\t2", "k1\t2\t2", "k1\t3\t3", "k0\t3\t3"}

func check(t *testing.T, mode string, lines ...string) Report {
	t.Helper()
	r, err := CheckReaders(mode, 2, 3, strings.NewReader(strings.Join(lines, "\n")+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestCheckerCatches feeds crafted outputs to the checker in both modes
// and checks each figure it reports and its verdict.
func TestCheckerCatches(t *testing.T) {
	with := func(edit func([]string) []string) []string {
		return edit(append([]string(nil), exact...))
	}
	for _, tc := range []struct {
		name  string
		lines []string
		// want: lost, dups, more, badCounts, malformed; verdicts per mode
		lost, dups, more, bad, malformed int
		eoOK, aloOK                      bool
		problem                          string // a substring of the first problem ("" = none)
	}{
		{name: "exact", lines: exact, eoOK: true, aloOK: true},
		{name: "gap", lines: with(func(l []string) []string { return append(l[:2], l[3:]...) }), // k0:2 missing
			lost: 1, bad: 1, problem: "k0 line 2 is seq 3 count 3, want 2 2"},
		{name: "lost tail", lines: exact[:5], lost: 1, problem: "k0:3 lost"},
		{name: "duplicate replayed with state", lines: with(func(l []string) []string { return append(l, "k0\t3\t4") }),
			dups: 1, more: 1, bad: 1, aloOK: true, problem: "k0 count 4, but the key has 3 records"},
		{name: "duplicate from a rolled-back write", lines: with(func(l []string) []string { return append(l[:3], append([]string{"k0\t2\t2"}, l[3:]...)...) }),
			dups: 1, bad: 2, aloOK: true, problem: "k0:2 again"},
		{name: "extra record", lines: with(func(l []string) []string { return append(l, "k0\t4\t4") }),
			more: 1, problem: "k0 seq 4 count 4 is not a record of the input"},
		{name: "unknown key", lines: with(func(l []string) []string { return append(l, "k9\t1\t1") }),
			more: 1, problem: "k9 seq 1 count 1 is not a record"},
		{name: "wrong count", lines: with(func(l []string) []string { l[4] = "k1\t3\t2"; return l }),
			bad: 1, aloOK: true, problem: "k1 line 3 is seq 3 count 2, want 3 3"},
		{name: "count restarted (state lost)", lines: with(func(l []string) []string { l[5] = "k0\t3\t1"; return l }),
			bad: 1, aloOK: true, problem: "k0 line 3 is seq 3 count 1"},
		{name: "out of order", lines: with(func(l []string) []string { l[0], l[2] = "k0\t2\t1", "k0\t1\t2"; return l }),
			bad: 2, aloOK: true},
		{name: "torn line", lines: with(func(l []string) []string { l[5] = "k0\t3\t3k1\t"; return l }),
			lost: 1, malformed: 1, problem: `malformed "k0\t3\t3k1\t"`},
		{name: "foreign line", lines: with(func(l []string) []string { return append(l, "hello") }),
			malformed: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []string{EffectivelyOnce, AtLeastOnce} {
				r := check(t, mode, tc.lines...)
				wantBad, wantMore := tc.bad, tc.more
				if mode == AtLeastOnce {
					// At least once, counts carry no guarantee (state is
					// not restored and replays count again): only records
					// outside the input are more than produced.
					wantBad = 0
					if tc.name == "duplicate replayed with state" {
						wantMore = 0
					}
				}
				if r.Lost != tc.lost || r.Duplicates != tc.dups || r.MoreProduced != wantMore || r.BadCounts != wantBad || r.Malformed != tc.malformed {
					t.Errorf("%s: %s; want lost %d dups %d more %d bad %d malformed %d", mode, r.Summary(), tc.lost, tc.dups, wantMore, wantBad, tc.malformed)
				}
				wantOK := tc.eoOK
				if mode == AtLeastOnce {
					wantOK = tc.aloOK
				}
				if r.OK() != wantOK {
					t.Errorf("%s: OK %v, want %v (%s)", mode, r.OK(), wantOK, r.Summary())
				}
				if mode == EffectivelyOnce && tc.problem != "" && (len(r.Problems) == 0 || !strings.Contains(strings.Join(r.Problems, "; "), tc.problem)) {
					t.Errorf("problems %q do not mention %q", r.Problems, tc.problem)
				}
			}
		})
	}
}

// TestCheckFiles: the sink's files (one per task) are read together; a
// key's lines may sit in any one of them.
func TestCheckFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "out.0"), filepath.Join(dir, "out.1")
	os.WriteFile(a, []byte("k0\t1\t1\nk0\t2\t2\nk0\t3\t3\n"), 0o644)
	os.WriteFile(b, []byte("k1\t1\t1\nk1\t2\t2\nk1\t3\t3\n"), 0o644)
	r, err := Check(EffectivelyOnce, 2, 3, a, b)
	if err != nil || !r.OK() || r.Distinct != 6 {
		t.Fatalf("%v %s", err, r.Summary())
	}
	if _, err := Check(EffectivelyOnce, 2, 3, filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing output file is not an error")
	}
	if _, err := CheckReaders("at_most_once", 2, 3); err == nil {
		t.Fatal("at most once accepted: it has no guarantee to check")
	}
}

// TestCheckerLarge: a big exact output passes and one lost record in the
// middle is found (the figures scale to the long schedule's inputs).
func TestCheckerLarge(t *testing.T) {
	const keys, perKey = 300, 300
	var sb strings.Builder
	for s := 1; s <= perKey; s++ {
		for k := range keys {
			if k == 17 && s == 150 {
				continue
			}
			sb.WriteString("k" + itoa(k) + "\t" + itoa(s) + "\t" + itoa(s) + "\n")
		}
	}
	r, err := CheckReaders(AtLeastOnce, keys, perKey, strings.NewReader(sb.String()))
	if err != nil {
		t.Fatal(err)
	}
	if r.Lost != 1 || r.OK() || r.Problems[0] != "k17:150 lost" {
		t.Fatalf("%s", r.Summary())
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
