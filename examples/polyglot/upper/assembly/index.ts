// upper: the polyglot word count's AssemblyScript bolt between split and
// count. For each ("word") it emits ("word", "upper"): the word unchanged
// and the word in upper case, anchored, acks the word and counts it in the
// custom metric upper.words. count groups on "word", so the counts are
// those of the plain word count.
//
// Build: go run ./cmd/ardea build examples/polyglot/upper -o examples/polyglot/upper.wasm
// (or wasm-sdk/assemblyscript/build.sh, which rebuilds every AssemblyScript module)
import { Bolt, BoltCollector, Context, Tuple, registerBolt } from "ardea-sdk";
export * from "ardea-sdk/exports";

class Upper extends Bolt {
  ctx!: Context;

  prepare(ctx: Context): void {
    this.ctx = ctx;
    ctx.logger.info("upper " + ctx.component + " task " + ctx.taskId.toString() + " ready");
  }

  execute(t: Tuple, c: BoltCollector): void {
    let i = t.index("word");
    c.emitAnchored(t)
      .stringView(t.payloadPtr(i), t.payloadLen(i))
      .string(t.string(i).toUpperCase());
    c.ack(t);
    this.ctx.metric("upper.words", 1);
  }
}

// The manifest (ardea build stores it; ardea run checks the topology with it).
registerBolt(new Upper()).emits("default", ["word", "upper"]).reads(["word"]);
