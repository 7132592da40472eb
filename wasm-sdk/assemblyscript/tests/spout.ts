// The vector test spout (run by run.mjs): open logs the context's
// component; next rebuilds the op sequence in config "script" (ops.txt,
// spout sequences) through the public emit API once, then reports Done;
// ack and fail log "ack <id>" / "fail <id>" (msgids.txt).
import { Context, SpoutCollector, Spout, Status, registerSpout } from "ardea-sdk";
import { addSpec, parseU64, streamName } from "./common";
export * from "ardea-sdk/exports";

class VectorSpout extends Spout {
  ctx!: Context;
  done: bool = false;

  open(ctx: Context): void {
    this.ctx = ctx;
    this.done = false;
  }

  next(c: SpoutCollector): Status {
    if (this.done) return Status.Done;
    this.done = true;
    let ops = this.ctx.configOr("script", "").split("|");
    for (let i = 0; i < ops.length; i++) {
      let f = ops[i].split(",");
      let si = I32.parseInt(f[1]);
      let direct = <u32>parseU64(f[2]);
      let id = parseU64(f[3]);
      let name = streamName(si);
      if (direct != 0xFFFFFFFF) {
        addSpec(id != 0 ? c.emitDirectWithId(direct, name, id) : c.emitDirect(direct, name), f[5]);
      } else if (id != 0) {
        addSpec(si == 0 ? c.emitWithId(id) : c.emitToWithId(name, id), f[5]);
      } else {
        addSpec(si == 0 ? c.emit() : c.emitTo(name), f[5]);
      }
    }
    return Status.More;
  }

  ack(msgId: u64, c: SpoutCollector): void {
    this.ctx.logger.info("ack " + msgId.toString());
  }

  fail(msgId: u64, c: SpoutCollector): void {
    this.ctx.logger.info("fail " + msgId.toString());
  }
}

registerSpout(new VectorSpout());
