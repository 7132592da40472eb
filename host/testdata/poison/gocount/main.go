//go:build wasip1

// Command gocount is the word-count example's count bolt
// (examples/wordcount/go/count) with a poison word: a word holding
// "poison" panics, which the SDK reports with its message and source
// location, and the host fails that tuple alone (the SDK exports
// ardea_cursor). Every other word is counted in the task's host-side
// state and emitted ("word", "count") as the example does, and every
// word (the poison one too, before it panics) adds 1 to the user metric
// "words", so a test checks every other word's count, and the metric,
// exactly against a reference count.
// Build: host/testdata/poison/build.sh.
package main

import (
	"bytes"

	ardea "github.com/ardea-dev/ardea/wasm-sdk/go"
)

type count struct {
	ardea.BaseBolt
	ctx   *ardea.Context
	state *ardea.State
}

func (b *count) Prepare(ctx *ardea.Context) error {
	b.ctx, b.state = ctx, ctx.State()
	return nil
}

func (b *count) Execute(t ardea.Tuple, c *ardea.BoltCollector) error {
	word := ardea.StateKeyView(t, "word")
	n := b.state.AddIntBytes(word, 1)
	b.ctx.Metric("words", 1)
	if bytes.Contains(word, []byte("poison")) {
		panic("poison word: " + string(word))
	}
	c.EmitAnchored(t, ardea.Text(word), n)
	return nil
}

// A module built with -buildmode=c-shared runs init functions, not main.
func init() {
	ardea.RegisterBolt(&count{}, ardea.Reads("word"), ardea.Emits("default", "word", "count"))
}

func main() {}
