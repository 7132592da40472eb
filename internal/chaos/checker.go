package chaos

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Delivery modes (topology.reliability) the checker judges.
const (
	AtLeastOnce     = "at_least_once"
	EffectivelyOnce = "effectively_once"
)

// Report is what Check found in one run's output. The checker is
// independent of the system: it parses the sink's lines itself and knows
// only the input's shape (keys x perKey records "k<key>:<seq>", seq 1..perKey
// per key, each key's records in sequence order in the input).
type Report struct {
	Mode         string `json:"mode"`
	Keys         int    `json:"keys"`
	PerKey       int    `json:"per_key"`
	Lines        int    `json:"lines"`         // lines read
	Distinct     int    `json:"distinct"`      // distinct (key, seq) records among them
	Lost         int    `json:"lost"`          // input records never in the output
	Duplicates   int    `json:"duplicates"`    // lines repeating a (key, seq) already seen
	MoreProduced int    `json:"more_produced"` // "more processed than produced": records outside the input, or (effectively once) a count above perKey
	BadCounts    int    `json:"bad_counts"`    // effectively once: a key's line whose (seq, count) is not (n, n) for its n-th line
	Malformed    int    `json:"malformed"`     // lines that are not k<key><TAB><seq><TAB><count>
	// Problems holds the first few findings, for the log.
	Problems []string `json:"problems,omitempty"`
}

const maxProblems = 8

func (r *Report) problem(format string, args ...any) {
	if len(r.Problems) < maxProblems {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// OK reports whether the output meets the mode's guarantee: effectively
// once, every record exactly once with each key's counts stepping 1..N in
// sequence order (what a fault-free run writes); at least once, every
// record at least once (duplicates allowed, counted). In both modes
// nothing the input cannot explain and no malformed line.
func (r Report) OK() bool {
	if r.Lost > 0 || r.MoreProduced > 0 || r.Malformed > 0 {
		return false
	}
	if r.Mode == EffectivelyOnce {
		return r.Duplicates == 0 && r.BadCounts == 0
	}
	return true
}

// Summary is one line: the figures, then the first problems.
func (r Report) Summary() string {
	s := fmt.Sprintf("%s: %d lines, %d of %d records, lost %d, duplicates %d, more than produced %d, bad counts %d, malformed %d",
		r.Mode, r.Lines, r.Distinct, r.Keys*r.PerKey, r.Lost, r.Duplicates, r.MoreProduced, r.BadCounts, r.Malformed)
	if len(r.Problems) > 0 {
		s += "; " + strings.Join(r.Problems, "; ")
	}
	return s
}

// Check reads the sink's output files (one per sink task, in any order)
// and judges them against the input's shape in mode.
func Check(mode string, keys, perKey int, paths ...string) (Report, error) {
	var readers []io.Reader
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return Report{}, err
		}
		defer f.Close()
		readers = append(readers, bufio.NewReaderSize(f, 1<<20))
	}
	return CheckReaders(mode, keys, perKey, readers...)
}

// CheckReaders is Check on open readers. Within one reader, each key's
// lines are judged in order (a key goes to one sink task, so its lines
// are in one file).
func CheckReaders(mode string, keys, perKey int, rs ...io.Reader) (Report, error) {
	if mode != AtLeastOnce && mode != EffectivelyOnce {
		return Report{}, fmt.Errorf("chaos: check mode %q: want %s or %s", mode, AtLeastOnce, EffectivelyOnce)
	}
	if keys <= 0 || perKey <= 0 {
		return Report{}, fmt.Errorf("chaos: check %d keys x %d records: both must be positive", keys, perKey)
	}
	r := Report{Mode: mode, Keys: keys, PerKey: perKey}
	seen := make([]uint16, keys*perKey) // times each (key, seq) was seen, saturating
	last := make([]int, keys)           // effectively once: lines of the key so far
	for ri, rd := range rs {
		sc := bufio.NewScanner(rd)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for ln := 1; sc.Scan(); ln++ {
			r.Lines++
			line := sc.Bytes()
			key, seq, count, ok := parseLine(line)
			if !ok {
				r.Malformed++
				r.problem("file %d line %d: malformed %q", ri+1, ln, clip(line))
				continue
			}
			if key < 0 || key >= keys || seq < 1 || seq > perKey || count < 1 {
				r.MoreProduced++
				r.problem("file %d line %d: k%d seq %d count %d is not a record of the input (%d keys x %d)", ri+1, ln, key, seq, count, keys, perKey)
				continue
			}
			i := key*perKey + seq - 1
			if seen[i] > 0 {
				r.Duplicates++
				if seen[i] == 1 {
					r.problem("file %d line %d: k%d:%d again", ri+1, ln, key, seq)
				}
			} else {
				r.Distinct++
			}
			if seen[i] < ^uint16(0) {
				seen[i]++
			}
			if mode != EffectivelyOnce {
				continue
			}
			if count > perKey {
				r.MoreProduced++
				r.problem("file %d line %d: k%d count %d, but the key has %d records", ri+1, ln, key, count, perKey)
			}
			n := last[key] + 1
			last[key] = n
			if seq != n || count != n {
				r.BadCounts++
				r.problem("file %d line %d: k%d line %d is seq %d count %d, want %d %d", ri+1, ln, key, n, seq, count, n, n)
			}
		}
		if err := sc.Err(); err != nil {
			return r, fmt.Errorf("chaos: reading output %d: %w", ri+1, err)
		}
	}
	for k := range keys {
		for s := 1; s <= perKey; s++ {
			if seen[k*perKey+s-1] == 0 {
				r.problem("k%d:%d lost", k, s)
				r.Lost++
			}
		}
	}
	return r, nil
}

// parseLine parses "k<key>\t<seq>\t<count>" (decimal, no sign, no spaces).
func parseLine(b []byte) (key, seq, count int, ok bool) {
	f := bytes.Split(b, []byte{'\t'})
	if len(f) != 3 || len(f[0]) < 2 || f[0][0] != 'k' {
		return 0, 0, 0, false
	}
	var e1, e2, e3 error
	key, e1 = atoi(f[0][1:])
	seq, e2 = atoi(f[1])
	count, e3 = atoi(f[2])
	return key, seq, count, e1 == nil && e2 == nil && e3 == nil
}

func atoi(b []byte) (int, error) {
	if len(b) == 0 || len(b) > 9 {
		return 0, strconv.ErrSyntax
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, strconv.ErrSyntax
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}

func clip(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "..."
	}
	return string(b)
}
