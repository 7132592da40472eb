// The task's context (decoded from the open/prepare blob), logging and
// custom metrics.

import { hostLog, hostMetric, hostGauge, hostObserve, hostNow } from "./host";
import { scratch, scratchUTF8, decodeUTF8 } from "./raw";
import { Call, setCallError } from "./call";
import { State } from "./state";

/** Log levels, as Go's log/slog. */
export enum Level {
  Debug = -4,
  Info = 0,
  Warn = 4,
  Error = 8,
}

/** Sends log lines to the host (tagged there with topology, component and task). */
export class Logger {
  log(level: i32, msg: string): void {
    let n = scratchUTF8(msg);
    hostLog(level, scratch.ptr, n);
  }
  debug(msg: string): void { this.log(Level.Debug, msg); }
  info(msg: string): void { this.log(Level.Info, msg); }
  warn(msg: string): void { this.log(Level.Warn, msg); }
  error(msg: string): void { this.log(Level.Error, msg); }
}

/** The module's logger (also Context.logger). */
export const logger = new Logger();

/** A declared output stream; its index in Context.outputs is its stream index. */
export class Stream {
  constructor(public name: string, public fields: string[]) {}
}

/** One (component, stream) pair a bolt subscribes to, with the stream's fields. */
export class Input {
  // The last field name looked up and its index: a hot path that names a
  // field with a constant string finds it by pointer, without comparing.
  // Holding the string keeps its address from being reused.
  lastName: string | null = null;
  lastIdx: i32 = -1;

  constructor(public component: string, public stream: string, public fields: string[]) {}

  /** The position of a declared field, or -1. */
  index(field: string): i32 {
    if (changetype<usize>(field) == changetype<usize>(this.lastName)) return this.lastIdx;
    let f = this.fields;
    for (let i = 0; i < f.length; i++) {
      if (unchecked(f[i]) == field) {
        this.lastName = field;
        this.lastIdx = i;
        return i;
      }
    }
    return -1;
  }
}

/** Custom metric deltas of the current call, sent once when it returns. */
class Metrics {
  static names: string[] = [];
  static deltas: i64[] = [];
}

function addMetric(name: string, delta: i64): void {
  let names = Metrics.names;
  let p = changetype<usize>(name);
  for (let i = 0; i < names.length; i++) {
    let n = unchecked(names[i]);
    if (changetype<usize>(n) == p || n == name) {
      unchecked(Metrics.deltas[i] += delta);
      return;
    }
  }
  names.push(name);
  Metrics.deltas.push(delta);
}

/** Sends the call's metric deltas to the host. */
export function flushMetrics(): void {
  let names = Metrics.names;
  for (let i = 0; i < names.length; i++) {
    let d = unchecked(Metrics.deltas[i]);
    if (d != 0) {
      let n = scratchUTF8(unchecked(names[i]));
      hostMetric(scratch.ptr, n, d);
    }
  }
  names.length = 0;
  Metrics.deltas.length = 0;
}

/**
 * Context describes the task: its topology, component, position, config
 * and declared streams, and gives access to logging, metrics, state and
 * the clock. It is valid from open/prepare on; keep the reference.
 */
export class Context {
  topology: string = "";
  component: string = "";
  /** This task's global id (the source task downstream sees). */
  taskId: u32 = 0;
  /** This task's index among the component's tasks, from 0. */
  taskIndex: i32 = 0;
  /** The component's number of tasks. */
  parallelism: i32 = 0;
  /** The declared output streams; index i is stream index i. */
  outputs: Stream[] = [];
  /** The subscribed (component, stream) pairs; index i is input index i. */
  inputs: Input[] = [];
  /** The task's logger. */
  logger: Logger = logger;
  /** The task's host-side key/value state. */
  state: State = State.instance;

  configKeys_: string[] = [];
  configValues_: string[] = [];
  streamIdx_: Map<string, i32> = new Map();

  /** A configuration value, or null if it is not set. */
  config(key: string): string | null {
    let i = this.configIndex(key);
    return i < 0 ? null : unchecked(this.configValues_[i]);
  }

  /** A configuration value, or def if it is not set. */
  /** Switches the bolt to manual acking; call it in prepare. By default
   * (automatic mode) plain emits during execute (emit, emitTo, emitDirect)
   * are anchored on the tuple being executed, and each tuple is acked when
   * execute returns without an error unless the bolt acked or failed it
   * itself; the tuple being executed is acked or failed at most once per
   * call. Bolts that keep tuples across calls (joins, windows) use manual
   * mode and anchor, ack and fail themselves. */
  manualAck(): void {
    Call.manualAck = true;
  }

  configOr(key: string, def: string): string {
    let i = this.configIndex(key);
    return i < 0 ? def : unchecked(this.configValues_[i]);
  }

  /**
   * An integer configuration value (decimal, surrounding white space
   * allowed), or def if it is not set. A value that is not an int64 fails
   * the current call (see failCall) and returns def.
   */
  configInt(key: string, def: i64): i64 {
    let i = this.configIndex(key);
    if (i < 0) return def;
    let v = unchecked(this.configValues_[i]);
    let ok = parseInt64(v.trim());
    if (!ok) {
      setCallError("config " + key + " of component " + this.component + ": invalid integer \"" + v + "\"");
      return def;
    }
    return parsedInt;
  }

  /** The configuration keys in ascending order (the blob's order). */
  configKeys(): string[] {
    return this.configKeys_.slice();
  }

  /** Adds delta to the component's custom counter name (summed per call). */
  metric(name: string, delta: i64 = 1): void {
    addMetric(name, delta);
  }

  /**
   * Sets the task's user gauge name to value (the last value set in a
   * metrics interval is exported). Sent to the host at once.
   */
  gauge(name: string, value: f64): void {
    let n = scratchUTF8(name);
    hostGauge(scratch.ptr, n, value);
  }

