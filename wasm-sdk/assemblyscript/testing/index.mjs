// ardea-sdk/testing: the AssemblyScript SDK's test harness. It compiles a
// component exactly as `ardea build` does and runs it under plain node
// with a fake host (the `ardea` imports in JavaScript): no Ardea host, no
// wasm runtime besides node's. A test constructs a bolt or spout with its
// config, feeds it tuples, and reads what each call did: emits per stream
// with their anchors, acks and fails, tuples that failed (throw, abort or
// failCall: the host's rule of wasm-sdk/ABI.md), logs, user metrics and the
// state before and after.
//
//   import { test } from "node:test";
//   import assert from "node:assert/strict";
//   import { compile, bolt } from "ardea-sdk/testing";
//
//   const mod = await compile();            // assembly/index.ts of the project
//   test("upper-cases", () => {
//     const b = bolt(mod);                  // outputs and inputs from the manifest
//     const r = b.execute([{ line: "hello" }]);
//     assert.deepEqual(r.values("default"), [["HELLO"]]);
//     assert.deepEqual(r.acked, [1n]);
//   });
//
// Values: a JS string is a string field, a bigint an int64, a number a
// float64, a boolean a bool, a Uint8Array bytes, null null; int(), float()
// and bytes() say it explicitly. Emitted values come back the same way
// (int64 as bigint).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

/** The SDK package's folder (the parent of testing/). */
export const sdkDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The asc options every Ardea module is built with (besides the entry, --path and -o), as `ardea build` uses them. */
export const ascFlags = JSON.parse(fs.readFileSync(path.join(sdkDir, "asc-flags.json"), "utf8"));

const dec = new TextDecoder();
const enc = new TextEncoder();
const hex = (b) => Buffer.from(b).toString("hex");

// ---- compiling ----

const compiled = new Map();

/**
 * Compiles an AssemblyScript component (default: assembly/index.ts of the
 * current folder, the project) with the same flags as `ardea build` and
 * this SDK, and returns the WebAssembly.Module. The compiler is the
 * project's `assemblyscript` package (a devDependency). Compiles each entry
 * once per process. Errors carry asc's diagnostics.
 */
export async function compile(entry = "assembly/index.ts", { dir = process.cwd(), flags = [] } = {}) {
  dir = path.resolve(dir);
  const key = JSON.stringify([dir, entry, flags]);
  if (!compiled.has(key)) compiled.set(key, compileOnce(dir, entry, flags));
  return compiled.get(key);
}

async function loadASC(from) {
  const tried = [];
  for (const base of [path.join(from, "package.json"), path.join(sdkDir, "package.json")]) {
    try {
      const pkg = createRequire(base).resolve("assemblyscript/package.json");
      return (await import(pathToFileURL(path.join(path.dirname(pkg), "dist", "asc.js")).href)).default;
    } catch (e) {
      tried.push(`${path.dirname(base)}: ${e.code || e.message}`);
    }
  }
  throw new Error(`the AssemblyScript compiler is not installed (tried ${tried.join("; ")}): ` +
    `run \`npm install --save-dev assemblyscript@0.28.20\` in the project`);
}

async function compileOnce(dir, entry, extra) {
  const asc = await loadASC(dir);
  // "ardea-sdk" resolves to this SDK, as `ardea build` resolves it to the
  // one embedded in ardea.
  const lib = fs.mkdtempSync(path.join(os.tmpdir(), "ardea-as-test-"));
  try {
    fs.symlinkSync(sdkDir, path.join(lib, "ardea-sdk"), "dir");
    const config = path.join(lib, "asconfig.json");
    fs.writeFileSync(config, "{}\n");
    let wasm = null;
    const out = asc.createMemoryStream();
    const { error } = await asc.main([
      entry, ...ascFlags, ...extra, "--config", config, "--path", lib, "--noColors", "--baseDir", dir, "-o", "out.wasm",
    ], {
      stdout: out,
      stderr: out,
      writeFile: (name, contents) => { if (name.endsWith(".wasm")) wasm = contents; },
    });
    if (error) throw new Error(`asc ${entry} (in ${dir}): ${error.message}\n${out.toString()}`);
    return new WebAssembly.Module(wasm);
  } finally {
    fs.rmSync(lib, { recursive: true, force: true });
  }
}

/** Reads a compiled module (for example the output of `ardea build`). */
export function load(file) {
  return new WebAssembly.Module(fs.readFileSync(file));
}

