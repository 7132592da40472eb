// The dispatcher behind the ABI exports (exports.ts): it decodes the host's
// input, runs the registered component and sends what it produced.

import { hostError } from "./host";
import { Call } from "./call";
import { Offs, scanValues, scanError } from "./codec";
import { Context, decodeContext, contextError, flushMetrics } from "./context";
import { Op, seal, flushOut, dropOut, SpoutCollector, BoltCollector, ackFail as ackOp, OP_ACK } from "./collector";
import { Registered, Status } from "./component";
import { State } from "./state";
import { Tuple } from "./tuple";
import { scratch, scratchUTF8 } from "./raw";

/** The ABI version this SDK implements (wasm-sdk/ABI.md). */
export const ABI_VERSION: i32 = 1;

// The input buffer handed out by ardea_buffer. It lives outside the GC
// heap (heap.alloc), so the collector never moves or frees it, and it is
// replaced only when the host asks for more room: the host caches its
// address.
class In {
  static ptr: usize = 0;
  static cap: i32 = 0;
}

// The cursor (ardea_cursor): a u32 in static memory, outside the GC heap,
// so its address is fixed for the instance's life. execute stores the index
// of the batch record it is about to hand to the bolt, once per record; when
// the call fails or traps the host reads it to learn which tuple failed.
const CURSOR: usize = memory.data(4);

/** The address of the cursor (the ardea_cursor export). */
export function cursor(): usize { return CURSOR; }

class Rt {
  static ctx: Context | null = null;
  static ready: bool = false;
  static done: bool = false;
  static tuple: Tuple = new Tuple();
}

export function buffer(size: i32): usize {
  if (In.ptr == 0 || size > In.cap) {
    let n = max(max(size, In.cap * 2), 64 << 10);
    if (In.ptr != 0) heap.free(In.ptr);
    In.ptr = heap.alloc(<usize>n);
    In.cap = n;
  }
  return In.ptr;
}

function begin(name: string, mayEmit: bool): void {
  Call.name = name;
  Call.canEmit = mayEmit;
  Call.error = null;
  Op.at = -1;
  Op.emitted = 0;
}

// end completes a call: one state_write with the dirty state, then the
// pending emit ops, then metrics. A recorded error fails it instead.
function end(status: i32): i32 {
  seal();
  let err = Call.error;
  if (err !== null) return fail(err);
  Call.canEmit = false;
  State.instance.flush();
  flushOut();
  flushMetrics();
  return status;
}

// fail reports msg as the call's error and drops what the call had not
// sent yet (emit ops, dirty state).
function fail(msg: string): i32 {
  Call.canEmit = false;
  dropOut();
  State.instance.discard();
  flushMetrics();
  let n = scratchUTF8(Call.name + ": " + msg);
  hostError(scratch.ptr, n);
  return -1;
}

function kindError(exp: string, wantBolt: bool): string {
  let want = wantBolt ? "bolt" : "spout";
  let have = wantBolt ? "spout" : "bolt";
  if (Registered.spout === null && Registered.bolt === null) {
    return exp + ": no component registered (call " + (wantBolt ? "registerBolt" : "registerSpout") +
      " at the top level of the entry file, which must also `export * from \"ardea-sdk/exports\"`)";
  }
  return exp + " is a " + want + " export, but this module registers a " + have;
}

// check verifies that a lifecycle export fits the registered component;
// it returns an error message or null.
function check(exp: string, bolt: bool): string | null {
  if ((bolt && Registered.bolt === null) || (!bolt && Registered.spout === null)) return kindError(exp, bolt);
  if (!Rt.ready) return exp + " called before a successful " + (bolt ? "ardea_prepare" : "ardea_open");
  return null;
}

function inputLen(n: i32): string | null {
  if (n < 0 || n > In.cap) {
    return "input length " + n.toString() + " exceeds the " + In.cap.toString() + "-byte buffer from ardea_buffer";
  }
  return null;
}

