// Emitting: the output buffer, the Emit value builder and the collectors.

import { hostEmit } from "./host";
import { Call, setCallError } from "./call";
import { Context } from "./context";
import { Kind } from "./codec";
import { RawBuf } from "./raw";
import { Tuple } from "./tuple";

/** Pending emit ops are sent as soon as they reach this size. */
export const OUT_FLUSH: i32 = 64 << 10;

/** Not a direct emit (the ABI's direct task for "none"). */
export const NO_TASK: u32 = 0xFFFFFFFF;

const OP_EMIT: u8 = 1;
export const OP_ACK: u8 = 2;
const OP_FAIL: u8 = 3;

/** The output buffer: ops of the current call, sent with one ardea.emit. */
export const out = new RawBuf();

// The emit op being built: it starts at Op.at in out and is sealed (its
// value count checked and written) when the next op starts or the call ends.
export class Op {
  static at: i32 = -1;
  static nvAt: i32 = 0;
  static nv: i32 = 0;
  static want: i32 = 0;
  static si: i32 = 0;
  static ctx: Context | null = null;
  static defStream: i32 = -1; // index of "default", or -1
  static defFields: i32 = 0;
  static lastName: string | null = null; // last stream name looked up (compared by pointer)
  static lastIdx: i32 = -1;
  static emitted: i32 = 0; // tuples emitted in this call (spouts)
}

/** Seals the emit op in progress; a wrong value count drops it with an error. */
export function seal(): void {
  let at = Op.at;
  if (at < 0) return;
  Op.at = -1;
  if (Op.nv != Op.want) {
    out.len = at;
    let s = Op.ctx!.outputs[Op.si];
    setCallError("emit on stream \"" + s.name + "\": " + Op.nv.toString() + " values for " +
      Op.want.toString() + " declared fields [" + s.fields.join(", ") + "]");
    return;
  }
  store<u16>(out.ptr + <usize>Op.nvAt, <u16>Op.nv);
  if (out.len >= OUT_FLUSH) flushOut();
}

/** Sends the pending ops with one ardea.emit call. */
export function flushOut(): void {
  if (out.len > 0) {
    hostEmit(out.ptr, out.len);
    out.len = 0;
  }
}

/** Drops the pending ops (a failed call). */
export function dropOut(): void {
  Op.at = -1;
  out.shrink(1 << 20);
}

function streamIndex(stream: string): i32 {
  if (changetype<usize>(stream) == changetype<usize>(Op.lastName)) return Op.lastIdx;
  let ctx = Op.ctx;
  let si = ctx ? ctx.streamIndex(stream) : -1;
  if (si < 0) {
    let names = new Array<string>(0);
    if (ctx) for (let i = 0; i < ctx.outputs.length; i++) names.push("\"" + ctx.outputs[i].name + "\"");
    setCallError("emit on undeclared stream \"" + stream + "\" (declared: " +
      (names.length > 0 ? names.join(", ") : "none") + ")");
    return -1;
  }
  Op.lastName = stream;
  Op.lastIdx = si;
  return si;
}

// start begins an emit op on stream si (-2: the default stream; -1: look
// stream up) with room for na anchors, which the caller writes at the
// returned offset in out. It returns -1 if the emit is refused (the error
// is set).
function start(si: i32, stream: string, direct: u32, msgId: u64, na: i32): i32 {
  seal();
  if (!Call.canEmit) {
    setCallError("emit on stream \"" + stream + "\" during " + Call.name +
      ": the ABI allows emitting only in open, next, ack, fail, prepare, execute, tick and finish");
    return -1;
  }
  let want: i32;
  if (si == -2 && Op.defStream >= 0) {
    si = Op.defStream;
    want = Op.defFields;
  } else {
    si = streamIndex(stream);
    if (si < 0) return -1;
    want = Op.ctx!.outputs[si].fields.length;
  }
  let at = out.len;
  let p = out.reserve(19 + (na << 3));
  store<u8>(p, OP_EMIT);
  store<u16>(p, <u16>si, 1);
  store<u32>(p, direct, 3);
  store<u64>(p, msgId, 7);
  store<u16>(p, <u16>na, 15);
  Op.at = at;
  Op.nvAt = at + 17 + (na << 3);
  Op.nv = 0;
  Op.want = want;
  Op.si = si;
  Op.emitted++;
  out.len = at + 19 + (na << 3);
  return at + 17;
}

