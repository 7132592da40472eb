// The module's abort, trace and seed: asc's defaults import them from
// "env", which the Ardea host refuses, so modules are built with
//   --use abort=~lib/ardea-sdk/assembly/abort/ardeaAbort
//   --use trace=~lib/ardea-sdk/assembly/abort/ardeaTrace
//   --use seed=~lib/ardea-sdk/assembly/abort/ardeaSeed

import { hostError, hostLog, hostNow } from "./host";
import { Call } from "./call";
import { Tuple } from "./tuple";
import { scratch, scratchUTF8 } from "./raw";

// Abort messages are built in static memory: abort may run because the
// heap is exhausted, so it must not allocate.
const ABORT_CAP: i32 = 2048;
const abortBuf = memory.data(ABORT_CAP);
let abortLen: i32 = 0;
let aborting = false;

function abortByte(b: u32): void {
  if (abortLen < ABORT_CAP) {
    store<u8>(abortBuf + <usize>abortLen, <u8>b);
    abortLen++;
  }
}

function abortStr(s: string | null): void {
  if (s === null) return;
  let p = changetype<usize>(s);
  let e = p + (<usize>s.length << 1);
  while (p < e) {
    let c = <u32>load<u16>(p);
    p += 2;
    if ((c & 0xFC00) == 0xD800 && p < e && (<u32>load<u16>(p) & 0xFC00) == 0xDC00) {
      c = 0x10000 + ((c & 0x3FF) << 10) + (<u32>load<u16>(p) & 0x3FF);
      p += 2;
    } else if ((c & 0xF800) == 0xD800) {
      c = 0xFFFD;
    }
    if (c < 0x80) {
      abortByte(c);
    } else if (c < 0x800) {
      abortByte(0xC0 | (c >> 6)); abortByte(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      abortByte(0xE0 | (c >> 12)); abortByte(0x80 | ((c >> 6) & 0x3F)); abortByte(0x80 | (c & 0x3F));
    } else {
      abortByte(0xF0 | (c >> 18)); abortByte(0x80 | ((c >> 12) & 0x3F));
      abortByte(0x80 | ((c >> 6) & 0x3F)); abortByte(0x80 | (c & 0x3F));
    }
  }
}

function abortNum(v: u64): void {
  if (v >= 10) abortNum(v / 10);
  abortByte(48 + <u32>(v % 10));
}

/**
 * The module's `abort` (asc --use abort=...):
 * a failed assertion, a `throw` or a runtime error (out of bounds, out of
 * memory, ...). It reports "<call>: <message> at <file>:<line>:<column>"
 * with ardea.error and traps; in execute the message names the tuple as
 * a failed call does ("Execute: tuple <id> from <component>/<stream> task
 * <source>: <message> at ..."). The host reads ardea_cursor to learn which
 * record of the batch it was and fails that tuple (wasm-sdk/ABI.md).
 */
export function ardeaAbort(message: string | null = null, fileName: string | null = null, line: u32 = 0, column: u32 = 0): void {
  if (aborting) unreachable();
  aborting = true;
  abortLen = 0;
  if (Call.name.length > 0) {
    abortStr(Call.name);
    abortStr(": ");
  }
  if (Call.tuplePtr != 0) {
    let t = changetype<Tuple>(Call.tuplePtr);
    abortStr("tuple ");
    abortNum(t.id_);
    let i = t.in_;
    if (i !== null) {
      abortStr(" from ");
      abortStr(i.component);
      abortByte(47);
      abortStr(i.stream);
    }
    abortStr(" task ");
    abortNum(t.src_);
    abortStr(": ");
  }
  abortStr(message !== null ? message : "abort");
  // The SDK's own checks (a field read by a name the stream lacks, a
  // field of the wrong kind) say what is wrong; their place in the SDK
  // would not help.
  if (fileName !== null && !fileName.startsWith("~lib/ardea-sdk/")) {
    abortStr(" at ");
    abortStr(fileName);
    abortByte(58);
    abortNum(line);
    abortByte(58);
    abortNum(column);
  }
  hostError(abortBuf, abortLen);
  unreachable();
}

/** The module's `trace` (asc --use trace=...): a debug log line. */
export function ardeaTrace(message: string, n: i32 = 0, a0: f64 = 0, a1: f64 = 0, a2: f64 = 0, a3: f64 = 0, a4: f64 = 0): void {
  let s = message;
  if (n > 0) s += " " + a0.toString();
  if (n > 1) s += ", " + a1.toString();
  if (n > 2) s += ", " + a2.toString();
  if (n > 3) s += ", " + a3.toString();
  if (n > 4) s += ", " + a4.toString();
  let l = scratchUTF8(s);
  hostLog(-4, scratch.ptr, l);
}

/** The module's `seed` for Math.random (asc --use seed=...): the host clock. */
export function ardeaSeed(): f64 {
  return <f64>hostNow();
}
