//go:build wasip1

// Command split is the word-count example's split bolt: for each input
// tuple it splits field 0 ("line", a string) on Unicode white space
// (strings.Fields semantics) and emits one tuple ("word") per word,
// anchored on the line, then acks the line. Words are emitted as views of
// the input line (ardea.Text), so splitting allocates nothing per word;
// ASCII bytes are classified with a table, other runes with
// unicode.IsSpace. Each line's word count goes to the user histogram
// split.words_per_line (exported as its mean and count, docs/metrics.md).
//
// Build (see ../BUILD.md):
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -ldflags='-s -w' -o examples/wordcount/go/split.wasm ./examples/wordcount/go/split
package main

import (
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
	words := 0
	start := -1 // start of the current word, or -1 between words
	for i := 0; i < len(line); {
		var space bool
		size := 1
		if b := line[i]; b < utf8.RuneSelf {
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
	c.Ack(t)
	return nil
}

// A module built with -buildmode=c-shared runs init functions, not main.
func init() { ardea.RegisterBolt(&split{}) }

func main() {}