// ---- values ----

class Typed {
  constructor(kind, value) { this.kind = kind; this.value = value; }
}
/** An int64 field (from a number or bigint). */
export const int = (v) => new Typed(3, BigInt(v));
/** A float64 field. */
export const float = (v) => new Typed(4, Number(v));
/** A bytes field (from a Uint8Array, an array of numbers or a string's UTF-8). */
export const bytes = (v) => new Typed(1, typeof v === "string" ? enc.encode(v) : Uint8Array.from(v));

function u16(v) { const b = Buffer.alloc(2); b.writeUInt16LE(v); return b; }
function u32(v) { const b = Buffer.alloc(4); b.writeUInt32LE(v >>> 0); return b; }
function u64(v) { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); return b; }
function str(s) { const b = Buffer.from(enc.encode(s)); return Buffer.concat([u32(b.length), b]); }

/** Encodes values (ABI "values"). */
export function encodeValues(vals) {
  const parts = [u16(vals.length)];
  for (let v of vals) {
    if (v instanceof Typed) {
      if (v.kind === 3) { const b = Buffer.alloc(8); b.writeBigInt64LE(BigInt.asIntN(64, v.value)); parts.push(Buffer.from([3]), b); continue; }
      if (v.kind === 4) { const b = Buffer.alloc(8); b.writeDoubleLE(v.value); parts.push(Buffer.from([4]), b); continue; }
      parts.push(Buffer.from([1]), u32(v.value.length), Buffer.from(v.value));
      continue;
    }
    if (v === null || v === undefined) parts.push(Buffer.from([0]));
    else if (typeof v === "string") { const b = Buffer.from(enc.encode(v)); parts.push(Buffer.from([2]), u32(b.length), b); }
    else if (typeof v === "bigint") { const b = Buffer.alloc(8); b.writeBigInt64LE(BigInt.asIntN(64, v)); parts.push(Buffer.from([3]), b); }
    else if (typeof v === "number") { const b = Buffer.alloc(8); b.writeDoubleLE(v); parts.push(Buffer.from([4]), b); }
    else if (typeof v === "boolean") parts.push(Buffer.from([5, v ? 1 : 0]));
    else if (v instanceof Uint8Array) parts.push(Buffer.from([1]), u32(v.length), Buffer.from(v));
    else throw new Error(`value ${String(v)} (${typeof v}): use a string, bigint, number, boolean, Uint8Array, null, int(), float() or bytes()`);
  }
  return Buffer.concat(parts);
}

/** Decodes values at b[o...]; returns [values, next offset]. */
export function decodeValues(b, o = 0) {
  const n = b.readUInt16LE(o);
  o += 2;
  const out = [];
  for (let i = 0; i < n; i++) {
    const tag = b[o++];
    switch (tag) {
      case 0: out.push(null); break;
      case 1: { const l = b.readUInt32LE(o); out.push(Uint8Array.from(b.subarray(o + 4, o + 4 + l))); o += 4 + l; break; }
      case 2: { const l = b.readUInt32LE(o); out.push(dec.decode(b.subarray(o + 4, o + 4 + l))); o += 4 + l; break; }
      case 3: out.push(b.readBigInt64LE(o)); o += 8; break;
      case 4: out.push(b.readDoubleLE(o)); o += 8; break;
      case 5: out.push(b[o] === 1); o += 1; break;
      default: throw new Error(`bad value tag ${tag}`);
    }
  }
  return [out, o];
}

/** Encodes a task context (the open/prepare blob). */
export function encodeContext({ topology = "test", component = "component", taskId = 1, taskIndex = 0, parallelism = 1,
  config = {}, outputs = [], inputs = [] }) {
  const parts = [str(topology), str(component), u32(taskId), u32(taskIndex), u32(parallelism)];
  const keys = Object.keys(config).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  parts.push(u32(keys.length));
  for (const k of keys) parts.push(str(k), str(String(config[k])));
  parts.push(u16(outputs.length));
  for (const o of outputs) parts.push(str(o.stream), u16(o.fields.length), ...o.fields.map(str));
  parts.push(u16(inputs.length));
  for (const i of inputs) parts.push(str(i.component), str(i.stream), u16(i.fields.length), ...i.fields.map(str));
  return Buffer.concat(parts);
}

