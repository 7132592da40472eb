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
