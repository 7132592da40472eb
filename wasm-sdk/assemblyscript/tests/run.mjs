// Tests of the AssemblyScript SDK under node: it compiles the vector test
// guests (tests/bolt.ts, tests/spout.ts) with asc, runs them against a fake
// host (the `ardea` imports in JavaScript), and checks every vector of
// wasm-sdk/testdata byte for byte; then it drives the committed probe
// guests (testdata/probe_*.wasm, testdata/abort.wasm) through the same
// fake host to check the runtime's behaviour (write-back state cache,
// metrics, errors, abort).
//
//   node tests/run.mjs            (npm test; needs `npm ci` first)
//
// The last line is "N passed, N failed"; the exit code is 1 on a failure.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const sdkDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const vectorsDir = process.env.ARDEA_VECTORS || path.resolve(sdkDir, "..", "testdata");

let passed = 0;
let failed = 0;
function check(name, ok, detail) {
  if (ok) {
    passed++;
  } else {
    failed++;
    console.log(`FAIL ${name}${detail ? ": " + detail : ""}`);
  }
  return ok;
}

// ---- building the test guests ----

function compile(entry, out) {
  const asc = path.join(sdkDir, "node_modules", ".bin", "asc");
  if (!fs.existsSync(asc)) {
    throw new Error(`${asc} is missing: run \`npm ci\` in ${sdkDir}`);
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "ardea-as-test-"));
  fs.symlinkSync(sdkDir, path.join(tmp, "ardea-sdk"));
  try {
    execFileSync(asc, [
      entry, "-O3", "--runtime", "incremental", "--exportStart", "_initialize",
      "--use", "abort=~lib/ardea-sdk/assembly/abort/ardeaAbort",
      "--use", "trace=~lib/ardea-sdk/assembly/abort/ardeaTrace",
      "--use", "seed=~lib/ardea-sdk/assembly/abort/ardeaSeed",
      "--path", tmp, "-o", out,
    ], { cwd: sdkDir, stdio: ["ignore", "inherit", "inherit"] });
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return fs.readFileSync(out);
}

// ---- the fake host ----

const dec = new TextDecoder();
const enc = new TextEncoder();
const toHex = (b) => Buffer.from(b).toString("hex");
const fromHex = (s) => Uint8Array.from(Buffer.from(s, "hex"));

class Guest {
  constructor(module) {
    for (const imp of WebAssembly.Module.imports(module)) {
      if (imp.module !== "ardea" && imp.module !== "wasi_snapshot_preview1") {
        throw new Error(`guest imports ${imp.module}.${imp.name}`);
      }
    }
    this.state = new Map(); // hex key -> Uint8Array
    this.metrics = new Map();
    this.gauges = new Map();
    this.observed = new Map(); // name -> [values]
    this.reset();
    const mem = () => new Uint8Array(this.x.memory.buffer);
    const bytes = (p, n) => mem().slice(p, p + n);
    const text = (p, n) => dec.decode(bytes(p, n));
    const ardea = {
      emit: (p, n) => { this.emits.push(bytes(p, n)); },
      log: (level, p, n) => { this.logs.push({ level, text: text(p, n) }); },
      error: (p, n) => { this.errors.push(text(p, n)); },
      state_get: (kp, kn, vp, vcap) => {
        this.gets++;
        const v = this.state.get(toHex(bytes(kp, kn)));
        if (v === undefined) return -1;
        if (v.length <= vcap) mem().set(v, vp);
        return v.length;
      },
      state_put: (kp, kn, vp, vn) => { this.state.set(toHex(bytes(kp, kn)), bytes(vp, vn)); },
      state_delete: (kp, kn) => { this.state.delete(toHex(bytes(kp, kn))); },
      state_write: (p, n) => {
        this.writes++;
        const b = Buffer.from(bytes(p, n));
        for (let o = 0; o < b.length;) {
          const op = b[o];
          const kl = b.readUInt32LE(o + 1);
          const k = b.subarray(o + 5, o + 5 + kl).toString("hex");
          const vl = b.readUInt32LE(o + 5 + kl);
          const v = Uint8Array.from(b.subarray(o + 9 + kl, o + 9 + kl + vl));
          o += 9 + kl + vl;
          if (op === 1) this.state.set(k, v);
          else if (op === 2) this.state.delete(k);
          else throw new Error(`state_write op ${op}`);
        }
      },
      state_scan: (pp, pn, bp, bcap) => {
        const prefix = toHex(bytes(pp, pn));
        const keys = [...this.state.keys()].filter((k) => k.startsWith(prefix)).sort();
        const parts = [Buffer.alloc(4)];
        parts[0].writeUInt32LE(keys.length);
        for (const k of keys) {
          const kb = Buffer.from(k, "hex");
          const v = Buffer.from(this.state.get(k));
          const h = Buffer.alloc(4);
          h.writeUInt32LE(kb.length);
          const hv = Buffer.alloc(4);
          hv.writeUInt32LE(v.length);
          parts.push(h, kb, hv, v);
        }
        const out = Buffer.concat(parts);
        if (out.length <= bcap) mem().set(out, bp);
        return out.length;
      },
      metric: (np, nn, delta) => {
        const name = text(np, nn);
        this.metrics.set(name, (this.metrics.get(name) || 0n) + delta);
      },
      gauge: (np, nn, v) => { this.gauges.set(text(np, nn), v); },
      observe: (np, nn, v) => {
        const name = text(np, nn);
        this.observed.set(name, [...(this.observed.get(name) || []), v]);
      },
      now: () => 1700000000000000000n,
    };
    const wasi = new Proxy({}, { get: (_, name) => () => { throw new Error(`unexpected WASI call ${String(name)}`); } });
    this.inst = new WebAssembly.Instance(module, { ardea, wasi_snapshot_preview1: wasi });
    this.x = this.inst.exports;
    this.bufPtr = 0;
    this.bufCap = 0;
    if (this.x._initialize) this.x._initialize();
  }

