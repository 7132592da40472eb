// Tests of the AssemblyScript SDK under node, on its own test harness
// (testing/index.mjs, ardea-sdk/testing): it compiles the vector test
// guests (tests/bolt.ts, tests/spout.ts) as ardea build does, runs them
// against the harness's fake host (the `ardea` imports in JavaScript), and
// checks every vector of wasm-sdk/testdata byte for byte; it drives the
// committed probe guests (testdata/probe_*.wasm, testdata/abort.wasm)
// through the same fake host to check the runtime's behaviour (write-back
// state cache, metrics, errors, abort, the cursor); it checks the
// examples' manifests; and it tests the harness's testers with a declared
// bolt and spout (tests/declared_*.ts).
//
//   node tests/run.mjs            (npm test; needs `npm ci` first)
//
// The last line is "N passed, N failed"; the exit code is 1 on a failure.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as harness from "../testing/index.mjs";

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

// ---- the harness (ardea-sdk/testing): compiler and fake host ----

function compile(entry) {
  return harness.compile(entry, { dir: sdkDir });
}

class Guest extends harness.Guest {
  // The checks below read state by hex key and metrics by name.
  constructor(module) {
    super(module);
    this.metrics = this.counters;
  }

  emitted() {
    return toHex(super.emitted());
  }
}

const dec = new TextDecoder();
const enc = new TextEncoder();
const toHex = (b) => Buffer.from(b).toString("hex");
const fromHex = (s) => Uint8Array.from(Buffer.from(s, "hex"));

// ---- encodings the tests build inputs with ----

function u16(v) { const b = Buffer.alloc(2); b.writeUInt16LE(v); return b; }
function u32(v) { const b = Buffer.alloc(4); b.writeUInt32LE(v >>> 0); return b; }
function u64(v) { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); return b; }
function str(s) { const b = Buffer.from(enc.encode(s)); return Buffer.concat([u32(b.length), b]); }

function encodeContext({ outputs = [], inputs = [], ...rest }) {
  return harness.encodeContext({
    component: "c", ...rest,
    outputs: outputs.map(([stream, fields]) => ({ stream, fields })),
    inputs: inputs.map(([component, stream, fields]) => ({ component, stream, fields })),
  });
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
  check("probe_bolt/state", g.state.m.get("61") && Buffer.from(g.state.m.get("61")).readBigInt64LE() === 2n &&
    Buffer.from(g.state.m.get("62")).readBigInt64LE() === 1n);
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
  check("probe_bolt/delete written", g.writes === 1 && !g.state.m.has("61") && g.state.m.has("62"));
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
    g.emits.length === 0 && g.writes === 0 && !g.state.m.has("63"), JSON.stringify([g.rc, g.errors, g.writes]));
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
  check("misc/state written once", g.writes === 1 && toHex(g.state.m.get(hx("big"))) === big &&
    Buffer.from(g.state.m.get(hx("int"))).readBigInt64LE() === -3n && !g.state.m.has(hx("gone")), `${g.writes} writes`);
  run("many");
  const keys = [...g.state.m.keys()].filter((k) => k.startsWith(hx("k")));
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


// ---- the harness's testers (ardea-sdk/testing) ----

const same = (a, b) => JSON.stringify(a, (_, v) => (typeof v === "bigint" ? `${v}n` : v)) ===
  JSON.stringify(b, (_, v) => (typeof v === "bigint" ? `${v}n` : v));
const show = (v) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? `${x}n` : x));

function checkThrows(name, f, re) {
  let msg = "did not throw";
  try {
    f();
  } catch (e) {
    msg = re.test(e.message) ? "" : `threw ${e.message}`;
  }
  check(name, msg === "", msg);
}