// setup decodes the context blob (open/prepare); it returns an error or null.
function setup(n: i32): string | null {
  let e = inputLen(n);
  if (e !== null) return e;
  let ctx = decodeContext(In.ptr, n);
  if (ctx === null) return contextError;
  Rt.ctx = ctx;
  Op.ctx = ctx;
  Op.lastName = null;
  Op.lastIdx = -1;
  Op.defStream = ctx.streamIndex("default");
  Op.defFields = Op.defStream >= 0 ? ctx.outputs[Op.defStream].fields.length : 0;
  Rt.ready = false;
  Rt.done = false;
  State.instance.init();
  return null;
}

export function open(n: i32): i32 {
  begin("Open", false);
  let s = Registered.spout;
  if (s === null) return fail(kindError("ardea_open", false));
  let e = setup(n);
  if (e !== null) return fail(e);
  Call.canEmit = true;
  s.open(Rt.ctx!);
  if (Call.error === null) Rt.ready = true;
  return end(0);
}

export function prepare(n: i32): i32 {
  begin("Prepare", false);
  let b = Registered.bolt;
  if (b === null) return fail(kindError("ardea_prepare", true));
  let e = setup(n);
  if (e !== null) return fail(e);
  Call.canEmit = true;
  b.prepare(Rt.ctx!);
  if (Call.error === null) Rt.ready = true;
  return end(0);
}

export function next(maxTuples: i32): i32 {
  begin("Next", true);
  let e = check("ardea_next", false);
  if (e !== null) return fail(e);
  if (Rt.done) return end(Status.Done);
  let s = Registered.spout!;
  let c = SpoutCollector.instance;
  c.max_ = maxTuples;
  for (;;) {
    let before = Op.emitted;
    let st = s.next(c);
    if (Call.error !== null) return end(0);
    if (st == Status.More) {
      if (Op.emitted == before || Op.emitted >= maxTuples) return end(Status.More);
    } else if (st == Status.Idle) {
      return end(Status.Idle);
    } else if (st == Status.Done) {
      Rt.done = true;
      return end(Status.Done);
    } else {
      return fail("unknown status " + (<i32>st).toString());
    }
  }
  return 0; // not reached
}

export function ackFail(n: i32, isFail: bool): i32 {
  begin(isFail ? "Fail" : "Ack", true);
  let e = check(isFail ? "ardea_fail" : "ardea_ack", false);
  if (e === null) e = inputLen(n);
  if (e !== null) return fail(e);
  let p = In.ptr;
  if (n < 4 || <u64>(n - 4) != 8 * <u64>load<u32>(p)) {
    return fail("malformed message id list (" + n.toString() + " bytes)");
  }
  let s = Registered.spout!;
  let c = SpoutCollector.instance;
  c.max_ = 0;
  for (let i = 4; i < n && Call.error === null; i += 8) {
    let id = load<u64>(p + <usize>i);
    if (isFail) s.fail(id, c); else s.ack(id, c);
  }
  return end(0);
}

export function activate(on: bool): i32 {
  begin(on ? "Activate" : "Deactivate", false);
  let e = check(on ? "ardea_activate" : "ardea_deactivate", false);
  if (e !== null) return fail(e);
  if (on) Registered.spout!.activate(); else Registered.spout!.deactivate();
  return end(0);
}

// A batch record's header after its length: u16 input, u32 source, u64 id.
const REC_HEADER: i32 = 14;