  reset() {
    this.emits = [];
    this.logs = [];
    this.errors = [];
    this.gets = 0;
    this.writes = 0;
  }

  // input copies bytes into the guest's buffer, asking for a new one only
  // when it needs more room (as the host does).
  input(b) {
    if (b.length > this.bufCap || this.bufPtr === 0) {
      this.bufPtr = this.x.ardea_buffer(b.length);
      this.bufCap = b.length;
    }
    new Uint8Array(this.x.memory.buffer).set(b, this.bufPtr);
    return b.length;
  }

  // call runs one export; rc is null after a trap.
  call(name, ...args) {
    this.reset();
    try {
      this.rc = this.x[name](...args);
      this.trapped = false;
    } catch (e) {
      if (!(e instanceof WebAssembly.RuntimeError)) throw e;
      this.rc = null;
      this.trapped = true;
    }
    return this.rc;
  }

  withInput(name, b) {
    return this.call(name, this.input(b));
  }

  // cursor reads the u32 at ardea_cursor(): the batch record execute is
  // (or was, when it failed) processing.
  cursor() {
    return new DataView(this.x.memory.buffer).getUint32(this.x.ardea_cursor(), true);
  }

  emitted() {
    return toHex(Buffer.concat(this.emits.map((e) => Buffer.from(e))));
  }
}

// ---- encodings the tests build inputs with ----

function u16(v) { const b = Buffer.alloc(2); b.writeUInt16LE(v); return b; }
function u32(v) { const b = Buffer.alloc(4); b.writeUInt32LE(v >>> 0); return b; }
function u64(v) { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); return b; }
function str(s) { const b = Buffer.from(enc.encode(s)); return Buffer.concat([u32(b.length), b]); }

function encodeContext({ topology = "test", component = "c", taskId = 1, taskIndex = 0, parallelism = 1,
  config = {}, outputs = [], inputs = [] }) {
  const parts = [str(topology), str(component), u32(taskId), u32(taskIndex), u32(parallelism)];
  const keys = Object.keys(config).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  parts.push(u32(keys.length));
  for (const k of keys) parts.push(str(k), str(config[k]));
  parts.push(u16(outputs.length));
  for (const [name, fields] of outputs) {
    parts.push(str(name), u16(fields.length), ...fields.map(str));
  }
  parts.push(u16(inputs.length));
  for (const [comp, stream, fields] of inputs) {
    parts.push(str(comp), str(stream), u16(fields.length), ...fields.map(str));
  }
  return Buffer.concat(parts);
}