export function ackFail(op: u8, id: u64): void {
  if (id == 0) return;
  if (id == Call.cur) {
    // The tuple being executed is acked or failed at most once per call
    // (and automatic mode then leaves it alone).
    if (Call.curDone) return;
    Call.curDone = true;
  }
  seal();
  if (!Call.canEmit) {
    setCallError("ack or fail during " + Call.name + ": not allowed there by the ABI");
    return;
  }
  let p = out.reserve(9);
  store<u8>(p, op);
  store<u64>(p, id, 1);
  out.len += 9;
  if (out.len >= OUT_FLUSH) flushOut();
}

/**
 * Emit adds the values of the tuple being emitted, in the stream's field
 * order: `c.emit().string("a").int(1)`. Every method returns the same
 * builder. The tuple is complete when the next emit, ack or fail starts or
 * the call returns; a value count that differs from the stream's declared
 * fields then fails the call. Add all values right away.
 */
export class Emit {
  static readonly instance: Emit = new Emit();

  @inline private room(n: i32): usize {
    if (Op.at < 0) return 0;
    Op.nv++;
    return out.reserve(n);
  }

  /** A null field. */
  null(): Emit {
    let p = this.room(1);
    if (p != 0) {
      store<u8>(p, Kind.Null);
      out.len += 1;
    }
    return this;
  }

  /** A string field (UTF-8 encoded; unpaired surrogates become U+FFFD). */
  string(s: string): Emit {
    if (Op.at < 0) return this;
    let n = String.UTF8.byteLength(s);
    let p = this.room(5 + n);
    store<u8>(p, Kind.String);
    store<u32>(p, <u32>n, 1);
    String.UTF8.encodeUnsafe(changetype<usize>(s), s.length, p + 5, false, String.UTF8.ErrorMode.REPLACE);
    out.len += 5 + n;
    return this;
  }

  /** A string field from n bytes of UTF-8 at p (for example a view of an input field). */
  stringView(p: usize, n: i32): Emit {
    return this.blob(Kind.String, p, n);
  }

  /** A string field from UTF-8 bytes. */
  stringBytes(utf8: Uint8Array): Emit {
    return this.blob(Kind.String, utf8.dataStart, utf8.length);
  }

  /** A bytes field. */
  bytes(b: Uint8Array): Emit {
    return this.blob(Kind.Bytes, b.dataStart, b.length);
  }

  /** A bytes field from n bytes at p. */
  bytesView(p: usize, n: i32): Emit {
    return this.blob(Kind.Bytes, p, n);
  }

  private blob(k: i32, src: usize, n: i32): Emit {
    let p = this.room(5 + n);
    if (p != 0) {
      store<u8>(p, k);
      store<u32>(p, <u32>n, 1);
      memory.copy(p + 5, src, <usize>n);
      out.len += 5 + n;
    }
    return this;
  }

  /** An int64 field. */
  int(v: i64): Emit {
    let p = this.room(9);
    if (p != 0) {
      store<u8>(p, Kind.Int);
      store<i64>(p, v, 1);
      out.len += 9;
    }
    return this;
  }

  /** A float64 field. */
  float(v: f64): Emit {
    let p = this.room(9);
    if (p != 0) {
      store<u8>(p, Kind.Float);
      store<f64>(p, v, 1);
      out.len += 9;
    }
    return this;
  }

  /** A bool field. */
  bool(v: bool): Emit {
    let p = this.room(2);
    if (p != 0) {
      store<u8>(p, Kind.Bool);
      store<u8>(p, v ? 1 : 0, 1);
      out.len += 2;
    }
    return this;
  }

  /** Field i of an input tuple, as it is (any kind). */
  field(t: Tuple, i: i32): Emit {
    let pp = t.payloadPtr(i);
    let k = <i32>t.kind(i);
    let tagp = k == Kind.String || k == Kind.Bytes ? pp - 5 : pp - 1;
    let n = <i32>(pp - tagp) + t.payloadLen(i);
    let p = this.room(n);
    if (p != 0) {
      memory.copy(p, tagp, <usize>n);
      out.len += n;
    }
    return this;
  }
}

// Emitting is shared by both collectors.
class Emitter {
  /** Emits a tuple on the "default" stream; add its values to the result.
   * In a bolt's execute in automatic ack mode (the default) it is anchored
   * on the tuple being executed. */
  emit(): Emit {
    startAuto(-2, "default", NO_TASK);
    return Emit.instance;
  }

  /** Emits a tuple on a declared stream (anchored like emit). */
  emitTo(stream: string): Emit {
    startAuto(-1, stream, NO_TASK);
    return Emit.instance;
  }

  /** Emits a tuple on a stream to one task of a subscriber that uses direct grouping (anchored like emit). */
  emitDirect(task: u32, stream: string): Emit {
    if (checkDirect(task, stream)) startAuto(-1, stream, task);
    return Emit.instance;
  }

