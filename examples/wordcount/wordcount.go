// Package wordcount holds the word-count example: the compiled split and
// count modules in every SDK language (built from <lang>/split and
// <lang>/count, see each <lang>/BUILD.md) and a plain Go reference of the
// same logic that tests and `ardea bench` compare against.
package wordcount

import (
	"bufio"
	"embed"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// SplitWasm and CountWasm are the Go modules (go/split.wasm, go/count.wasm).
//
//go:embed go/split.wasm
var SplitWasm []byte

//go:embed go/count.wasm
var CountWasm []byte

//go:embed go/*.wasm rust/*.wasm c/*.wasm assemblyscript/*.wasm
var modules embed.FS

// Languages lists the languages the example's split and count come in.
var Languages = []string{"go", "rust", "c", "assemblyscript"}

// Modules returns the compiled split and count modules written in lang.
func Modules(lang string) (split, count []byte, err error) {
	if split, err = modules.ReadFile(lang + "/split.wasm"); err == nil {
		count, err = modules.ReadFile(lang + "/count.wasm")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("word count in %q: no compiled modules (languages: %s)", lang, strings.Join(Languages, ", "))
	}
	return split, count, nil
}

// Reference counts the words of lines exactly as split + count do: words
// are separated by Unicode white space (strings.Fields).
func Reference(lines []string) map[string]int64 {
	counts := map[string]int64{}
	for _, l := range lines {
		for _, w := range strings.Fields(l) {
			counts[w]++
		}
	}
	return counts
}

// ReadCounts reads the word count's output (the file sink's tsv lines
// "word<TAB>count") and returns each word's final count: the largest one
// written. With strict set, each word's counts must go up by exactly one
// from line to line (every change written once, in order).
func ReadCounts(path string, strict bool) (map[string]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	got := map[string]int64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		word, n, ok := strings.Cut(sc.Text(), "\t")
		c, err := strconv.ParseInt(n, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("%s:%d: want word<TAB>count, got %q", path, line, sc.Text())
		}
		if strict && c != got[word]+1 {
			return nil, fmt.Errorf("%s:%d: word %q count went from %d to %d", path, line, word, got[word], c)
		}
		got[word] = max(got[word], c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return got, nil
}

// TestLines is a deterministic input of n lines for tests: repeated words,
// unicode, mixed white space and empty lines.
func TestLines(n int) []string {
	words := []string{"heron", "stream", "bolt", "spout", "tuple", "naïve", "東京", "Zürich", "a", "the", "THE", "x-y", "42", "3.14", "—"}
	seps := []string{" ", "  ", "\t", " \u00a0 ", "\u2003"}
	x := uint32(7)
	next := func() uint32 { x = x*1664525 + 1013904223; return x >> 8 }
	out := make([]string, n)
	for i := range out {
		if i%17 == 0 {
			out[i] = ""
			continue
		}
		var b strings.Builder
		if i%5 == 0 {
			b.WriteString("\t ")
		}
		k := int(next()%12) + 1
		for j := 0; j < k; j++ {
			if j > 0 {
				b.WriteString(seps[next()%uint32(len(seps))])
			}
			b.WriteString(words[next()%uint32(len(words))])
		}
		out[i] = b.String()
	}
	return out
}

// CompareCounts lists how got differs from want (nil: equal): distinct
// words, each word's count, and words that should not be there.
func CompareCounts(got, want map[string]int64) []string {
	var diffs []string
	if len(got) != len(want) {
		diffs = append(diffs, fmt.Sprintf("%d distinct words, want %d", len(got), len(want)))
	}
	for w, n := range want {
		if got[w] != n {
			diffs = append(diffs, fmt.Sprintf("word %q: count %d, want %d", w, got[w], n))
		}
	}
	for w := range got {
		if _, ok := want[w]; !ok {
			diffs = append(diffs, fmt.Sprintf("unexpected word %q", w))
		}
	}
	return diffs
}