/** Encodes an input batch of records {input, source, id, values (encoded)}. */
export function encodeBatch(records) {
  const parts = [u32(records.length)];
  for (const r of records) {
    parts.push(u32(14 + r.values.length), u16(r.input), u32(r.source), u64(r.id), Buffer.from(r.values));
  }
  return Buffer.concat(parts);
}

/** Decodes emit ops: [{op: "emit", stream, direct, msgId, anchors, values} | {op: "ack"|"fail", id}]. */
export function decodeOps(b) {
  b = Buffer.from(b);
  const ops = [];
  for (let o = 0; o < b.length;) {
    const code = b[o++];
    if (code === 2 || code === 3) {
      ops.push({ op: code === 2 ? "ack" : "fail", id: b.readBigUInt64LE(o) });
      o += 8;
      continue;
    }
    if (code !== 1) throw new Error(`emit: unknown op ${code} at byte ${o - 1}`);
    const stream = b.readUInt16LE(o);
    const direct = b.readUInt32LE(o + 2);
    const msgId = b.readBigUInt64LE(o + 6);
    const na = b.readUInt16LE(o + 14);
    o += 16;
    const anchors = [];
    for (let i = 0; i < na; i++, o += 8) anchors.push(b.readBigUInt64LE(o));
    const [values, next] = decodeValues(b, o);
    o = next;
    ops.push({ op: "emit", stream, direct: direct === 0xFFFFFFFF ? null : direct, msgId, anchors, values });
  }
  return ops;
}

// ---- state ----

/** Host-side state: keys and values are bytes; strings are taken as UTF-8. */
export class State {
  constructor(entries) { this.m = new Map(entries); }
  static key(k) { return hex(typeof k === "string" ? enc.encode(k) : k); }
  /** The value under key, or undefined. */
  get(k) { return this.m.get(State.key(k)); }
  has(k) { return this.m.has(State.key(k)); }
  /** The value as UTF-8 text, or undefined. */
  string(k) { const v = this.get(k); return v === undefined ? undefined : dec.decode(v); }
  /** The value as an int64 (8 bytes little-endian, as State.putInt stores it), or undefined. */
  int(k) { const v = this.get(k); return v === undefined ? undefined : Buffer.from(v).readBigInt64LE(); }
  /** Sets a value (a Uint8Array, a string as UTF-8, or a bigint as int64). */
  set(k, v) {
    if (typeof v === "string") v = enc.encode(v);
    else if (typeof v === "bigint") { const b = Buffer.alloc(8); b.writeBigInt64LE(v); v = Uint8Array.from(b); }
    this.m.set(State.key(k), Uint8Array.from(v));
  }
  delete(k) { this.m.delete(State.key(k)); }
  get size() { return this.m.size; }
  /** The keys as UTF-8 text, ascending by bytes. */
  keys() { return [...this.m.keys()].sort().map((k) => dec.decode(Buffer.from(k, "hex"))); }
  /** {key: value as UTF-8 text}: for deepEqual. */
  toStrings() { return Object.fromEntries(this.keys().map((k) => [k, this.string(k)])); }
  /** {key: value as int64}: for deepEqual. */
  toInts() { return Object.fromEntries(this.keys().map((k) => [k, this.int(k)])); }
  clone() { return new State([...this.m].map(([k, v]) => [k, Uint8Array.from(v)])); }
}

// ---- the fake host: one instance of a module ----

/**
 * Guest is one instance of a module with the fake host: the ABI's calls,
 * unchecked. BoltTester and SpoutTester are built on it; use it directly
 * to test the ABI itself. Each call's output is in the fields below
 * (reset by the next call); state and metrics accumulate.
 */