export function execute(n: i32): i32 {
  begin("Execute", true);
  store<u32>(CURSOR, 0);
  let e = check("ardea_execute", true);
  if (e === null) e = inputLen(n);
  if (e !== null) return fail(e);
  let src = In.ptr;
  if (n < 4) return fail(batchError(src, n));
  let bolt = Registered.bolt!;
  let c = BoltCollector.instance;
  let ctx = Rt.ctx!;
  let inputs = ctx.inputs;
  let nin = inputs.length;
  let t = Rt.tuple;
  let off = 4;
  let count = load<u32>(src);
  for (let pos = 0; count > 0; count--, pos++) {
    store<u32>(CURSOR, pos);
    if (n - off < 4 + REC_HEADER) return fail(batchError(src, n));
    let l = <i32>load<u32>(src + <usize>off);
    if (l < REC_HEADER || n - off - 4 < l) return fail(batchError(src, n));
    let rec = src + <usize>off + 4;
    off += 4 + l;
    let idx = <i32>load<u16>(rec);
    if (idx >= nin) return fail(batchError(src, n));
    let vals = rec + <usize>REC_HEADER;
    let vn = l - REC_HEADER;
    let nf: i32;
    let k = vn >= 7 ? load<u8>(vals, 2) : 0;
    if (vn >= 7 && load<u16>(vals) == 1 && (k == 2 || k == 1) && load<u32>(vals, 3) == <u32>(vn - 7)) {
      // One string or bytes field (split's lines, count's words).
      if (Offs.cap == 0) scanValues(vals, vn);
      store<u32>(Offs.ptr, 2);
      nf = 1;
    } else {
      nf = scanValues(vals, vn);
      if (nf < 0) return fail(batchError(src, n));
    }
    t.base = vals;
    t.size = vn;
    t.offs = Offs.ptr;
    t.nfields = nf;
    t.id_ = load<u64>(rec, 6);
    t.src_ = load<u32>(rec, 2);
    t.input_ = idx;
    t.pos_ = pos;
    t.in_ = unchecked(inputs[idx]);
    Call.cur = t.id_;
    Call.tuplePtr = changetype<usize>(t);
    Call.curDone = false;
    Call.autoAnchor = Call.manualAck ? 0 : t.id_;
    bolt.execute(t, c);
    seal(); // a wrong value count is this tuple's error
    if (Call.error === null && !Call.manualAck && !Call.curDone) ackOp(OP_ACK, t.id_);
    Call.cur = 0;
    Call.tuplePtr = 0;
    Call.autoAnchor = 0;
    if (Call.error !== null) {
      return fail("tuple " + t.id_.toString() + " from " + t.component + "/" + t.stream + " task " +
        t.src_.toString() + ": " + Call.error!);
    }
  }
  if (off != n) return fail(batchError(src, n));
  return end(0);
}

// batchError describes the first malformation of an input batch.
function batchError(src: usize, n: i32): string {
  if (n < 4) return "batch: short header (" + n.toString() + " bytes)";
  let count = load<u32>(src);
  let off = 4;
  let nin = Rt.ctx!.inputs.length;
  for (let i: u32 = 0; i < count; i++) {
    if (n - off < 4) return "batch: record " + i.toString() + ": missing (count " + count.toString() + ")";
    let l = <i32>load<u32>(src + <usize>off);
    if (l < REC_HEADER) return "batch: record " + i.toString() + ": length " + l.toString() + " is too small";
    if (n - off - 4 < l) return "batch: record " + i.toString() + ": truncated";
    let rec = src + <usize>off + 4;
    off += 4 + l;
    let idx = <i32>load<u16>(rec);
    if (idx >= nin) {
      return "batch record " + i.toString() + ": input index " + idx.toString() + ", but the context declares " +
        nin.toString() + " inputs";
    }
    if (scanValues(rec + <usize>REC_HEADER, l - REC_HEADER) < 0) {
      let in_ = Rt.ctx!.inputs[idx];
      return "batch record " + i.toString() + " from " + in_.component + "/" + in_.stream + " task " +
        load<u32>(rec, 2).toString() + ": " + scanError;
    }
  }
  if (off != n) return "batch: " + (n - off).toString() + " trailing bytes";
  return "malformed batch";
}

export function tick(): i32 {
  begin("Tick", true);
  let e = check("ardea_tick", true);
  if (e !== null) return fail(e);
  Registered.bolt!.tick(BoltCollector.instance);
  return end(0);
}

export function finish(): i32 {
  begin("Finish", true);
  let e = check("ardea_finish", true);
  if (e !== null) return fail(e);
  Registered.bolt!.finish(BoltCollector.instance);
  return end(0);
}

export function close(): i32 {
  begin("Close", false);
  let s = Registered.spout, b = Registered.bolt;
  if (s !== null) s.close();
  else if (b !== null) b.close();
  else return fail("ardea_close: no component registered");
  Rt.ready = false;
  return end(0);
}