// batch encodes records [input, source, id, valuesBytes].
function encodeBatch(records) {
  const parts = [u32(records.length)];
  for (const [input, source, id, vals] of records) {
    parts.push(u32(14 + vals.length), u16(input), u32(source), u64(id), Buffer.from(vals));
  }
  return Buffer.concat(parts);
}

function floatBits(dec) {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(Number(dec));
  return b.readBigUInt64LE().toString(16).padStart(16, "0");
}

// normSpec writes floats as their bits (f:<16 hex>), as the guests do.
function normSpec(spec) {
  if (spec === "-") return spec;
  return spec.split(" ").map((t) => (t.startsWith("f:") ? "f:" + floatBits(t.slice(2)) : t)).join(" ");
}

function specFields(spec) {
  return spec === "-" ? 0 : spec.split(" ").length;
}

function encodeValues(spec) {
  const toks = spec === "-" ? [] : spec.split(" ");
  const parts = [u16(toks.length)];
  for (const t of toks) {
    const v = t.slice(2);
    switch (t[0]) {
      case "n": parts.push(Buffer.from([0])); break;
      case "x": { const b = Buffer.from(v, "hex"); parts.push(Buffer.from([1]), u32(b.length), b); break; }
      case "s": { const b = Buffer.from(v, "hex"); parts.push(Buffer.from([2]), u32(b.length), b); break; }
      case "i": { const b = Buffer.alloc(8); b.writeBigInt64LE(BigInt(v)); parts.push(Buffer.from([3]), b); break; }
      case "f": { const b = Buffer.alloc(8); b.writeDoubleLE(Number(v)); parts.push(Buffer.from([4]), b); break; }
      case "b": parts.push(Buffer.from([5, Number(v)])); break;
      default: throw new Error(`bad spec token ${t}`);
    }
  }
  return Buffer.concat(parts);
}

function readVectors(file) {
  return fs.readFileSync(path.join(vectorsDir, file), "utf8").split("\n")
    .filter((l) => l !== "" && !l.startsWith("#"))
    .map((l) => l.split("\t"));
}

const fieldNames = (n) => Array.from({ length: n }, (_, i) => "f" + i);
const threeInputs = [["in0", "default", ["a"]], ["in1", "s1", ["b"]], ["in2", "s2", ["c"]]];

// ---- the vector checks ----

// valuesCheck decodes a values block (the guest logs its spec) and encodes
// it twice: re-emitting the decoded values, and from the spec through the
// public emit API (the script path). It returns the failures.
function valuesCheck(bolt, spec, hex) {
  const errs = [];
  const n = specFields(spec);
  const outputs = [["default", fieldNames(n)]];
  const inputs = [["up", "default", fieldNames(n)]];
  bolt.withInput("ardea_prepare", encodeContext({ config: { mode: "echo" }, outputs, inputs }));
  if (bolt.rc !== 0) return [`prepare: ${bolt.errors}`];
  bolt.withInput("ardea_execute", encodeBatch([[0, 1, 7, fromHex(hex)]]));
  if (bolt.rc !== 0) return [`execute: rc ${bolt.rc} ${bolt.errors}`];
  const got = bolt.logs.map((l) => l.text).join("|");
  if (got !== `0,1,7,${normSpec(spec)}`) errs.push(`decoded ${got.slice(0, 200)}, want 0,1,7,${normSpec(spec).slice(0, 200)}`);
  const header = "010000ffffffff00000000000000000000";
  const out = bolt.emitted();
  if (out !== header + hex) errs.push(`re-encoded ${out.slice(0, 200)}..., want ${(header + hex).slice(0, 200)}...`);
  // From the spec.
  bolt.withInput("ardea_prepare", encodeContext({
    config: { mode: "script", script: `emit,0,4294967295,0,-,${normSpec(spec)}` }, outputs, inputs,
  }));
  bolt.withInput("ardea_execute", encodeBatch([]));
  bolt.call("ardea_finish");
  if (bolt.rc !== 0) errs.push(`finish: rc ${bolt.rc} ${bolt.errors}`);
  else if (bolt.emitted() !== header + hex) errs.push(`encoded from spec ${bolt.emitted().slice(0, 200)}...`);
  return errs;
}