export class Guest {
  constructor(module, { state = new State(), now = () => 1700000000000000000n } = {}) {
    for (const imp of WebAssembly.Module.imports(module)) {
      if (imp.module !== "ardea" && imp.module !== "wasi_snapshot_preview1") {
        throw new Error(`the module imports ${imp.module}.${imp.name}: the Ardea host provides only the ardea and wasi_snapshot_preview1 modules`);
      }
    }
    this.state = state;
    this.counters = new Map();
    this.gauges = new Map();
    this.observed = new Map();
    this.reset();
    const mem = () => new Uint8Array(this.x.memory.buffer);
    const bytesAt = (p, n) => mem().slice(p, p + n);
    const text = (p, n) => dec.decode(bytesAt(p, n));
    const observe = (name, v) => {
      if (!this.observed.has(name)) this.observed.set(name, []);
      this.observed.get(name).push(v < 0n ? 0n : v);
      this.callMetrics.histograms[name] = [...(this.callMetrics.histograms[name] || []), v < 0n ? 0n : v];
    };
    const ardea = {
      emit: (p, n) => { this.emits.push(bytesAt(p, n)); },
      log: (level, p, n) => { this.logs.push({ level, text: text(p, n) }); },
      error: (p, n) => { this.errors.push(text(p, n)); },
      state_get: (kp, kn, vp, vcap) => {
        this.gets++;
        const v = this.state.m.get(hex(bytesAt(kp, kn)));
        if (v === undefined) return -1;
        if (v.length <= vcap) mem().set(v, vp);
        return v.length;
      },
      state_put: (kp, kn, vp, vn) => { this.writes++; this.state.m.set(hex(bytesAt(kp, kn)), bytesAt(vp, vn)); },
      state_delete: (kp, kn) => { this.writes++; this.state.m.delete(hex(bytesAt(kp, kn))); },
      state_write: (p, n) => {
        this.writes++;
        const b = Buffer.from(bytesAt(p, n));
        for (let o = 0; o < b.length;) {
          const op = b[o];
          const kl = b.readUInt32LE(o + 1);
          const k = b.subarray(o + 5, o + 5 + kl).toString("hex");
          const vl = b.readUInt32LE(o + 5 + kl);
          const v = Uint8Array.from(b.subarray(o + 9 + kl, o + 9 + kl + vl));
          o += 9 + kl + vl;
          if (op === 1) this.state.m.set(k, v);
          else if (op === 2) this.state.m.delete(k);
          else throw new Error(`state_write: unknown op ${op}`);
        }
      },
      state_scan: (pp, pn, bp, bcap) => {
        const prefix = hex(bytesAt(pp, pn));
        const keys = [...this.state.m.keys()].filter((k) => k.startsWith(prefix)).sort();
        const parts = [u32(keys.length)];
        for (const k of keys) {
          const kb = Buffer.from(k, "hex");
          const v = Buffer.from(this.state.m.get(k));
          parts.push(u32(kb.length), kb, u32(v.length), v);
        }
        const out = Buffer.concat(parts);
        if (out.length <= bcap) mem().set(out, bp);
        return out.length;
      },
      metric: (np, nn, delta) => {
        const name = text(np, nn);
        this.counters.set(name, (this.counters.get(name) || 0n) + delta);
        this.callMetrics.counters[name] = (this.callMetrics.counters[name] || 0n) + delta;
      },
      gauge: (np, nn, v) => {
        const name = text(np, nn);
        this.gauges.set(name, v);
        this.callMetrics.gauges[name] = v;
      },
      observe: (np, nn, v) => observe(text(np, nn), v),
      observe_many: (np, nn, vp, count) => {
        const name = text(np, nn);
        const b = Buffer.from(bytesAt(vp, count * 8));
        for (let i = 0; i < count; i++) observe(name, b.readBigInt64LE(i * 8));
      },
      now: () => BigInt(now()),
    };
    const wasi = new Proxy({}, {
      get: (_, name) => () => { throw new Error(`the module called WASI ${String(name)}, which the test harness does not provide`); },
    });
    this.module = module;
    this.inst = new WebAssembly.Instance(module, { ardea, wasi_snapshot_preview1: wasi });
    this.x = this.inst.exports;
    this.bufPtr = 0;
    this.bufCap = 0;
    this.dead = false;
    if (this.x._initialize) this.x._initialize();
  }

  reset() {
    this.emits = [];
    this.logs = [];
    this.errors = [];
    this.gets = 0;
    this.writes = 0;
    this.callMetrics = { counters: {}, gauges: {}, histograms: {} };
  }

  // input copies bytes into the guest's buffer, asking for a new one only
  // when it needs more room (as the host does).
  input(b) {
    if (this.bufPtr === 0 || b.length > this.bufCap) {
      this.bufPtr = this.x.ardea_buffer(b.length);
      this.bufCap = b.length;
    }
    new Uint8Array(this.x.memory.buffer).set(b, this.bufPtr);
    return b.length;
  }

  /** Runs one export; rc is null after a trap (trapped is set, and trap holds the error). */
  call(name, ...args) {
    this.reset();
    if (typeof this.x[name] !== "function") throw new Error(`the module does not export ${name}`);
    try {
      this.rc = this.x[name](...args);
      this.trapped = false;
      this.trap = null;
    } catch (e) {
      if (!(e instanceof WebAssembly.RuntimeError)) throw e;
      this.rc = null;
      this.trapped = true;
      this.trap = e;
      this.dead = true;
    }
    return this.rc;
  }

