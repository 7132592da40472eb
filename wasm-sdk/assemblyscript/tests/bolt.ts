// The vector test bolt (run by run.mjs under node with a fake host). Its
// config "mode" selects what it does:
//   prepare (always): logs the context in context.txt's column format;
//   describe: logs "input,source,id,spec" for every tuple (batch.txt);
//   echo: also re-emits every tuple's values through the typed API;
//   script: keeps the batch's tuples and in finish rebuilds the op
//     sequence in config "script" (ops.txt) through the public emit API;
//   statekey: logs the hex of t.stateKeyAt(config "keyfields");
//   misc: runs the SDK feature named by the tuple's field 0 (see misc()).
import { Bolt, BoltCollector, Context, Tuple, registerBolt } from "ardea-sdk";
import { addSpec, addTuple, describe, hexBytes, parseU64, streamName } from "./common";
export * from "ardea-sdk/exports";

function hexStr(s: string): string {
  return hexBytes(Uint8Array.wrap(String.UTF8.encode(s)));
}

function names(name: string, fields: string[]): string {
  let parts = new Array<string>(0);
  parts.push(hexStr(name));
  for (let i = 0; i < fields.length; i++) parts.push(hexStr(fields[i]));
  return parts.join(":");
}

function describeContext(ctx: Context): string {
  let keys = ctx.configKeys();
  let cfg = new Array<string>(0);
  for (let i = 0; i < keys.length; i++) cfg.push(hexStr(keys[i]) + "=" + hexStr(ctx.config(keys[i])!));
  let outs = new Array<string>(0);
  for (let i = 0; i < ctx.outputs.length; i++) outs.push(names(ctx.outputs[i].name, ctx.outputs[i].fields));
  let ins = new Array<string>(0);
  for (let i = 0; i < ctx.inputs.length; i++) {
    let in_ = ctx.inputs[i];
    ins.push(hexStr(in_.component) + ":" + names(in_.stream, in_.fields));
  }
  let cols = [
    hexStr(ctx.topology), hexStr(ctx.component), ctx.taskId.toString(), ctx.taskIndex.toString(),
    ctx.parallelism.toString(),
    cfg.length > 0 ? cfg.join(",") : "-",
    outs.length > 0 ? outs.join(",") : "-",
    ins.length > 0 ? ins.join(",") : "-",
  ];
  return cols.join("\t");
}

class VectorBolt extends Bolt {
  ctx!: Context;
  mode: string = "";
  kept: Map<u64, Tuple> = new Map();
  keyFields: i32[] = [];

  prepare(ctx: Context): void {
    this.ctx = ctx;
    // These tests check the acks they send themselves (the conformance
    // suite covers automatic acking).
    ctx.manualAck();
    ctx.logger.info(describeContext(ctx));
    this.mode = ctx.configOr("mode", "");
    this.kept.clear();
    this.keyFields = [];
    let kf = ctx.configOr("keyfields", "");
    if (kf.length > 0) {
      let parts = kf.split(",");
      for (let i = 0; i < parts.length; i++) this.keyFields.push(I32.parseInt(parts[i]));
    }
  }

  execute(t: Tuple, c: BoltCollector): void {
    let m = this.mode;
    if (m == "describe" || m == "echo") {
      this.ctx.logger.info(t.input.toString() + "," + t.sourceTask.toString() + "," + t.id.toString() + "," + describe(t));
      if (m == "echo") {
        let e = c.emit();
        addTuple(e, t);
      }
    } else if (m == "script") {
      this.kept.set(t.id, t.copy());
    } else if (m == "misc") {
      this.misc(t.string(0), c);
    } else if (m == "statekey") {
      let k = t.stateKeyAt(this.keyFields);
      this.ctx.logger.info(hexBytes(k));
    }
  }

  misc(w: string, c: BoltCollector): void {
    let st = this.ctx.state;
    if (w == "undeclared") {
      c.emitTo("nope").string("x");
    } else if (w == "fewer") {
      c.emit();
    } else if (w == "more") {
      c.emit().string("a").string("b");
    } else if (w == "cfg") {
      this.ctx.configInt("n", 0);
    } else if (w == "state") {
      let big = new Uint8Array(100);
      for (let i = 0; i < big.length; i++) big[i] = <u8>i;
      st.put("big", big);
      st.putInt("int", -5);
      let r = st.addInt("int", 2);
      let one = new Uint8Array(1);
      st.put("gone", one);
      st.delete("gone");
      c.emit().string("big=" + hexBytes(st.get("big")!) + " int=" + st.getInt("int").toString() + " r=" + r.toString() +
        " has=" + (st.has("gone") ? "yes" : "no") + " absent=" + (st.get("absent") === null ? "null" : "set"));
    } else if (w == "many") {
      // 3000 keys through a cache of 100: it flushes and empties on the way.
      st.maxEntries = 100;
      let v = new Uint8Array(64);
      for (let i = 0; i < 3000; i++) {
        v[0] = <u8>i;
        st.put("k" + (10000 + i).toString(), v);
      }
      let it = st.scan("k");
      let n = 0;
      while (it.next()) {
        if (it.keyLen != 6 || it.valueLen != 64 || it.value()[0] != <u8>(n)) break;
        n++;
      }
      let first = st.scan("k1");
      first.next();
      c.emit().string("scanned " + n.toString() + " first=" + first.key);
    } else if (w == "config") {
      c.emit().string(this.ctx.configOr("missing", "def") + "," + this.ctx.configInt("i", 0).toString() + "," +
        (this.ctx.config("missing") === null ? "null" : "set") + "," + this.ctx.configKeys().join(":"));
    }
  }

  finish(c: BoltCollector): void {
    if (this.mode != "script") return;
    let ops = this.ctx.configOr("script", "").split("|");
    for (let i = 0; i < ops.length; i++) {
      let f = ops[i].split(",");
      if (f[0] == "ack") {
        c.ack(this.kept.get(parseU64(f[1])));
        continue;
      }
      if (f[0] == "fail") {
        c.fail(this.kept.get(parseU64(f[1])));
        continue;
      }
      let si = I32.parseInt(f[1]);
      let direct = <u32>parseU64(f[2]);
      let anchors = new Array<Tuple>(0);
      if (f[4] != "-") {
        let ids = f[4].split(":");
        for (let j = 0; j < ids.length; j++) anchors.push(this.kept.get(parseU64(ids[j])));
      }
      let name = streamName(si);
      let direct_ = direct != 0xFFFFFFFF;
      if (anchors.length == 0) {
        addSpec(direct_ ? c.emitDirect(direct, name) : si == 0 ? c.emit() : c.emitTo(name), f[5]);
      } else if (direct_) {
        addSpec(c.emitDirectAnchored(direct, name, anchors), f[5]);
      } else if (anchors.length == 1) {
        addSpec(si == 0 ? c.emitAnchored(anchors[0]) : c.emitAnchoredTo(name, anchors[0]), f[5]);
      } else {
        addSpec(c.emitMultiAnchored(name, anchors), f[5]);
      }
    }
  }
}

registerBolt(new VectorBolt());