function batchCheck(bolt, records, hex) {
  bolt.withInput("ardea_prepare", encodeContext({ config: { mode: "describe" }, inputs: threeInputs }));
  bolt.withInput("ardea_execute", fromHex(hex));
  if (bolt.rc !== 0) return [`execute: rc ${bolt.rc} ${bolt.errors}`];
  const want = records === "-" ? [] : records.split("|").map((r) => {
    const [i, s, id, ...spec] = r.split(",");
    return `${i},${s},${id},${normSpec(spec.join(","))}`;
  });
  const got = bolt.logs.map((l) => l.text);
  return got.join("|") === want.join("|") ? [] : [`decoded ${got.join("|").slice(0, 300)}, want ${want.join("|").slice(0, 300)}`];
}

function opsCheck(bolt, spout, ops, hex) {
  const list = ops.split("|").map((o) => o.split(","));
  const counts = [];
  let spoutSeq = false;
  const ids = new Set();
  for (const o of list) {
    if (o[0] === "emit") {
      counts[Number(o[1])] = specFields(o.slice(5).join(","));
      if (o[3] !== "0") spoutSeq = true;
      if (o[4] !== "-") o[4].split(":").forEach((id) => ids.add(id));
    } else {
      ids.add(o[1]);
    }
  }
  const outputs = [];
  for (let i = 0; i < counts.length; i++) outputs.push([i === 0 ? "default" : "s" + i, fieldNames(counts[i] || 0)]);
  const script = list.map((o) => (o[0] === "emit" ? [...o.slice(0, 5), normSpec(o.slice(5).join(","))].join(",") : o.join(","))).join("|");
  // A spout sequence has message ids and no anchors/acks; a bolt's the reverse.
  const onlyEmits = list.every((o) => o[0] === "emit" && o[4] === "-");
  if (spoutSeq || onlyEmits) {
    spout.withInput("ardea_open", encodeContext({ config: { script }, outputs }));
    if (spout.rc !== 0) return [`open: ${spout.errors}`];
    spout.call("ardea_next", 1000);
    if (spout.rc !== 0 && spout.rc !== 2) return [`next: rc ${spout.rc} ${spout.errors}`];
    const got = spout.emitted();
    if (got !== hex) return [`spout emitted ${got.slice(0, 300)}, want ${hex.slice(0, 300)}`];
    if (!onlyEmits || spoutSeq) return [];
  }
  bolt.withInput("ardea_prepare", encodeContext({ config: { mode: "script", script }, outputs, inputs: [["up", "default", []]] }));
  if (bolt.rc !== 0) return [`prepare: ${bolt.errors}`];
  bolt.withInput("ardea_execute", encodeBatch([...ids].map((id) => [0, 1, id, fromHex("0000")])));
  if (bolt.rc !== 0 || bolt.emits.length !== 0) return [`execute: rc ${bolt.rc} ${bolt.errors} emits ${bolt.emits.length}`];
  bolt.call("ardea_finish");
  if (bolt.rc !== 0) return [`finish: rc ${bolt.rc} ${bolt.errors}`];
  const got = bolt.emitted();
  return got === hex ? [] : [`bolt emitted ${got.slice(0, 300)}, want ${hex.slice(0, 300)}`];
}

function contextCheck(bolt, cols, hex) {
  bolt.withInput("ardea_prepare", fromHex(hex));
  if (bolt.rc !== 0) return [`prepare: rc ${bolt.rc} ${bolt.errors}`];
  const want = cols.join("\t");
  const got = bolt.logs.length > 0 ? bolt.logs[0].text : "";
  return got === want ? [] : [`decoded ${got.slice(0, 300)}, want ${want.slice(0, 300)}`];
}

function msgidsCheck(spout, ids, hex) {
  const errs = [];
  spout.withInput("ardea_open", encodeContext({ outputs: [["default", ["w"]]] }));
  for (const what of ["ack", "fail"]) {
    spout.withInput("ardea_" + what, fromHex(hex));
    if (spout.rc !== 0) {
      errs.push(`${what}: rc ${spout.rc} ${spout.errors}`);
      continue;
    }
    const want = ids === "-" ? [] : ids.split(",").map((id) => `${what} ${id}`);
    const got = spout.logs.map((l) => l.text);
    if (got.join(",") !== want.join(",")) errs.push(`${what}: got ${got.join(",").slice(0, 200)}`);
  }
  return errs;
}