  /** Writes b into the guest's buffer and calls name(len). */
  withInput(name, b) {
    return this.call(name, this.input(b));
  }

  /** The u32 at ardea_cursor(): the batch record execute was processing; null without the export. */
  cursor() {
    if (typeof this.x.ardea_cursor !== "function") return null;
    return new DataView(this.x.memory.buffer).getUint32(this.x.ardea_cursor(), true);
  }

  /** The module's manifest (ardea_manifest) parsed, or null without the export. */
  manifest() {
    if (typeof this.x.ardea_manifest !== "function") return null;
    const p = this.x.ardea_manifest();
    const b = Buffer.from(this.x.memory.buffer);
    const n = b.readUInt32LE(p);
    return JSON.parse(dec.decode(b.subarray(p + 4, p + 4 + n)));
  }

  /** The bytes the last call emitted, concatenated. */
  emitted() {
    return Buffer.concat(this.emits.map((e) => Buffer.from(e)));
  }
}

// ---- the testers ----

/** An error of a call the host would fail the instance for (not one tuple). */
export class CallError extends Error {
  constructor(message, result) {
    super(message);
    this.name = "CallError";
    this.result = result;
  }
}

/**
 * Result is what one call did. emits: {stream: [{values, anchors, direct,
 * msgId}]}; acked and failed: tuple ids (failed includes tuples whose
 * execute threw, aborted or called failCall: the host fails those, see
 * tupleErrors); logs: [{level, text}]; metrics of this call {counters,
 * gauges, histograms}; stateBefore and stateAfter (State).
 */
export class Result {
  constructor() {
    this.emits = {};
    this.acked = [];
    this.failed = [];
    this.tupleErrors = [];
    this.logs = [];
    this.errors = [];
    this.metrics = { counters: {}, gauges: {}, histograms: {} };
    this.status = null;
    this.ids = [];
    this.order = [];
  }
  /** The values emitted on a stream (default "default"), in order. */
  values(stream = "default") { return (this.emits[stream] || []).map((e) => e.values); }
  /** Every emit, of every stream, with its stream name, in order. */
  get all() { return this.order; }
  /** The log lines' texts (at or above a level: -4 debug, 0 info, 4 warn, 8 error). */
  logTexts(minLevel = -100) { return this.logs.filter((l) => l.level >= minLevel).map((l) => l.text); }
}

const STATUS = ["more", "idle", "done"];

function sameFields(a, b) { return a.length === b.length && a.every((f, i) => f === b[i]); }

class Tester {
  constructor(module, kind, opts) {
    if (typeof module === "string") module = load(module);
    this.module = module;
    this.kind = kind;
    this.opts = opts;
    this.state = opts.state instanceof State ? opts.state : new State();
    if (opts.state && !(opts.state instanceof State)) for (const [k, v] of Object.entries(opts.state)) this.state.set(k, v);
    this.nowFn = () => this.now;
    this.now = opts.now ?? 1700000000000000000n;
    this.guest = new Guest(module, { state: this.state, now: this.nowFn });
    /** The component's manifest (null when the module has none). */
    this.manifest = this.guest.manifest();
    if (this.manifest && this.manifest.kind && this.manifest.kind !== kind) {
      throw new Error(`the module registers a ${this.manifest.kind}, not a ${kind}`);
    }
    const m = this.manifest || {};
    // Outputs: given or declared; both must agree (as ardea run checks).
    const given = opts.outputs ? normOutputs(opts.outputs) : null;
    const declared = m.outputs ? normOutputs(m.outputs) : null;
    if (given && declared && (given.length !== declared.length ||
      given.some((o, i) => o.stream !== declared[i].stream || !sameFields(o.fields, declared[i].fields)))) {
      throw new Error(`outputs ${fmtOutputs(given)} differ from the ones the component declares: ${fmtOutputs(declared)}`);
    }
    this.outputs = given || declared || [];
    // Config: with config keys declared, a key the component does not read is an error (a typo).
    this.config = { ...(opts.config || {}) };
    if (m.config && opts.strict !== false) {
      for (const k of Object.keys(this.config)) {
        if (!m.config.includes(k)) {
          throw new Error(`config key "${k}" is not one the component declares (${m.config.join(", ") || "none"}); pass strict: false to allow it`);
        }
      }
    }
    this.ctx = {
      topology: opts.topology ?? "test", component: opts.component ?? kind, taskId: opts.taskId ?? 1,
      taskIndex: opts.taskIndex ?? 0, parallelism: opts.parallelism ?? 1, config: this.config, outputs: this.outputs, inputs: [],
    };
    this.started = false;
  }

