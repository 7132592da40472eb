// Package wordcount holds the word-count example: the compiled split and
// count modules in every SDK language (built from <lang>/split and
// <lang>/count, see each <lang>/BUILD.md) and a plain Go reference of the
// same logic that tests and `ardea bench` compare against.
package wordcount

import (
	"embed"
	"fmt"
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
