//go:build wasip1

// Command count is the word-count example's count bolt. It is
// fields-grouped on "word" and keeps each word's count in the task's
// host-side state under the word's own bytes (ardea.StateKey, the ABI's
// rule for state that moves with its keys), so counts survive a module
// restart or swap and follow their words when the component is rescaled.
// Each time a count changes it emits ("word", "count").
//
// Build (see ../BUILD.md):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -ldflags='-s -w' -o examples/wordcount/count.wasm ./examples/wordcount/count
package main

import ardea "github.com/ardea-dev/ardea/wasm-sdk/go"

type count struct {
	ardea.BaseBolt
	state *ardea.State
}

func (b *count) Prepare(ctx *ardea.Context) error {
	b.state = ctx.State()
	return nil
}

func (b *count) Execute(t ardea.Tuple, c *ardea.BoltCollector) error {
	// For a single string field the state key is the word itself.
	word := ardea.StateKey(t, "word")
	n := b.state.AddInt(word, 1)
	c.EmitAnchored(t, word, n)
	c.Ack(t)
	return nil
}

// A module built with -buildmode=c-shared runs init functions, not main.
func init() { ardea.RegisterBolt(&count{}) }

func main() {}
