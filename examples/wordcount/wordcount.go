// Package wordcount holds the word-count example: the compiled split and
// count modules (built from ./split and ./count, see BUILD.md) and a plain Go
// reference of the same logic that tests and `ardea bench` compare against.
package wordcount

import (
	_ "embed"
	"strings"
)

// SplitWasm and CountWasm are the example's compiled modules.
//
//go:embed split.wasm
var SplitWasm []byte

//go:embed count.wasm
var CountWasm []byte

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