  // run makes one call on the guest and turns its output into a Result.
  run(name, arg, input) {
    const r = new Result();
    r.stateBefore = this.state.clone();
    const g = this.guest;
    if (input !== undefined) g.withInput(name, input); else if (arg !== undefined) g.call(name, arg); else g.call(name);
    this.collect(r, g);
    r.stateAfter = this.state.clone();
    return r;
  }

  collect(r, g) {
    r.logs.push(...g.logs);
    r.errors.push(...g.errors);
    for (const [k, v] of Object.entries(g.callMetrics.counters)) r.metrics.counters[k] = (r.metrics.counters[k] || 0n) + v;
    Object.assign(r.metrics.gauges, g.callMetrics.gauges);
    for (const [k, v] of Object.entries(g.callMetrics.histograms)) r.metrics.histograms[k] = [...(r.metrics.histograms[k] || []), ...v];
    r.rc = g.rc;
    r.trapped = g.trapped;
    if (g.trapped || g.rc < 0) return;
    this.addOps(r, g.emitted());
  }

  addOps(r, b) {
    for (const op of decodeOps(b)) {
      if (op.op === "ack") { r.acked.push(op.id); continue; }
      if (op.op === "fail") { r.failed.push(op.id); continue; }
      const out = this.outputs[op.stream];
      if (!out) {
        throw new CallError(`emit on stream index ${op.stream}, but the component has ${this.outputs.length} output streams ` +
          `(${fmtOutputs(this.outputs)})`, r);
      }
      if (op.values.length !== out.fields.length) {
        throw new CallError(`emit on stream "${out.stream}": ${op.values.length} values for the ${out.fields.length} fields [${out.fields.join(", ")}]`, r);
      }
      const e = { values: op.values, anchors: op.anchors, direct: op.direct };
      if (this.kind === "spout") e.msgId = op.msgId === 0n ? null : op.msgId;
      (r.emits[out.stream] ||= []).push(e);
      r.order.push({ stream: out.stream, ...e });
    }
  }

  // failed throws when a call that fails the instance failed.
  check(r, what) {
    if (r.trapped || r.rc < 0) {
      const msg = r.errors.length > 0 ? r.errors.join("; ") : r.trapped ? `trap: ${this.guest.trap.message}` : `returned ${r.rc}`;
      throw new CallError(`${what} failed (the host would fail the task instance): ${msg}`, r);
    }
    return r;
  }

  start() {
    if (this.started) return null;
    this.started = true;
    const name = this.kind === "bolt" ? "ardea_prepare" : "ardea_open";
    return this.check(this.run(name, undefined, encodeContext(this.ctx)), name.slice(6));
  }

  /** The task's user metrics so far: {counters: {name: bigint}, gauges: {name: number}, histograms: {name: [bigint]}}. */
  get metrics() {
    const g = this.guest;
    return {
      counters: Object.fromEntries(g.counters), gauges: Object.fromEntries(g.gauges),
      histograms: Object.fromEntries([...g.observed].map(([k, v]) => [k, [...v]])),
    };
  }

  /** close (the task is stopping). */
  close() {
    this.start();
    return this.check(this.run("ardea_close"), "close");
  }
}

function normOutputs(outs) {
  if (!Array.isArray(outs)) outs = Object.entries(outs).map(([stream, fields]) => ({ stream, fields }));
  return outs.map((o) => (Array.isArray(o) ? { stream: o[0], fields: [...o[1]] } : { stream: o.stream, fields: [...o.fields] }));
}

function fmtOutputs(outs) {
  return outs.map((o) => `${o.stream}: [${o.fields.join(", ")}]`).join(", ") || "none";
}

/**
 * BoltTester drives a bolt. Options: config {key: value}, inputs (each
 * {component, stream, fields}; default one input upstream/default with the
 * fields the bolt declares it reads), outputs ({stream: fields} or
 * [{stream, fields}]; default the declared ones), topology, component,
 * taskId, taskIndex, parallelism, state (a State or {key: value}), now
 * (bigint Unix ns, the clock; settable later as tester.now), tracked
 * (default true: tuples get ids 1, 2, ...; false: id 0, untracked),
 * strict (default true: config keys must be declared), quiet (default
 * false: a failing tuple's error is also printed to stderr).
 */
