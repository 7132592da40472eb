// relay: the polyglot word count's AssemblyScript bolt between split and
// count. It passes each ("word") on unchanged, anchored, acks it and
// counts it in the custom metric relay.words, so the counts are those of
// the plain word count.
//
// Build: go run ./cmd/ardea build examples/polyglot/relay -o examples/polyglot/relay.wasm
// (or wasm-sdk/assemblyscript/build.sh, which rebuilds every AssemblyScript module)
import { Bolt, BoltCollector, Context, Tuple, registerBolt } from "ardea-sdk";
export * from "ardea-sdk/exports";

class Relay extends Bolt {
  ctx!: Context;

  prepare(ctx: Context): void {
    this.ctx = ctx;
    ctx.logger.info("relay " + ctx.component + " task " + ctx.taskId.toString() + " ready");
  }

  execute(t: Tuple, c: BoltCollector): void {
    let i = t.index("word");
    c.emitAnchored(t).stringView(t.payloadPtr(i), t.payloadLen(i));
    c.ack(t);
    this.ctx.metric("relay.words", 1);
  }
}

registerBolt(new Relay());
