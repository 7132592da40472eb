// Helpers of the vector test guests (bolt.ts, spout.ts): reading and
// writing the values specs of wasm-sdk/testdata/README.md through the
// SDK's public API. The runner (run.mjs) rewrites floats as their bits
// (f:<16 hex digits>) so that both sides compare exact doubles.
import { Emit, Kind, Tuple } from "ardea-sdk";

const HEX = "0123456789abcdef";

export function hex(p: usize, n: i32): string {
  let parts = new Array<string>(n);
  for (let i = 0; i < n; i++) {
    let b = load<u8>(p + <usize>i);
    parts[i] = HEX.charAt(b >> 4) + HEX.charAt(b & 15);
  }
  return parts.join("");
}

export function hexBytes(a: Uint8Array): string {
  return hex(a.dataStart, a.length);
}

export function unhex(s: string): Uint8Array {
  let a = new Uint8Array(s.length >> 1);
  for (let i = 0; i < a.length; i++) a[i] = <u8>((nib(s.charCodeAt(2 * i)) << 4) | nib(s.charCodeAt(2 * i + 1)));
  return a;
}

function nib(c: i32): i32 {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  throw new Error("bad hex digit " + c.toString());
}

export function parseU64(s: string): u64 {
  let v: u64 = 0;
  for (let i = 0; i < s.length; i++) v = v * 10 + <u64>(s.charCodeAt(i) - 48);
  return v;
}

export function parseI64(s: string): i64 {
  if (s.charAt(0) == "-") return -(<i64>parseU64(s.substring(1)));
  return <i64>parseU64(s);
}

function u64hex(v: u64): string {
  let s = "";
  for (let i = 15; i >= 0; i--) s += HEX.charAt(<i32>((v >> (<u64>i * 4)) & 15));
  return s;
}

/** The spec of a tuple, read with the typed accessors. */
export function describe(t: Tuple): string {
  if (t.length == 0) return "-";
  let parts = new Array<string>(t.length);
  for (let i = 0; i < t.length; i++) {
    let k = t.kind(i);
    let s: string;
    if (k == Kind.Null) s = "n:";
    else if (k == Kind.String) s = "s:" + hexBytes(Uint8Array.wrap(String.UTF8.encode(t.string(i))));
    else if (k == Kind.Bytes) s = "x:" + hexBytes(t.bytes(i));
    else if (k == Kind.Int) s = "i:" + t.int(i).toString();
    else if (k == Kind.Float) s = "f:" + u64hex(reinterpret<u64>(t.float(i)));
    else s = "b:" + (t.bool(i) ? "1" : "0");
    parts[i] = s;
  }
  return parts.join(" ");
}

/** Adds the values of a spec to an emit. */
export function addSpec(e: Emit, spec: string): void {
  if (spec == "-") return;
  let toks = spec.split(" ");
  for (let i = 0; i < toks.length; i++) {
    let tok = toks[i];
    let v = tok.substring(2);
    let c = tok.charAt(0);
    if (c == "n") e.null();
    else if (c == "s") e.string(String.UTF8.decode(unhex(v).buffer));
    else if (c == "x") e.bytes(unhex(v));
    else if (c == "i") e.int(parseI64(v));
    else if (c == "f") e.float(reinterpret<f64>(parseHex64(v)));
    else if (c == "b") e.bool(v == "1");
    else throw new Error("bad spec token " + tok);
  }
}

/** Re-emits a tuple's values through the typed API. */
export function addTuple(e: Emit, t: Tuple): void {
  for (let i = 0; i < t.length; i++) {
    let k = t.kind(i);
    if (k == Kind.Null) e.null();
    else if (k == Kind.String) e.string(t.string(i));
    else if (k == Kind.Bytes) e.bytes(t.bytes(i));
    else if (k == Kind.Int) e.int(t.int(i));
    else if (k == Kind.Float) e.float(t.float(i));
    else e.bool(t.bool(i));
  }
}

function parseHex64(s: string): u64 {
  let v: u64 = 0;
  for (let i = 0; i < s.length; i++) v = (v << 4) | <u64>nib(s.charCodeAt(i));
  return v;
}

/** The stream name the runner declares for stream index i. */
export function streamName(i: i32): string {
  return i == 0 ? "default" : "s" + i.toString();
}
