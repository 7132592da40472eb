//go:build wasip1

// Command split is the word-count example's split bolt: for each input
// tuple it splits field 0 ("line", a string) on Unicode white space
// (strings.Fields semantics) and emits one tuple ("word") per word,
// anchored on the line; returning nil acks the line (automatic acking).
// Words are emitted as views of
// the input line (ardea.Text), so splitting allocates nothing per word;
// ASCII bytes are classified with a table, other runes with
// unicode.IsSpace. Each line's word count goes to the user histogram
// split.words_per_line (exported as its mean and count, docs/metrics.md).
//
// Build (see ../BUILD.md):
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o examples/wordcount/go/split.wasm ./examples/wordcount/go/split
package main

import (
	"encoding/binary"
	"math/bits"
	"unicode"
	"unicode/utf8"

	ardea "github.com/ardea-dev/ardea/wasm-sdk/go"
)

type split struct {
	ardea.BaseBolt
	ctx *ardea.Context
}

func (s *split) Prepare(ctx *ardea.Context) error {
	s.ctx = ctx
	return nil
}

// asciiSpace marks the ASCII bytes unicode.IsSpace accepts; a table load
// is cheaper than unicode.IsSpace's switch for the common ASCII case.
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

func (s *split) Execute(t ardea.Tuple, c *ardea.BoltCollector) error {
	line := t.BytesView(0)
	n := len(line)
	words := 0
	start := -1 // start of the current word, or -1 between words
	for i := 0; i < n; {
		b := line[i]
		if b > ' ' && b < utf8.RuneSelf {
			// A printable ASCII byte: part of a word. Skip the rest of
			// the word 8 bytes at a time up to the next byte that may
			// end it (one at or below ' ', or one of a multi-byte rune):
			// every loop iteration costs a Go guest a dispatch, so this
			// takes a word in one or two instead of one per byte.
			if start < 0 {
				start = i
			}
			for i++; i+8 <= n; i += 8 {
				x := binary.LittleEndian.Uint64(line[i:])
				// High bit of each byte below 0x21 (exact for the first
				// one) or at or above 0x80.
				if m := ((x-0x2121212121212121)&^x | x) & 0x8080808080808080; m != 0 {
					i += bits.TrailingZeros64(m) >> 3
					break
				}
			}
			continue
		}
		var space bool
		size := 1
		if b < utf8.RuneSelf {
			space = asciiSpace[b]
		} else {
			var r rune
			r, size = utf8.DecodeRune(line[i:])
			space = unicode.IsSpace(r)
		}
		if space {
			if start >= 0 {
				c.EmitAnchored(t, ardea.Text(line[start:i]))
				words++
				start = -1
			}
		} else if start < 0 {
			start = i
		}
		i += size
	}
	if start >= 0 {
		c.EmitAnchored(t, ardea.Text(line[start:]))
		words++
	}
	s.ctx.Observe("split.words_per_line", int64(words))
	return nil // acks the line (automatic acking)
}

// A module built with -buildmode=c-shared runs init functions, not main.
// split reads its input's only field (the line) by index, whatever its
// name, so it declares no Reads.
func init() { ardea.RegisterBolt(&split{}, ardea.Emits("default", "word")) }

func main() {}