function stateKeyCheck(bolt, spec, fields, key) {
  const n = specFields(spec);
  bolt.withInput("ardea_prepare", encodeContext({
    config: { mode: "statekey", keyfields: fields }, inputs: [["up", "default", fieldNames(n)]],
  }));
  bolt.withInput("ardea_execute", encodeBatch([[0, 1, 1, encodeValues(spec)]]));
  if (bolt.rc !== 0) return [`execute: rc ${bolt.rc} ${bolt.errors}`];
  const got = bolt.logs.map((l) => l.text).join("|");
  return got === key ? [] : [`state key ${got}, want ${key}`];
}

function invalidCheck(bolt, spout, kind, hex) {
  const b = fromHex(hex);
  let g, rc;
  switch (kind) {
    case "values":
      bolt.withInput("ardea_prepare", encodeContext({ config: { mode: "describe" }, inputs: threeInputs }));
      rc = bolt.withInput("ardea_execute", encodeBatch([[0, 1, 1, b]]));
      g = bolt;
      break;
    case "batch":
      bolt.withInput("ardea_prepare", encodeContext({ config: { mode: "describe" }, inputs: threeInputs }));
      rc = bolt.withInput("ardea_execute", b);
      g = bolt;
      break;
    case "context":
      rc = bolt.withInput("ardea_prepare", b);
      g = bolt;
      break;
    case "msgids":
      spout.withInput("ardea_open", encodeContext({ outputs: [["default", ["w"]]] }));
      rc = spout.withInput("ardea_ack", b);
      g = spout;
      break;
    default:
      return null; // ops: SDKs do not decode ops
  }
  if (g.trapped) return [`trapped instead of returning an error`];
  if (!(rc < 0)) return [`accepted (rc ${rc})`];
  if (g.errors.length !== 1) return [`${g.errors.length} error reports`];
  return [];
}

function runVectors(boltMod, spoutMod, vectors) {
  const bolt = new Guest(boltMod);
  const spout = new Guest(spoutMod);
  const results = [];
  const add = (name, errs) => results.push([name, errs]);
  for (const [name, spec, hex] of vectors.values) add(`values/${name}`, valuesCheck(bolt, spec, hex));
  for (const [name, records, hex] of vectors.batch) add(`batch/${name}`, batchCheck(bolt, records, hex));
  for (const [name, ops, hex] of vectors.ops) add(`ops/${name}`, opsCheck(bolt, spout, ops, hex));
  for (const [name, ...rest] of vectors.context) add(`context/${name}`, contextCheck(bolt, rest.slice(0, 8), rest[8]));
  for (const [name, ids, hex] of vectors.msgids) add(`msgids/${name}`, msgidsCheck(spout, ids, hex));
  for (const v of vectors.hash) {
    if (v[0] === "tuple") add(`hash/${v[1]}`, stateKeyCheck(bolt, v[2], v[3], v[7]));
  }
  for (const [name, kind, hex] of vectors.invalid) {
    const errs = invalidCheck(bolt, spout, kind, hex);
    if (errs !== null) add(`invalid/${name}`, errs);
  }
  return results;
}

function loadVectors() {
  return {
    values: readVectors("values.txt"),
    batch: readVectors("batch.txt"),
    ops: readVectors("ops.txt"),
    context: readVectors("context.txt"),
    msgids: readVectors("msgids.txt"),
    hash: readVectors("hash.txt"),
    invalid: readVectors("invalid.txt"),
  };
}

// ---- the probe guests through the fake host ----

