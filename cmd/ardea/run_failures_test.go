package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRunFailedTuples: a run that ends with failed tuples exits 3 and
// says which components failed how many, in its summary's "failed"
// column and in its error; --tolerate-failures exits 0 with the same
// summary; a run without failures exits 0 (the other run tests). At most
// once the poison line is dropped by the bolt; at least once its tree
// fails twice (max_retries 2) and it goes to the spout's dead letters.
func TestRunFailedTuples(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), []byte("line 1\npoison 2\nline 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	topo := filepath.Join(dir, "poison.yaml")
	yaml := `name: poison
spouts:
  - name: lines
    module: builtin:file
    config: {path: in.txt, max_retries: "2", dead_letter: dead.jsonl}
bolts:
  - name: upper
    module: ` + repoPath("host/testdata/poison/raw.wasm") + `
    inputs: [{from: lines}]
    outputs: {default: [line]}
  - name: out
    module: builtin:file
    config: {path: out.txt}
    inputs: [{from: upper}]
`
	if err := os.WriteFile(topo, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	row := func(stderr, component, failed string) bool {
		return regexp.MustCompile(`(?m)^` + component + `\s+\d+\s+\d+\s+` + failed + `\s`).MatchString(stderr)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		rows [][2]string // component, failed
		err  string
	}{
		{"at most once", nil, exitTuplesFailed, [][2]string{{"upper", "1"}, {"lines", "0"}},
			"topology poison: tuples failed: upper 1 (exit status 3; --tolerate-failures exits 0)"},
		{"at most once tolerated", []string{"--tolerate-failures"}, 0, [][2]string{{"upper", "1"}}, ""},
		{"at least once", []string{"--set", "topology.reliability=at_least_once"}, exitTuplesFailed,
			[][2]string{{"upper", "2"}, {"lines", "2"}}, "tuples failed: lines 2, upper 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(filepath.Join(dir, "dead.jsonl"))
			code, _, stderr := runArdea(t, append([]string{"run", topo}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			if !regexp.MustCompile(`(?m)^component\s+emitted\s+executed\s+failed\s`).MatchString(stderr) {
				t.Errorf("the summary has no failed column:\n%s", stderr)
			}
			for _, r := range tc.rows {
				if !row(stderr, r[0], r[1]) {
					t.Errorf("the summary does not show %s failed %s:\n%s", r[0], r[1], stderr)
				}
			}
			if tc.err != "" && !strings.Contains(stderr, tc.err) {
				t.Errorf("stderr lacks %q:\n%s", tc.err, stderr)
			}
		})
	}
}