function harnessChecks(boltMod, spoutMod, probeMod) {
  // The manifest, exactly.
  const b = harness.bolt(boltMod, { config: { prefix: "> " }, quiet: true });
  check("harness/manifest", same(b.manifest, {
    manifest: 1, sdk: { language: "assemblyscript", version: "0.1.0" }, kind: "bolt",
    outputs: [{ stream: "default", fields: ["line"] }, { stream: "counts", fields: ["line", "n"] }],
    inputs: ["line"], config: ["prefix"],
  }), show(b.manifest));
  const sp = harness.spout(spoutMod, { config: { count: "3" } });
  check("harness/spout manifest", same(sp.manifest, {
    manifest: 1, sdk: { language: "assemblyscript", version: "0.1.0" }, kind: "spout",
    outputs: [{ stream: "default", fields: ["line"] }], config: ["count"],
  }), show(sp.manifest));
  const pm = new harness.Guest(probeMod).manifest();
  check("harness/undeclared manifest", same(pm, { manifest: 1, sdk: { language: "assemblyscript", version: "0.1.0" }, kind: "bolt" }), show(pm));

  // A batch: emits per stream, anchors, acks, metrics, state before and after.
  b.state.set("a", 5n);
  const r = b.execute([{ line: "a" }, ["b"], { line: "fail" }, { line: "a" }]);
  check("harness/prepare logged", same(r.prepare && r.prepare.logTexts(), ["prepared"]), show(r.prepare && r.prepare.logs));
  check("harness/emits default", same(r.values("default"), [["> A"], ["> B"], ["> A"]]), show(r.emits));
  check("harness/emits counts", same(r.values("counts"), [["a", 6n], ["b", 1n], ["a", 7n]]), show(r.emits));
  check("harness/anchors", same(r.emits.default.map((e) => e.anchors), [[1n], [2n], [4n]]), show(r.emits.default));
  check("harness/acks and fails", same(r.acked, [1n, 2n, 4n]) && same(r.failed, [3n]) && r.tupleErrors.length === 0,
    show([r.acked, r.failed, r.tupleErrors]));
  check("harness/ids", same(r.ids, [1n, 2n, 3n, 4n]), show(r.ids));
  check("harness/state before and after", same(r.stateBefore.toInts(), { a: 5n }) && same(r.stateAfter.toInts(), { a: 7n, b: 1n }),
    show([r.stateBefore.toInts(), r.stateAfter.toInts()]));
  check("harness/call metrics", same(r.metrics.counters, { lines: 3n }) && same(r.metrics.histograms, { length: [1n, 1n, 1n] }),
    show(r.metrics));

  // A throw, a missing field and failCall each fail their tuple only; the
  // rest of the batch runs in a fresh instance with the state kept.
  const f = b.execute([{ line: "x" }, { line: "boom" }, { line: "y" }, { line: "nope" }, { line: "error" }, { line: "z" }]);
  check("harness/failing tuples", same(f.failed, [6n, 8n, 9n]) && same(f.acked, [5n, 7n, 10n]), show([f.acked, f.failed]));
  check("harness/failing tuples' emits discarded", same(f.values("default"), [["> X"], ["> Y"], ["> Z"]]), show(f.emits));
  check("harness/failed try's state discarded", !f.stateAfter.has("boom") && f.stateAfter.int("x") === 1n && f.stateAfter.int("z") === 1n,
    show(f.stateAfter.toInts()));
  check("harness/restarts", f.restarts === 3, String(f.restarts));
  const te = f.tupleErrors.map((e) => [e.index, e.id, e.error]);
  check("harness/tuple errors", te.length === 3 &&
    same(te.map((e) => e.slice(0, 2)), [[1, 6n], [3, 8n], [4, 9n]]) &&
    /^Execute: tuple 6 from upstream\/default task 1: boom line at tests\/declared_bolt\.ts:\d+:\d+$/.test(te[0][2]) &&
    te[1][2] === `Execute: tuple 8 from upstream/default task 1: ardea: no field "word" in the tuple from upstream/default (its fields: line)` &&
    te[2][2] === "Execute: tuple 9 from upstream/default task 1: error line", show(te));
  // Counters sent before a tuple failed stay counted (the SDK sends them
  // when a call fails; a trap loses the ones not sent): 3 from the first
  // batch; x, y (failCall's try) and x, y, z (the last try).
  check("harness/metrics kept across restarts", b.metrics.counters.lines === 8n, show(b.metrics));

  // tick, finish, close.
  const t1 = b.tick();
  const t2 = b.tick();
  check("harness/ticks", same(t1.values("counts"), [["tick", 1n]]) && same(t2.values("counts"), [["tick", 2n]]) &&
    t1.emits.counts[0].anchors.length === 0, show([t1.emits, t2.emits]));
  const fin = b.finish();
  // The fresh instance after the last failing tuple saw only x, y and z.
  check("harness/finish", same(fin.logs, [{ level: 4, text: "finished 3" }]), show(fin.logs));
  check("harness/close", b.close().errors.length === 0);

  // Untracked tuples: id 0, nothing anchored or acked.
  const u = harness.bolt(boltMod, { tracked: false }).execute([{ line: "q" }]);
  check("harness/untracked", same(u.ids, [0n]) && u.acked.length === 0 && same(u.emits.default[0].anchors, []), show(u));

  // Declarations are checked.
  checkThrows("harness/undeclared config key", () => harness.bolt(boltMod, { config: { prefx: "x" } }),
    /config key "prefx" is not one the component declares \(prefix\)/);
  checkThrows("harness/input without a read field", () => harness.bolt(boltMod, { inputs: [{ component: "lines", stream: "default", fields: ["text"] }] }),
    /input lines\/default has fields \[text\], but the bolt reads \[line\]: missing line/);
  checkThrows("harness/outputs differ", () => harness.bolt(boltMod, { outputs: { default: ["word"] } }),
    /outputs default: \[word\] differ from the ones the component declares: default: \[line\], counts: \[line, n\]/);
  checkThrows("harness/kind", () => harness.spout(boltMod), /registers a bolt, not a spout/);
  checkThrows("harness/wrong tuple field", () => harness.bolt(boltMod).execute([{ word: "x" }]), /fields word are not in input/);

  // An undeclared module with the context given.
  const p = harness.bolt(probeMod, {
    component: "probe", quiet: true, config: { prefix: "p-" },
    outputs: { default: ["word", "n"], events: ["kind", "detail"] },
    inputs: [{ component: "words", stream: "default", fields: ["word"] }],
  });
  const pr = p.execute([["a"], ["error"], ["panic"], ["a"]]);
  check("harness/probe", same(pr.values("default"), [["p-a", 1n], ["p-a", 2n]]) && same(pr.failed, [2n, 3n]) &&
    pr.tupleErrors[1].error.includes("probe panic"), show([pr.emits, pr.failed, pr.tupleErrors]));
  check("harness/probe tick", same(p.tick().values("events"), [["tick", "1"]]));

  // A spout: next with a budget, ack and fail, replay, activate and deactivate.
  const n1 = sp.next(2);
  check("harness/spout next budget", n1.status === "more" && same(n1.values(), [["line 1"], ["line 2"]]) &&
    same(n1.emits.default.map((e) => e.msgId), [1n, 2n]), show(n1));
  check("harness/spout fail", sp.fail([2n]).errors.length === 0);
  const a = sp.ack([1n]);
  check("harness/spout ack", same(a.metrics.counters, { acked: 1n }), show(a.metrics));
  const d = sp.drain({ max: 10 });
  check("harness/spout drain", d.status === "done" && same(d.values(), [["line 2"], ["line 3"]]), show(d));
  check("harness/spout activate", same(sp.deactivate().logTexts(), ["deactivated"]) && same(sp.activate().logTexts(), ["activated"]));
  const ten = harness.spout(spoutMod).drain({ max: 4 });
  check("harness/spout default count", ten.values().length === 10 && ten.status === "done", show(ten.values()));
  checkThrows("harness/spout bad config fails the call", () => harness.spout(spoutMod, { config: { count: "x" } }).next(),
    /open failed \(the host would fail the task instance\): Open: config count of component spout: invalid integer "x"/);
}