function probeBoltChecks(mod) {
  const g = new Guest(mod);
  const ctx = encodeContext({
    topology: "t", component: "probe", taskId: 7, parallelism: 3, config: { prefix: "p-", zeta: "z" },
    outputs: [["default", ["word", "n"]], ["events", ["kind", "detail"]]],
    inputs: [["words", "default", ["word"]]],
  });
  g.withInput("ardea_prepare", ctx);
  check("probe_bolt/prepare", g.rc === 0 && g.logs.length === 1 && g.logs[0].level === 0 &&
    g.logs[0].text === "prepared probe task 7 of 3", JSON.stringify(g.logs) + g.errors);
  const words = (list, first = 1) => encodeBatch(list.map((w, i) => [0, 3, first + i, encodeValues("s:" + Buffer.from(w).toString("hex"))]));
  g.withInput("ardea_execute", words(["a", "b", "a", "fail", "log", "config", "multi"]));
  check("probe_bolt/execute rc", g.rc === 0, g.errors.join());
  check("probe_bolt/one state_write per call", g.writes === 1, `${g.writes} writes`);
  check("probe_bolt/one state_get per new key", g.gets === 2, `${g.gets} gets`);
  check("probe_bolt/state", g.state.get("61") && Buffer.from(g.state.get("61")).readBigInt64LE() === 2n &&
    Buffer.from(g.state.get("62")).readBigInt64LE() === 1n);
  check("probe_bolt/metric", g.metrics.get("probe.words") === 3n, String(g.metrics.get("probe.words")));
  check("probe_bolt/warn log", g.logs.length === 1 && g.logs[0].level === 4 && g.logs[0].text === "probe log");
  check("probe_bolt/one emit call", g.emits.length === 1, `${g.emits.length}`);
  const ops = [
    "emit,0,4294967295,0,1,s:702d61 i:1", "ack,1", "emit,0,4294967295,0,2,s:702d62 i:1", "ack,2",
    "emit,0,4294967295,0,3,s:702d61 i:2", "ack,3", "fail,4", "ack,5",
    `emit,1,4294967295,0,6,s:${Buffer.from("config").toString("hex")} s:${Buffer.from("prefix=p-,zeta=z").toString("hex")}`, "ack,6",
    `emit,0,4294967295,0,7:6,s:${Buffer.from("multi").toString("hex")} i:2`, "ack,7",
  ];
  check("probe_bolt/emits", g.emitted() === encodeOps(ops), g.emitted());
  g.withInput("ardea_execute", words(["scan", "delete:a", "direct:5"], 20));
  const ops2 = [
    `emit,1,4294967295,0,20,s:${hx("state")} s:${hx("a=2")}`, `emit,1,4294967295,0,20,s:${hx("state")} s:${hx("b=1")}`, "ack,20",
    `emit,1,4294967295,0,21,s:${hx("deleted")} s:${hx("a")}`, "ack,21",
    `emit,0,5,0,22,s:${hx("direct:5")} i:0`, "ack,22",
  ];
  check("probe_bolt/scan delete direct", g.rc === 0 && g.emitted() === encodeOps(ops2), g.emitted() + g.errors);
  check("probe_bolt/delete written", g.writes === 1 && !g.state.has("61") && g.state.has("62"));
  g.withInput("ardea_execute", words(["metrics"], 30));
  check("probe_bolt/gauge", g.rc === 0 && g.gauges.get("probe.gauge") === 2.5, String(g.gauges.get("probe.gauge")) + g.errors);
  check("probe_bolt/observe", JSON.stringify((g.observed.get("probe.size") || []).map(String)) === '["7","1000"]',
    String(g.observed.get("probe.size")));
  check("probe_bolt/metrics word acks", g.emitted() === encodeOps(["ack,30"]), g.emitted());
  g.call("ardea_tick");
  g.call("ardea_tick");
  check("probe_bolt/tick", g.emitted() === encodeOps([`emit,1,4294967295,0,-,s:${hx("tick")} s:${hx("2")}`]), g.emitted());
  g.call("ardea_finish");
  // 11: the ten words above and "metrics".
  check("probe_bolt/finish", g.emitted() === encodeOps([`emit,1,4294967295,0,-,s:${hx("finish")} s:${hx("11")}`]), g.emitted());
  // An untracked tuple (id 0): no anchors, no ack.
  g.withInput("ardea_execute", encodeBatch([[0, 3, 0, encodeValues(`s:${hx("b")}`)]]));
  check("probe_bolt/untracked", g.emitted() === encodeOps([`emit,0,4294967295,0,-,s:${hx("p-b")} i:2`]), g.emitted());
  check("probe_bolt/cursor after a good batch", g.cursor() === 0, String(g.cursor()));
  g.withInput("ardea_execute", words(["c", "error", "d"], 30));
  check("probe_bolt/error", g.rc < 0 && !g.trapped && g.errors.length === 1 && g.errors[0].includes("probe error: bad word") &&
    g.emits.length === 0 && g.writes === 0 && !g.state.has("63"), JSON.stringify([g.rc, g.errors, g.writes]));
  check("probe_bolt/error cursor", g.cursor() === 1, String(g.cursor()));
  g.withInput("ardea_execute", words(["x", "y", "panic", "z"], 40));
  check("probe_bolt/panic", g.trapped && g.errors.length === 1 &&
    /^Execute: tuple 42 from words\/default task 3: probe panic at .+:\d+:\d+$/.test(g.errors[0]), JSON.stringify(g.errors));
  check("probe_bolt/panic cursor", g.cursor() === 2, String(g.cursor()));
}