  /** The first error of the current call (emit errors included), or null. */
  get error(): string | null {
    seal();
    return Call.error;
  }
}

// startAuto starts a plain emit: anchored on the tuple being executed in
// automatic ack mode, unanchored otherwise.
function startAuto(si: i32, stream: string, direct: u32): void {
  let id = Call.autoAnchor;
  if (id == 0) {
    start(si, stream, direct, 0, 0);
    return;
  }
  let at = start(si, stream, direct, 0, 1);
  if (at >= 0) store<u64>(out.ptr + <usize>at, id);
}

function checkDirect(task: u32, stream: string): bool {
  if (task == NO_TASK) {
    seal();
    setCallError("emit on stream \"" + stream + "\": task id " + task.toString() + " is not a direct target");
    return false;
  }
  return true;
}

/** SpoutCollector emits a spout's tuples; the ...WithId forms make them tracked. */
export class SpoutCollector extends Emitter {
  static readonly instance: SpoutCollector = new SpoutCollector();
  max_: i32 = 0;

  /** Emits a tracked tuple on "default": the spout's ack or fail gets msgId. */
  emitWithId(msgId: u64): Emit {
    start(-2, "default", NO_TASK, msgId, 0);
    return Emit.instance;
  }

  /** Emits a tracked tuple on a declared stream. */
  emitToWithId(stream: string, msgId: u64): Emit {
    start(-1, stream, NO_TASK, msgId, 0);
    return Emit.instance;
  }

  /** Emits a tracked tuple to one task (direct grouping). */
  emitDirectWithId(task: u32, stream: string, msgId: u64): Emit {
    if (checkDirect(task, stream)) start(-1, stream, task, msgId, 0);
    return Emit.instance;
  }

  /** The number of tuples emitted during the current host call. */
  get emitted(): i32 { return Op.emitted; }

  /** How many more tuples the host asked for in the current next call. */
  get remaining(): i32 { return max(this.max_ - Op.emitted, 0); }
}

/** BoltCollector emits a bolt's tuples and acks or fails its input. */
export class BoltCollector extends Emitter {
  static readonly instance: BoltCollector = new BoltCollector();

  /** Emits on "default" anchored on an input tuple (its failure fails the anchor's tree). */
  emitAnchored(anchor: Tuple): Emit {
    this.anchored(-2, "default", NO_TASK, anchor.id_);
    return Emit.instance;
  }

  /** Emits on a declared stream anchored on an input tuple. */
  emitAnchoredTo(stream: string, anchor: Tuple): Emit {
    this.anchored(-1, stream, NO_TASK, anchor.id_);
    return Emit.instance;
  }

  /** Emits on a declared stream anchored on several input tuples. */
  emitMultiAnchored(stream: string, anchors: Tuple[]): Emit {
    this.multi(stream, NO_TASK, anchors);
    return Emit.instance;
  }

  /** Emits to one task (direct grouping), anchored on the given input tuples. */
  emitDirectAnchored(task: u32, stream: string, anchors: Tuple[]): Emit {
    if (checkDirect(task, stream)) this.multi(stream, task, anchors);
    return Emit.instance;
  }

  /** Acks an input tuple (a no-op for an untracked tuple, id 0). */
  ack(t: Tuple): void { ackFail(OP_ACK, t.id_); }

  /** Fails an input tuple: its spout's fail is called for the tree. */
  fail(t: Tuple): void { ackFail(OP_FAIL, t.id_); }

  /** Acks by tuple id (for a tuple kept by its id). */
  ackId(id: u64): void { ackFail(OP_ACK, id); }

  /** Fails by tuple id. */
  failId(id: u64): void { ackFail(OP_FAIL, id); }

  private anchored(si: i32, stream: string, direct: u32, id: u64): void {
    if (id == 0) {
      start(si, stream, direct, 0, 0);
      return;
    }
    let at = start(si, stream, direct, 0, 1);
    if (at >= 0) store<u64>(out.ptr + <usize>at, id);
  }

  private multi(stream: string, direct: u32, anchors: Tuple[]): void {
    let na = 0;
    for (let i = 0; i < anchors.length; i++) if (unchecked(anchors[i]).id_ != 0) na++;
    let at = start(-1, stream, direct, 0, na);
    if (at < 0) return;
    let p = out.ptr + <usize>at;
    for (let i = 0; i < anchors.length; i++) {
      let id = unchecked(anchors[i]).id_;
      if (id != 0) {
        store<u64>(p, id);
        p += 8;
      }
    }
  }
}