// ---- main ----

{
  const boltMod = await compile("tests/bolt.ts");
  const spoutMod = await compile("tests/spout.ts");
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

  // The examples declare their outputs and the fields they read.
  const repo = path.resolve(sdkDir, "..", "..");
  for (const [file, outputs, inputs] of [
    ["examples/wordcount/assemblyscript/split.wasm", [{ stream: "default", fields: ["word"] }], undefined],
    ["examples/wordcount/assemblyscript/count.wasm", [{ stream: "default", fields: ["word", "count"] }], ["word"]],
    ["examples/polyglot/upper.wasm", [{ stream: "default", fields: ["word", "upper"] }], ["word"]],
  ]) {
    const p = path.join(repo, file);
    if (!fs.existsSync(p)) continue; // the package outside the repository
    const m = new harness.Guest(harness.load(p)).manifest();
    check(`${file} manifest`, m && m.kind === "bolt" && same(m.outputs, outputs) && same(m.inputs, inputs), show(m));
  }
  harnessChecks(await compile("tests/declared_bolt.ts"), await compile("tests/declared_spout.ts"),
    harness.load(path.join(sdkDir, "testdata", "probe_bolt.wasm")));

  for (const [file, fn] of [["probe_bolt.wasm", probeBoltChecks], ["probe_spout.wasm", probeSpoutChecks], ["abort.wasm", abortChecks]]) {
    const p = path.join(sdkDir, "testdata", file);
    if (check(`testdata/${file} exists`, fs.existsSync(p))) fn(new WebAssembly.Module(fs.readFileSync(p)));
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