function probeSpoutChecks(mod) {
  const g = new Guest(mod);
  g.withInput("ardea_open", encodeContext({ component: "ps", taskId: 4, config: { count: "4" }, outputs: [["default", ["word", "n"]]] }));
  check("probe_spout/open", g.rc === 0 && g.logs.length === 1 && g.logs[0].text === "opened ps task 4", JSON.stringify(g.logs) + g.errors);
  const tup = (i) => `emit,0,4294967295,${i},-,s:${hx("w" + i)} i:${i}`;
  g.call("ardea_next", 3);
  check("probe_spout/next", g.rc === 0 && g.emitted() === encodeOps([tup(1), tup(2), tup(3)]), `${g.rc} ${g.emitted()}`);
  g.withInput("ardea_fail", Buffer.concat([u32(1), u64(2)]));
  check("probe_spout/fail", g.rc === 0, g.errors.join());
  g.withInput("ardea_ack", Buffer.concat([u32(2), u64(1), u64(3)]));
  check("probe_spout/ack metric", g.rc === 0 && g.metrics.get("probe.acked") === 2n, String(g.metrics.get("probe.acked")));
  let all = "";
  let rc = 0;
  for (let i = 0; i < 10 && rc !== 2; i++) {
    rc = g.call("ardea_next", 10);
    all += g.emitted();
  }
  check("probe_spout/replay then done", rc === 2 && all === encodeOps([tup(2), tup(4)]), `${rc} ${all}`);
  g.call("ardea_deactivate");
  const d = g.logs.map((l) => l.text).join();
  g.call("ardea_activate");
  check("probe_spout/activate", d === "deactivated" && g.logs.map((l) => l.text).join() === "activated");
}

function miscChecks(boltMod) {
  const g = new Guest(boltMod);
  const prep = (config = {}) => g.withInput("ardea_prepare", encodeContext({
    config: { mode: "misc", ...config }, outputs: [["default", ["out"]]], inputs: [["up", "default", ["w"]]],
  }));
  const run = (w) => g.withInput("ardea_execute", encodeBatch([[0, 1, 9, encodeValues(`s:${hx(w)}`)]]));
  const out = () => (g.emits.length === 1 ? dec.decode(Buffer.from(g.emits[0]).subarray(24)) : `(${g.emits.length} emits)`);
  for (const [w, want] of [
    ["undeclared", `emit on undeclared stream "nope" (declared: "default")`],
    ["fewer", `emit on stream "default": 0 values for 1 declared fields [out]`],
    ["more", `emit on stream "default": 2 values for 1 declared fields [out]`],
    ["cfg", `config n of component c: invalid integer "x"`],
  ]) {
    prep({ n: "x" });
    run(w);
    check(`misc/${w} fails the call`, g.rc < 0 && !g.trapped && g.emits.length === 0 && g.errors.length === 1 &&
      g.errors[0] === `Execute: tuple 9 from up/default task 1: ${want}`, JSON.stringify(g.errors));
  }
  prep({ i: " 42 ", z: "1" });
  run("config");
  check("misc/config", out() === "def,42,null,i:mode:z", out());
  run("state");
  const big = Buffer.from(Array.from({ length: 100 }, (_, i) => i)).toString("hex");
  check("misc/state", g.rc === 0 && out() === `big=${big} int=-3 r=-3 has=no absent=null`, out() + g.errors);
  check("misc/state written once", g.writes === 1 && toHex(g.state.get(hx("big"))) === big &&
    Buffer.from(g.state.get(hx("int"))).readBigInt64LE() === -3n && !g.state.has(hx("gone")), `${g.writes} writes`);
  run("many");
  const keys = [...g.state.keys()].filter((k) => k.startsWith(hx("k")));
  check("misc/cache bound flushes", g.rc === 0 && g.writes > 1 && keys.length === 3000 && out() === "scanned 3000 first=k10000",
    `${g.rc} ${g.writes} writes, ${keys.length} keys, ${out()} ${g.errors}`);
}

