//go:build wasip1

// Command count is the word-count example's count bolt. It is
// fields-grouped on "word" and keeps each word's count in the task's
// host-side state under the word's own bytes (ardea.StateKeyView, the
// ABI's rule for state that moves with its keys), so counts survive a
// module restart or swap and follow their words when the component is
// rescaled. The SDK's write-back cache sends a batch's changed counts to
// the host in one state_write when the batch is done. Each time a count
// changes it emits ("word", "count").
//
// Build (see ../BUILD.md):
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o examples/wordcount/go/count.wasm ./examples/wordcount/go/count
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
	// For a single string field the state key is the word itself. The
	// key is a view of the input (no copy); AddIntBytes copies it only
	// when the word is new to the state cache, and the word is emitted
	// from the same view (ardea.Text), so counting allocates nothing.
	word := ardea.StateKeyView(t, "word")
	n := b.state.AddIntBytes(word, 1)
	c.EmitAnchored(t, ardea.Text(word), n)
	return nil // acks the word (automatic acking)
}

// A module built with -buildmode=c-shared runs init functions, not main.
func init() {
	ardea.RegisterBolt(&count{}, ardea.Reads("word"), ardea.Emits("default", "word", "count"))
}

func main() {}
