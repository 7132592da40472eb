// The component's manifest (the ardea_manifest export, wasm-sdk/ABI.md):
// JSON built from what registerSpout/registerBolt's Declare collected.

import { Registered } from "./component";
import { RawBuf } from "./raw";

/** The SDK's version (package.json's "version"; a test keeps them equal). */
export const SDK_VERSION: string = "0.1.0";

/** The manifest format's version. */
export const MANIFEST_VERSION: i32 = 1;

// The manifest's bytes: u32 len, then len bytes of UTF-8 JSON. Outside the
// GC heap; rebuilt on every call.
const buf = new RawBuf();

/** The manifest as JSON (what ardea_manifest returns, without the length). */
export function manifestJSON(): string {
  let d = Registered.decl;
  let s = "{\"manifest\":" + MANIFEST_VERSION.toString() +
    ",\"sdk\":{\"language\":\"assemblyscript\",\"version\":" + quote(SDK_VERSION) + "}";
  if (Registered.bolt !== null) s += ",\"kind\":\"bolt\"";
  else if (Registered.spout !== null) s += ",\"kind\":\"spout\"";
  let o = d.outputs;
  if (o !== null) {
    s += ",\"outputs\":[";
    for (let i = 0; i < o.length; i++) {
      if (i > 0) s += ",";
      s += "{\"stream\":" + quote(o[i].stream) + ",\"fields\":" + list(o[i].fields) + "}";
    }
    s += "]";
  }
  let inp = d.inputs;
  if (inp !== null) s += ",\"inputs\":" + list(inp);
  let c = d.configKeys;
  if (c !== null) s += ",\"config\":" + list(c);
  return s + "}";
}

/** Writes u32 len + the manifest's JSON and returns where (ardea_manifest). */
export function manifest(): usize {
  buf.len = 0;
  buf.u32(0);
  buf.utf8(manifestJSON());
  store<u32>(buf.ptr, <u32>(buf.len - 4));
  return buf.ptr;
}

function list(a: string[]): string {
  let s = "[";
  for (let i = 0; i < a.length; i++) {
    if (i > 0) s += ",";
    s += quote(a[i]);
  }
  return s + "]";
}

const HEX = "0123456789abcdef";

// quote writes s as a JSON string.
function quote(s: string): string {
  let out = "\"";
  let from = 0;
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0x20 && c != 0x22 && c != 0x5C) continue;
    out += s.substring(from, i);
    from = i + 1;
    if (c == 0x22) out += "\\\"";
    else if (c == 0x5C) out += "\\\\";
    else if (c == 0x0A) out += "\\n";
    else if (c == 0x09) out += "\\t";
    else if (c == 0x0D) out += "\\r";
    else out += "\\u00" + HEX.charAt(c >> 4) + HEX.charAt(c & 15);
  }
  return out + s.substring(from) + "\"";
}
