// count is the word-count example's count bolt in AssemblyScript. It is
// fields-grouped on "word" and keeps each word's count in the task's
// host-side state under the word's own bytes (the ABI's rule for state
// that moves with its keys), int64 little endian, so counts survive a
// module swap and one language's count can replace another's. The SDK's
// write-back cache sends a batch's changed counts in one state_write. Each
// time a count changes it emits ("word", "count").
//
// Build (see ../BUILD.md; wasm-sdk/assemblyscript/build.sh rebuilds it):
//   go run ./cmd/ardea build examples/wordcount/assemblyscript/count -o examples/wordcount/assemblyscript/count.wasm
import { Bolt, BoltCollector, Context, State, Tuple, registerBolt } from "ardea-sdk";
export * from "ardea-sdk/exports";

class Count extends Bolt {
  state!: State;

  prepare(ctx: Context): void {
    this.state = ctx.state;
  }

  execute(t: Tuple, c: BoltCollector): void {
    // The word is a view of the input: the state key and the emitted
    // string, without a copy (the cache copies a word it has not seen).
    let i = t.index("word");
    let p = t.payloadPtr(i), n = t.payloadLen(i);
    let count = this.state.addIntAt(p, n, 1);
    c.emitAnchored(t).stringView(p, n).int(count);
    c.ack(t);
  }
}

// The manifest (ardea build stores it; ardea run checks the topology with it).
registerBolt(new Count()).emits("default", ["word", "count"]).reads(["word"]);
