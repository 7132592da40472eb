// The harness test spout (run by run.mjs through ardea-sdk/testing): emits
// config "count" (default 10) tuples ("line <i>") with message id i, then
// Done; a failed id is emitted again before new ones; acks add to the
// metric "acked"; activate/deactivate log.
import { Context, SpoutCollector, Spout, Status, registerSpout } from "ardea-sdk";
export * from "ardea-sdk/exports";

class Lines extends Spout {
  ctx!: Context;
  count: i64 = 0;
  i: i64 = 0;
  replay: u64[] = [];

  open(ctx: Context): void {
    this.ctx = ctx;
    this.count = ctx.configInt("count", 10);
  }

  next(c: SpoutCollector): Status {
    if (this.replay.length > 0) {
      let id = this.replay.shift();
      c.emitWithId(id).string("line " + id.toString());
      return Status.More;
    }
    if (this.i >= this.count) return Status.Done;
    this.i++;
    c.emitWithId(<u64>this.i).string("line " + this.i.toString());
    return Status.More;
  }

  ack(id: u64, c: SpoutCollector): void { this.ctx.metric("acked", 1); }
  fail(id: u64, c: SpoutCollector): void { this.replay.push(id); }
  activate(): void { this.ctx.logger.info("activated"); }
  deactivate(): void { this.ctx.logger.info("deactivated"); }
}

registerSpout(new Lines()).emits("default", ["line"]).config(["count"]);
