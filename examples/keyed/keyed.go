package keyed

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
)

// WriteInput writes keys*perKey records "k<key>:<seq>" to path: seq runs
// 1..perKey in order for each key, and the keys are interleaved at random
// (a fixed seed, so every call writes the same file).
func WriteInput(path string, keys, perKey int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	next := make([]int, keys)
	open := make([]int, keys)
	for i := range open {
		open[i] = i
	}
	r := rand.New(rand.NewPCG(3, 4))
	for len(open) > 0 {
		i := r.IntN(len(open))
		k := open[i]
		next[k]++
		fmt.Fprintf(w, "k%d:%d\n", k, next[k])
		if next[k] == perKey {
			open[i] = open[len(open)-1]
			open = open[:len(open)-1]
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Record is one line of the sink's output.
type Record struct {
	Key, Seq, Count int
}

// ReadOutput reads the sink's "k<key><TAB><seq><TAB><count>" lines, with
// an error naming the file and line for anything else or a key or seq out
// of range.
func ReadOutput(path string, keys, perKey int) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		parts := strings.Split(sc.Text(), "\t")
		var r Record
		var e1, e2, e3 error
		if len(parts) == 3 && strings.HasPrefix(parts[0], "k") {
			r.Key, e1 = strconv.Atoi(parts[0][1:])
			r.Seq, e2 = strconv.Atoi(parts[1])
			r.Count, e3 = strconv.Atoi(parts[2])
		}
		if len(parts) != 3 || e1 != nil || e2 != nil || e3 != nil || r.Key < 0 || r.Key >= keys || r.Seq < 1 || r.Seq > perKey {
			return nil, fmt.Errorf("%s:%d: %q is not a record of the input (k<key><TAB>seq<TAB>count)", path, line, sc.Text())
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// CheckAtLeastOnce checks that every input record is in the output at
// least once (no per-key gap) and returns how many lines were duplicates.
func CheckAtLeastOnce(path string, keys, perKey int) (dups int, err error) {
	recs, err := ReadOutput(path, keys, perKey)
	if err != nil {
		return 0, err
	}
	seen := make([]bool, keys*(perKey+1))
	for _, r := range recs {
		i := r.Key*(perKey+1) + r.Seq
		if seen[i] {
			dups++
		}
		seen[i] = true
	}
	for k := range keys {
		for s := 1; s <= perKey; s++ {
			if !seen[k*(perKey+1)+s] {
				return dups, fmt.Errorf("%s: record k%d:%d is missing (a gap in key k%d)", path, k, s, k)
			}
		}
	}
	return dups, nil
}

// CheckExact checks the output of a run whose records reach seqstate in
// file order (parse parallelism 1): for each key, exactly the lines
// (seq 1, count 1), (2, 2), ... (perKey, perKey) in that order: every
// record once, and each key's count stepping by one. That is what a
// fault-free run writes.
func CheckExact(path string, keys, perKey int) error {
	recs, err := ReadOutput(path, keys, perKey)
	if err != nil {
		return err
	}
	last := make([]int, keys)
	for i, r := range recs {
		want := last[r.Key] + 1
		if r.Seq != want || r.Count != want {
			return fmt.Errorf("%s:%d: key k%d: seq %d count %d after %d, want %d %d", path, i+1, r.Key, r.Seq, r.Count, last[r.Key], want, want)
		}
		last[r.Key] = want
	}
	for k, n := range last {
		if n != perKey {
			return fmt.Errorf("%s: key k%d ends at %d of %d records", path, k, n, perKey)
		}
	}
	return nil
}