export class BoltTester extends Tester {
  constructor(module, opts = {}) {
    super(module, "bolt", opts);
    const reads = (this.manifest && this.manifest.inputs) || null;
    let inputs = opts.inputs;
    if (!inputs) {
      if (!reads) throw new Error("pass inputs: [{component, stream, fields}] (the bolt declares no input fields: registerBolt(...).reads([...]))");
      inputs = [{ component: "upstream", stream: "default", fields: reads }];
    }
    this.inputs = inputs.map((i) => (Array.isArray(i) ? { component: i[0], stream: i[1], fields: [...i[2]] } :
      { component: i.component ?? "upstream", stream: i.stream ?? "default", fields: [...i.fields] }));
    if (reads) {
      for (const i of this.inputs) {
        const missing = reads.filter((f) => !i.fields.includes(f));
        if (missing.length > 0) {
          throw new Error(`input ${i.component}/${i.stream} has fields [${i.fields.join(", ")}], but the bolt reads [${reads.join(", ")}]: ` +
            `missing ${missing.join(", ")}`);
        }
      }
    }
    this.ctx.inputs = this.inputs;
    this.tracked = opts.tracked ?? true;
    this.nextId = 1n;
  }

  /** prepare (called by the first other call if not called). */
  prepare() { return this.start(); }

  // record turns a tuple given to execute into a batch record.
  record(t, input, source) {
    let idx = typeof input === "number" ? input : this.inputs.findIndex((i) => `${i.component}/${i.stream}` === input || i.component === input);
    if (idx < 0 || idx >= this.inputs.length) throw new Error(`no input ${input} (inputs: ${this.inputs.map((i) => `${i.component}/${i.stream}`).join(", ")})`);
    const fields = this.inputs[idx].fields;
    let vals = t;
    if (!Array.isArray(t)) {
      const extra = Object.keys(t).filter((k) => !fields.includes(k));
      if (extra.length > 0) throw new Error(`tuple ${JSON.stringify(Object.keys(t))}: fields ${extra.join(", ")} are not in input ${this.inputs[idx].component}/${this.inputs[idx].stream} [${fields.join(", ")}]`);
      vals = fields.map((f) => (f in t ? t[f] : null));
    } else if (t.length !== fields.length) {
      throw new Error(`tuple of ${t.length} values for input ${this.inputs[idx].component}/${this.inputs[idx].stream}, which has ${fields.length} fields [${fields.join(", ")}]`);
    }
    const id = this.tracked ? this.nextId++ : 0n;
    return { input: idx, source, id, values: encodeValues(vals) };
  }

  /**
   * Runs a batch through execute. tuples: arrays of values (in the input's
   * field order) or objects {field: value}; options input (index or
   * "component/stream", default 0) and source (task id, default 1). The
   * result's ids are the tuples' ids. A tuple whose execute throws, aborts
   * or calls failCall is failed as the host does it (wasm-sdk/ABI.md): what
   * that try emitted and wrote is discarded, a fresh instance is prepared
   * with the state kept, the rest of the batch runs again, and the tuple is
   * in failed and tupleErrors ({index, id, error}).
   */
  execute(tuples, { input = 0, source = 1 } = {}) {
    const prep = this.start();
    let recs = tuples.map((t, index) => ({ index, ...this.record(t, input, source) }));
    const r = new Result();
    if (prep) r.prepare = prep;
    r.ids = recs.map((x) => x.id);
    r.stateBefore = this.state.clone();
    for (;;) {
      const saved = this.state.clone();
      const g = this.guest;
      g.withInput("ardea_execute", encodeBatch(recs));
      const failedCall = g.trapped || g.rc < 0;
      if (!failedCall) {
        this.collect(r, g);
        break;
      }
      r.logs.push(...g.logs);
      const i = g.cursor();
      const msg = g.errors.length > 0 ? g.errors.join("; ") : g.trapped ? `trap: ${g.trap.message}` : `returned ${g.rc}`;
      if (i === null || i >= recs.length) {
        r.errors.push(msg);
        throw new CallError(`execute failed (${i === null ? "no ardea_cursor export" : `cursor ${i} past the batch of ${recs.length}`}; ` +
          `the host would fail the task instance): ${msg}`, r);
      }
      // As the host: drop the try's output, restart with the state kept, fail record i.
      this.state.m = saved.m;
      const bad = recs[i];
      r.errors.push(msg);
      r.tupleErrors.push({ index: bad.index, id: bad.id, error: msg });
      if (!this.opts.quiet) console.error(`ardea-sdk/testing: tuple ${bad.index} of the batch (id ${bad.id}) failed: ${msg}`);
      if (bad.id !== 0n) r.failed.push(bad.id);
      this.restart(r);
      recs = recs.filter((_, j) => j !== i);
    }
    r.failed.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    r.stateAfter = this.state.clone();
    return r;
  }