  /**
   * Records value in the task's user histogram name (exported as the
   * interval's mean and <name>.count; nanoseconds for durations). Sent to
   * the host at once.
   */
  observe(name: string, value: i64): void {
    let n = scratchUTF8(name);
    hostObserve(scratch.ptr, n, value);
  }

  /** The host's wall clock, Unix nanoseconds. */
  now(): i64 {
    return hostNow();
  }

  /** The stream index of a declared output stream, or -1. */
  streamIndex(stream: string): i32 {
    let m = this.streamIdx_;
    return m.has(stream) ? m.get(stream) : -1;
  }

  private configIndex(key: string): i32 {
    // Config pairs are sorted by key: binary search.
    let keys = this.configKeys_;
    let lo = 0, hi = keys.length;
    while (lo < hi) {
      let mid = (lo + hi) >>> 1;
      let c = compareUTF8(unchecked(keys[mid]), key);
      if (c == 0) return mid;
      if (c < 0) lo = mid + 1; else hi = mid;
    }
    // Not found by order (the host sorts by bytes; be lenient): scan.
    for (let i = 0; i < keys.length; i++) if (unchecked(keys[i]) == key) return i;
    return -1;
  }
}

// compareUTF8 orders strings by their UTF-8 bytes (= by code point), as
// the host sorts config keys.
function compareUTF8(a: string, b: string): i32 {
  let n = min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = <i32>a.charCodeAt(i), y = <i32>b.charCodeAt(i);
    if (x == y) continue;
    // Surrogates (>= 0xD800 < 0xE000) encode code points above 0xFFFF.
    let sx = x >= 0xD800 && x < 0xE000, sy = y >= 0xD800 && y < 0xE000;
    if (sx != sy) return sx ? 1 : -1;
    return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

let parsedInt: i64 = 0;

/** Parses a decimal int64 (optional sign) into parsedInt; false if invalid. */
export function parseInt64(s: string): bool {
  let n = s.length;
  if (n == 0) return false;
  let i = 0;
  let neg = false;
  let c = s.charCodeAt(0);
  if (c == 45 || c == 43) { // - +
    neg = c == 45;
    i = 1;
    if (n == 1) return false;
  }
  let v: u64 = 0;
  let limit: u64 = neg ? 9223372036854775808 : 9223372036854775807;
  for (; i < n; i++) {
    let d = s.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return false;
    if (v > (limit - <u64>d) / 10) return false;
    v = v * 10 + <u64>d;
  }
  parsedInt = neg ? -(<i64>v) : <i64>v;
  return true;
}

/** The int64 from the last successful parseInt64. */
export function lastParsedInt(): i64 {
  return parsedInt;
}

// A reader over the context blob; any overrun sets bad.
class Reader {
  bad: bool = false;
  constructor(public p: usize, public end: usize) {}

  left(): usize { return this.end - this.p; }

  u16(): i32 {
    if (this.left() < 2) { this.bad = true; return 0; }
    let v = <i32>load<u16>(this.p);
    this.p += 2;
    return v;
  }

  u32(): u32 {
    if (this.left() < 4) { this.bad = true; return 0; }
    let v = load<u32>(this.p);
    this.p += 4;
    return v;
  }

  str(): string {
    let n = this.u32();
    if (this.bad) return "";
    if (<usize>n > this.left()) { this.bad = true; return ""; }
    let s = decodeUTF8(this.p, <i32>n);
    this.p += <usize>n;
    return s;
  }

  // count reads a count of items of at least min bytes each; a count the
  // rest of the blob cannot hold is malformed (and not allocated).
  count(c: u32, min: usize): i32 {
    if (this.bad) return 0;
    if (<u64>c * <u64>min > <u64>this.left()) { this.bad = true; return 0; }
    return <i32>c;
  }
}

/** Why the last decodeContext failed. */
export let contextError: string = "";

/** Decodes a context blob of n bytes at p; null if malformed (see contextError). */
export function decodeContext(p: usize, n: i32): Context | null {
  let r = new Reader(p, p + <usize>n);
  let c = new Context();
  c.topology = r.str();
  c.component = r.str();
  c.taskId = r.u32();
  c.taskIndex = <i32>r.u32();
  c.parallelism = <i32>r.u32();
  let nc = r.count(r.u32(), 8);
  for (let i = 0; i < nc && !r.bad; i++) {
    c.configKeys_.push(r.str());
    c.configValues_.push(r.str());
  }
  let no = r.count(r.u16(), 6);
  for (let i = 0; i < no && !r.bad; i++) {
    let name = r.str();
    let nf = r.count(r.u16(), 4);
    let fields = new Array<string>(0);
    for (let j = 0; j < nf && !r.bad; j++) fields.push(r.str());
    if (r.bad) break;
    if (c.streamIdx_.has(name)) {
      contextError = "context: output stream \"" + name + "\" declared twice";
      return null;
    }
    c.streamIdx_.set(name, i);
    c.outputs.push(new Stream(name, fields));
  }
  let ni = r.count(r.u16(), 10);
  for (let i = 0; i < ni && !r.bad; i++) {
    let comp = r.str();
    let stream = r.str();
    let nf = r.count(r.u16(), 4);
    let fields = new Array<string>(0);
    for (let j = 0; j < nf && !r.bad; j++) fields.push(r.str());
    c.inputs.push(new Input(comp, stream, fields));
  }
  if (r.bad) {
    contextError = "context: truncated or malformed blob (" + n.toString() + " bytes)";
    return null;
  }
  if (r.p != r.end) {
    contextError = "context: " + (r.end - r.p).toString() + " trailing bytes";
    return null;
  }
  return c;
}
