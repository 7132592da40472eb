// Types of ardea-sdk/testing (testing/index.mjs): see that file for the details.

export const sdkDir: string;
export const ascFlags: string[];

/** Compiles assembly/index.ts (or entry) of dir (default: the current folder) as `ardea build` does. */
export function compile(entry?: string, opts?: { dir?: string; flags?: string[] }): Promise<WebAssembly.Module>;
/** Reads a compiled .wasm. */
export function load(file: string): WebAssembly.Module;

/** A field value: string, bigint (int64), number (float64), boolean, Uint8Array (bytes), null, or int()/float()/bytes(). */
export type Value = string | bigint | number | boolean | Uint8Array | null | Typed;
export interface Typed { kind: number; value: unknown }
export function int(v: number | bigint): Typed;
export function float(v: number): Typed;
export function bytes(v: Uint8Array | number[] | string): Typed;

export interface Stream { stream: string; fields: string[] }
export interface Input { component?: string; stream?: string; fields: string[] }
export interface Emitted { values: Value[]; anchors: bigint[]; direct: number | null; msgId?: bigint | null }
export interface Metrics { counters: Record<string, bigint>; gauges: Record<string, number>; histograms: Record<string, bigint[]> }
export interface TupleError { index: number; id: bigint; error: string }

export class State {
  get(key: string | Uint8Array): Uint8Array | undefined;
  has(key: string | Uint8Array): boolean;
  string(key: string | Uint8Array): string | undefined;
  int(key: string | Uint8Array): bigint | undefined;
  set(key: string | Uint8Array, value: Uint8Array | string | bigint): void;
  delete(key: string | Uint8Array): void;
  readonly size: number;
  keys(): string[];
  toStrings(): Record<string, string>;
  toInts(): Record<string, bigint>;
  clone(): State;
}

export class Result {
  /** Emits by stream name. */
  emits: Record<string, Emitted[]>;
  acked: bigint[];
  /** Failed tuple ids: the bolt's c.fail and the tuples that threw, aborted or failed their call. */
  failed: bigint[];
  tupleErrors: TupleError[];
  logs: { level: number; text: string }[];
  errors: string[];
  metrics: Metrics;
  /** next: "more", "idle" or "done". */
  status: string | null;
  /** execute: the ids of the tuples fed. */
  ids: bigint[];
  restarts?: number;
  prepare?: Result;
  stateBefore: State;
  stateAfter: State;
  values(stream?: string): Value[][];
  readonly all: (Emitted & { stream: string })[];
  logTexts(minLevel?: number): string[];
}

export class CallError extends Error { result: Result }

export interface Options {
  config?: Record<string, string>;
  outputs?: Record<string, string[]> | Stream[];
  topology?: string;
  component?: string;
  taskId?: number;
  taskIndex?: number;
  parallelism?: number;
  state?: State | Record<string, Uint8Array | string | bigint>;
  now?: bigint;
  strict?: boolean;
  /** Don't print failing tuples' errors to stderr. */
  quiet?: boolean;
}

export class BoltTester {
  constructor(module: WebAssembly.Module | string, opts?: Options & { inputs?: Input[]; tracked?: boolean });
  manifest: any;
  state: State;
  now: bigint;
  readonly metrics: Metrics;
  prepare(): Result | null;
  execute(tuples: (Value[] | Record<string, Value>)[], opts?: { input?: number | string; source?: number }): Result;
  tick(): Result;
  finish(): Result;
  close(): Result;
}

export class SpoutTester {
  constructor(module: WebAssembly.Module | string, opts?: Options);
  manifest: any;
  state: State;
  now: bigint;
  readonly metrics: Metrics;
  open(): Result | null;
  next(max?: number): Result;
  drain(opts?: { max?: number; calls?: number; untilIdle?: boolean }): Result;
  ack(ids: bigint[]): Result;
  fail(ids: bigint[]): Result;
  activate(): Result;
  deactivate(): Result;
  close(): Result;
}

export function bolt(module: WebAssembly.Module | string, opts?: Options & { inputs?: Input[]; tracked?: boolean }): BoltTester;
export function spout(module: WebAssembly.Module | string, opts?: Options): SpoutTester;

/** The fake host around one instance, for ABI-level tests. */
export class Guest {
  constructor(module: WebAssembly.Module, opts?: { state?: State; now?: () => bigint });
  call(name: string, ...args: number[]): number | null;
  withInput(name: string, b: Uint8Array): number | null;
  cursor(): number | null;
  manifest(): any;
  emitted(): Uint8Array;
  rc: number | null;
  trapped: boolean;
  logs: { level: number; text: string }[];
  errors: string[];
}

export function encodeValues(vals: Value[]): Uint8Array;
export function decodeValues(b: Uint8Array, offset?: number): [Value[], number];
export function encodeContext(ctx: { topology?: string; component?: string; taskId?: number; taskIndex?: number; parallelism?: number;
  config?: Record<string, string>; outputs?: Stream[]; inputs?: Required<Input>[] }): Uint8Array;
export function encodeBatch(records: { input: number; source: number; id: bigint; values: Uint8Array }[]): Uint8Array;
export function decodeOps(b: Uint8Array): any[];
