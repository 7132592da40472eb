// The harness test bolt (run by run.mjs through ardea-sdk/testing): it
// declares its outputs, the field it reads and its config key. By field
// "line":
//   "boom": writes state, emits, then throws (the tuple fails; the write
//           and the emit are discarded)
//   "nope": reads a field the stream does not have (the tuple fails)
//   "fail": fails the tuple
//   "error": failCall (the tuple fails)
//   anything else: emits the line upper-cased on "default" (anchored,
//   acked automatically), the line's count so far on "counts", adds 1 to
//   the metric "lines" and observes the line's length in "length".
// tick emits ("tick", ticks) on counts; finish logs "finished <n>".
import { Bolt, BoltCollector, Context, Tuple, failCall, registerBolt } from "ardea-sdk";
export * from "ardea-sdk/exports";

class Declared extends Bolt {
  ctx!: Context;
  ticks: i64 = 0;
  seen: i64 = 0;
  prefix: string = "";

  prepare(ctx: Context): void {
    this.ctx = ctx;
    this.prefix = ctx.configOr("prefix", "");
    ctx.logger.info("prepared");
  }

  execute(t: Tuple, c: BoltCollector): void {
    let line = t.stringByName("line");
    this.seen++;
    if (line == "boom") {
      this.ctx.state.putInt("boom", 99);
      c.emit().string("BOOM");
      throw new Error("boom line");
    }
    if (line == "nope") {
      t.stringByName("word");
      return;
    }
    if (line == "fail") {
      c.fail(t);
      return;
    }
    if (line == "error") {
      failCall("error line");
      return;
    }
    c.emit().string(this.prefix + line.toUpperCase());
    let n = this.ctx.state.addInt(line, 1);
    c.emitTo("counts").string(line).int(n);
    this.ctx.metric("lines", 1);
    this.ctx.observe("length", line.length);
  }

  tick(c: BoltCollector): void {
    this.ticks++;
    c.emitTo("counts").string("tick").int(this.ticks);
  }

  finish(c: BoltCollector): void {
    this.ctx.logger.warn("finished " + this.seen.toString());
  }
}

registerBolt(new Declared())
  .emits("default", ["line"])
  .emits("counts", ["line", "n"])
  .reads(["line"])
  .config(["prefix"]);