  // restart replaces the instance with a fresh, prepared one (the state,
  // metrics and clock kept), as the host does after a failing tuple.
  restart(r) {
    const old = this.guest;
    const g = new Guest(this.module, { state: this.state, now: this.nowFn });
    g.counters = old.counters;
    g.gauges = old.gauges;
    g.observed = old.observed;
    this.guest = g;
    g.withInput("ardea_prepare", encodeContext(this.ctx));
    r.logs.push(...g.logs);
    if (g.trapped || g.rc < 0) throw new CallError(`prepare of the fresh instance failed: ${g.errors.join("; ")}`, r);
    r.restarts = (r.restarts || 0) + 1;
  }

  /** A tick (topology.tick.tuple.freq.ms). */
  tick() { this.start(); return this.check(this.run("ardea_tick"), "tick"); }

  /** finish: every upstream task has finished. */
  finish() { this.start(); return this.check(this.run("ardea_finish"), "finish"); }
}

/**
 * SpoutTester drives a spout. Options as BoltTester's without inputs and
 * tracked.
 */
export class SpoutTester extends Tester {
  constructor(module, opts = {}) {
    super(module, "spout", opts);
  }

  /** open (called by the first other call if not called). */
  open() { return this.start(); }

  /** One next call with a budget of max tuples; result.status is "more", "idle" or "done". */
  next(max = 100) {
    this.start();
    const r = this.check(this.run("ardea_next", max), "next");
    r.status = STATUS[r.rc] ?? `unknown status ${r.rc}`;
    return r;
  }

  /**
   * Calls next until it says done (or idle, with untilIdle), at most calls
   * times, and returns one Result with every emit; status is the last one.
   */
  drain({ max = 100, calls = 1000, untilIdle = false } = {}) {
    const all = new Result();
    all.stateBefore = this.state.clone();
    for (let i = 0; i < calls; i++) {
      const r = this.next(max);
      mergeInto(all, r);
      all.status = r.status;
      if (r.status === "done" || (untilIdle && r.status === "idle")) break;
    }
    all.stateAfter = this.state.clone();
    return all;
  }

  /** ack: the tuple trees of these message ids were fully processed. */
  ack(ids) { return this.ackFail("ardea_ack", ids); }
  /** fail: the tuple trees of these message ids failed or timed out. */
  fail(ids) { return this.ackFail("ardea_fail", ids); }

  ackFail(name, ids) {
    this.start();
    const b = Buffer.concat([u32(ids.length), ...ids.map(u64)]);
    return this.check(this.run(name, undefined, b), name.slice(6));
  }

  activate() { this.start(); return this.check(this.run("ardea_activate"), "activate"); }
  deactivate() { this.start(); return this.check(this.run("ardea_deactivate"), "deactivate"); }
}

function mergeInto(all, r) {
  for (const [s, es] of Object.entries(r.emits)) (all.emits[s] ||= []).push(...es);
  all.order.push(...r.order);
  all.acked.push(...r.acked);
  all.failed.push(...r.failed);
  all.logs.push(...r.logs);
  all.errors.push(...r.errors);
  for (const [k, v] of Object.entries(r.metrics.counters)) all.metrics.counters[k] = (all.metrics.counters[k] || 0n) + v;
  Object.assign(all.metrics.gauges, r.metrics.gauges);
  for (const [k, v] of Object.entries(r.metrics.histograms)) all.metrics.histograms[k] = [...(all.metrics.histograms[k] || []), ...v];
}

/** A BoltTester of module (a WebAssembly.Module or a .wasm path). */
export function bolt(module, opts) { return new BoltTester(module, opts); }

/** A SpoutTester of module (a WebAssembly.Module or a .wasm path). */
export function spout(module, opts) { return new SpoutTester(module, opts); }
