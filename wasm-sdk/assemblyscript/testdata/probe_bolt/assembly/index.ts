// probe_bolt: the conformance probe bolt (wasm-sdk/conformance/SPEC.md).
//
// Build (wasm-sdk/assemblyscript/build.sh does this for every guest):
//   asc assembly/index.ts -O3 --runtime incremental --exportStart _initialize \
//     --use abort=~lib/ardea-sdk/assembly/abort/ardeaAbort \
//     --use trace=~lib/ardea-sdk/assembly/abort/ardeaTrace \
//     --use seed=~lib/ardea-sdk/assembly/abort/ardeaSeed \
//     --path <dir holding ardea-sdk> -o ../probe_bolt.wasm
import { Bolt, BoltCollector, Context, State, Tuple, failCall, registerBolt } from "ardea-sdk";
export * from "ardea-sdk/exports";

class Probe extends Bolt {
  ctx!: Context;
  state!: State;
  prefix: string = "";
  ticks: i64 = 0;
  executed: i64 = 0;
  prev: Tuple | null = null;

  prepare(ctx: Context): void {
    this.ctx = ctx;
    this.state = ctx.state;
    this.prefix = ctx.configOr("prefix", "");
    if (ctx.configOr("ack", "") == "manual") ctx.manualAck();
    ctx.logger.info("prepared " + ctx.component + " task " + ctx.taskId.toString() + " of " + ctx.parallelism.toString());
  }

  execute(t: Tuple, c: BoltCollector): void {
    this.executed++;
    let prev = t.batchPos > 0 ? this.prev : null;
    this.prev = t.copy();
    if (t.equals(0, "fail")) {
      c.fail(t);
    } else if (t.equals(0, "auto")) {
      c.emit().string("auto").int(0);
    } else if (t.equals(0, "twice")) {
      c.ack(t);
      c.ack(t);
    } else if (t.equals(0, "error")) {
      failCall("probe error: bad word");
    } else if (t.equals(0, "panic")) {
      throw new Error("probe panic");
    } else if (t.equals(0, "log")) {
      this.ctx.logger.warn("probe log");
      c.ack(t);
    } else if (t.equals(0, "config")) {
      let keys = this.ctx.configKeys();
      let pairs = new Array<string>(keys.length);
      for (let i = 0; i < keys.length; i++) pairs[i] = keys[i] + "=" + this.ctx.config(keys[i])!;
      c.emitAnchoredTo("events", t).string("config").string(pairs.join(","));
      c.ack(t);
    } else if (t.equals(0, "scan")) {
      let it = this.state.scan("");
      while (it.next()) {
        c.emitAnchoredTo("events", t).string("state").string(it.key + "=" + it.valueInt().toString());
      }
      c.ack(t);
    } else if (t.hasPrefix(0, "delete:")) {
      let k = t.string(0).substring(7);
      this.state.delete(k);
      c.emitAnchoredTo("events", t).string("deleted").string(k);
      c.ack(t);
    } else if (t.hasPrefix(0, "direct:")) {
      let task = U32.parseInt(t.string(0).substring(7));
      c.emitDirectAnchored(task, "default", [t]).stringView(t.payloadPtr(0), t.payloadLen(0)).int(0);
      c.ack(t);
    } else if (t.equals(0, "metrics")) {
      this.ctx.gauge("probe.gauge", 2.5);
      this.ctx.observe("probe.size", 7);
      this.ctx.observe("probe.size", 1000);
      this.ctx.metric("probe.words", 0);
      c.ack(t);
    } else if (t.equals(0, "multi")) {
      let anchors: Tuple[] = prev !== null ? [t, prev] : [t];
      c.emitMultiAnchored("default", anchors).string("multi").int(2);
      c.ack(t);
    } else {
      let n = this.state.addIntAt(t.payloadPtr(0), t.payloadLen(0), 1);
      c.emitAnchored(t).string(this.prefix + t.string(0)).int(n);
      c.ack(t);
      this.ctx.metric("probe.words", 1);
    }
  }

  tick(c: BoltCollector): void {
    this.ticks++;
    c.emitTo("events").string("tick").string(this.ticks.toString());
  }

  finish(c: BoltCollector): void {
    c.emitTo("events").string("finish").string(this.executed.toString());
  }
}

registerBolt(new Probe());
