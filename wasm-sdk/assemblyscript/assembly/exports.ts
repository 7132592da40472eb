// The ABI v1 exports. A module's entry file must re-export them:
//
//   export * from "ardea-sdk/exports";
//
// (AssemblyScript makes only the entry file's exports into wasm exports.)

import * as rt from "./runtime";
import { manifest } from "./manifest";

export function ardea_abi_version(): i32 { return rt.ABI_VERSION; }
export function ardea_buffer(size: i32): usize { return rt.buffer(size); }
export function ardea_open(len: i32): i32 { return rt.open(len); }
export function ardea_prepare(len: i32): i32 { return rt.prepare(len); }
export function ardea_next(max: i32): i32 { return rt.next(max); }
export function ardea_ack(len: i32): i32 { return rt.ackFail(len, false); }
export function ardea_fail(len: i32): i32 { return rt.ackFail(len, true); }
export function ardea_activate(): i32 { return rt.activate(true); }
export function ardea_deactivate(): i32 { return rt.activate(false); }
export function ardea_execute(len: i32): i32 { return rt.execute(len); }
export function ardea_tick(): i32 { return rt.tick(); }
export function ardea_finish(): i32 { return rt.finish(); }
export function ardea_close(): i32 { return rt.close(); }
export function ardea_cursor(): usize { return rt.cursor(); }
export function ardea_manifest(): usize { return manifest(); }
