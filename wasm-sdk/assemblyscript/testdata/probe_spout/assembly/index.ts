// probe_spout: the conformance probe spout (wasm-sdk/conformance/SPEC.md).
//
// Build (wasm-sdk/assemblyscript/build.sh does this for every guest):
//   asc assembly/index.ts -O3 --runtime incremental --exportStart _initialize \
//     --use abort=~lib/ardea-sdk/assembly/abort/ardeaAbort \
//     --use trace=~lib/ardea-sdk/assembly/abort/ardeaTrace \
//     --use seed=~lib/ardea-sdk/assembly/abort/ardeaSeed \
//     --path <dir holding ardea-sdk> -o ../probe_spout.wasm
import { Context, Spout, SpoutCollector, Status, registerSpout } from "ardea-sdk";
export * from "ardea-sdk/exports";

class Probe extends Spout {
  ctx!: Context;
  count: i64 = 5;
  next_: i64 = 1; // the next new tuple
  replay: u64[] = [];

  open(ctx: Context): void {
    this.ctx = ctx;
    this.count = ctx.configInt("count", 5);
    ctx.logger.info("opened " + ctx.component + " task " + ctx.taskId.toString());
  }

  next(c: SpoutCollector): Status {
    while (c.remaining > 0 && this.replay.length > 0) {
      let id = this.replay.shift();
      c.emitWithId(id).string("w" + id.toString()).int(<i64>id);
    }
    while (c.remaining > 0 && this.next_ <= this.count) {
      let i = this.next_++;
      c.emitWithId(<u64>i).string("w" + i.toString()).int(i);
    }
    return this.replay.length == 0 && this.next_ > this.count ? Status.Done : Status.More;
  }

  ack(msgId: u64, c: SpoutCollector): void {
    this.ctx.metric("probe.acked", 1);
  }

  fail(msgId: u64, c: SpoutCollector): void {
    this.replay.push(msgId);
  }

  activate(): void {
    this.ctx.logger.info("activated");
  }

  deactivate(): void {
    this.ctx.logger.info("deactivated");
  }
}

registerSpout(new Probe());