function abortChecks(mod) {
  const g = new Guest(mod);
  g.withInput("ardea_prepare", encodeContext({ outputs: [["default", ["word"]]], inputs: [["up", "default", ["word"]]] }));
  const batch = (ws) => encodeBatch(ws.map((w, i) => [0, 1, i + 1, encodeValues(`s:${hx(w)}`)]));
  g.withInput("ardea_execute", batch(["x", "abort"]));
  check("abort/trap with message", g.trapped && g.errors.length === 1 &&
    g.errors[0] === "Execute: tuple 2 from up/default task 1: as abort", JSON.stringify(g.errors));
  check("abort/cursor", g.cursor() === 1, String(g.cursor()));
  // A trap leaves the instance unusable: the host starts a fresh one.
  const h = new Guest(mod);
  h.withInput("ardea_prepare", encodeContext({ outputs: [["default", ["word"]]], inputs: [["up", "default", ["word"]]] }));
  h.withInput("ardea_execute", batch(["x", "y", "z", "throw", "w"]));
  check("abort/throw names the tuple and the user's source", h.trapped && h.errors.length === 1 &&
    /^Execute: tuple 4 from up\/default task 1: as throw at assembly\/index\.ts:\d+:\d+$/.test(h.errors[0]), JSON.stringify(h.errors));
  check("abort/throw cursor", h.cursor() === 3, String(h.cursor()));
}

const hx = (s) => Buffer.from(s).toString("hex");

function encodeOps(ops) {
  const parts = [];
  for (const o of ops) {
    const f = o.split(",");
    if (f[0] === "ack" || f[0] === "fail") {
      parts.push(Buffer.from([f[0] === "ack" ? 2 : 3]), u64(f[1]));
      continue;
    }
    const anchors = f[4] === "-" ? [] : f[4].split(":");
    parts.push(Buffer.from([1]), u16(Number(f[1])), u32(Number(f[2])), u64(f[3]), u16(anchors.length), ...anchors.map(u64),
      encodeValues(f.slice(5).join(",")));
  }
  return Buffer.concat(parts).toString("hex");
}

// ---- main ----

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "ardea-as-wasm-"));
try {
  const boltMod = new WebAssembly.Module(compile("tests/bolt.ts", path.join(tmp, "bolt.wasm")));
  const spoutMod = new WebAssembly.Module(compile("tests/spout.ts", path.join(tmp, "spout.wasm")));
  const vectors = loadVectors();
  const counts = Object.fromEntries(Object.entries(vectors).map(([k, v]) => [k, v.length]));
  for (const [name, errs] of runVectors(boltMod, spoutMod, vectors)) check(name, errs.length === 0, errs.join("; "));
  console.log(`vectors from ${vectorsDir}: ${JSON.stringify(counts)}`);
  miscChecks(boltMod);

  // The checks must be able to fail: a changed vector (one byte of a
  // values encoding, one token of a batch spec, one byte of an op) fails.
  const mutated = (file, i, col, f) => {
    const v = structuredClone(vectors);
    for (const k of Object.keys(v)) v[k] = [];
    v[file] = [vectors[file][i].slice()];
    v[file][0][col] = f(v[file][0][col]);
    return v;
  };
  const flipLast = (h) => h.slice(0, -1) + (h.endsWith("0") ? "1" : "0");
  for (const [file, i, col, f] of [
    ["values", 5, 2, flipLast],
    ["batch", 2, 1, (r) => r.replace(/,s:/, ",s:00")],
    ["ops", 7, 2, flipLast],
    ["context", 1, 3, () => "4"],
    ["msgids", 1, 1, () => "2"],
  ]) {
    const res = runVectors(boltMod, spoutMod, mutated(file, i, col, f));
    check(`mutated ${file} vector is caught`, res.length > 0 && res.some(([, errs]) => errs.length > 0));
  }

  for (const [file, fn] of [["probe_bolt.wasm", probeBoltChecks], ["probe_spout.wasm", probeSpoutChecks], ["abort.wasm", abortChecks]]) {
    const p = path.join(sdkDir, "testdata", file);
    if (check(`testdata/${file} exists`, fs.existsSync(p))) fn(new WebAssembly.Module(fs.readFileSync(p)));
  }
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
