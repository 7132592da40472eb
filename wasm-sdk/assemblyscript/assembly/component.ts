// The component classes a module extends and registers.

import { Context } from "./context";
import { Tuple } from "./tuple";
import { SpoutCollector, BoltCollector } from "./collector";

/** A spout's answer to next. */
export enum Status {
  /** next emitted zero or more tuples; call it again. */
  More = 0,
  /** Nothing to emit now; the host backs off briefly. */
  Idle = 1,
  /** The input is exhausted; next is never called again. */
  Done = 2,
}

/**
 * A source. Extend it, override what you need and register an instance
 * with registerSpout. Every method runs inside one host call; what it
 * emits is sent when the call returns. `throw` (or failCall) fails the
 * task instance.
 */
export abstract class Spout {
  /** Called once before anything else. */
  open(ctx: Context): void {}
  /**
   * Emits up to c.remaining tuples and says whether there is more. While
   * it returns More and emits, the SDK calls it again within the same
   * host call until the host's budget is used up.
   */
  next(c: SpoutCollector): Status { return Status.Done; }
  /** The tuple tree of a tracked message id was fully processed. May emit. */
  ack(msgId: u64, c: SpoutCollector): void {}
  /** The tuple tree of a tracked message id failed or timed out. May emit (to replay). */
  fail(msgId: u64, c: SpoutCollector): void {}
  /** Resume emitting. */
  activate(): void {}
  /** Stop emitting until activated (next is not called meanwhile). */
  deactivate(): void {}
  /** The task is stopping. May not emit. */
  close(): void {}
}

/**
 * Processes tuples. Extend it, override what you need and register an
 * instance with registerBolt. To fail just one tuple (and have its spout
 * replay it) call c.fail(t). A `throw`, an abort or failCall in execute
 * fails the tuple being executed: the SDK keeps its batch position in
 * ardea_cursor, and the host discards what the call emitted, starts a
 * fresh instance (host-side state kept, guest memory lost) and runs the
 * rest of the batch (wasm-sdk/ABI.md, docs/delivery.md). In the other
 * methods they fail the task instance.
 */
export abstract class Bolt {
  /** Called once before anything else. */
  prepare(ctx: Context): void {}
  /**
   * Processes one input tuple. t is reused for the next tuple: keep
   * t.copy() to retain it. The default acks the tuple.
   */
  execute(t: Tuple, c: BoltCollector): void { c.ack(t); }
  /** Called every topology.tick.tuple.freq.ms. */
  tick(c: BoltCollector): void {}
  /** Every upstream task has finished (finite input): emit final results. */
  finish(c: BoltCollector): void {}
  /** The task is stopping. May not emit. */
  close(): void {}
}

/** One declared output stream: its name and field names. */
export class DeclaredStream {
  constructor(public stream: string, public fields: string[]) {}
}

/**
 * What a component declares about itself at registration, for its
 * manifest (the ardea_manifest export; `ardea build` stores it in the
 * module, `ardea inspect` prints it, `ardea run` and `ardea submit` check
 * the topology against it before anything starts). registerSpout and
 * registerBolt return it:
 *
 *   registerBolt(new Upper())
 *     .emits("default", ["line"])   // each output stream, in order
 *     .reads(["line"])              // input fields read by name
 *     .config(["min_length"]);      // config keys read
 *
 * Each part is optional; what is not declared is not checked. With
 * outputs declared, a topology may leave out the component's `outputs:`.
 */
export class Declare {
  outputs: DeclaredStream[] | null = null;
  inputs: string[] | null = null;
  configKeys: string[] | null = null;

  /** Declares an output stream and its fields (call once per stream, in order). */
  emits(stream: string, fields: string[]): Declare {
    let o = this.outputs;
    if (o === null) {
      o = [];
      this.outputs = o;
    }
    o.push(new DeclaredStream(stream, fields));
    return this;
  }

  /** Declares the input fields the bolt reads by name (added to earlier ones). */
  reads(fields: string[]): Declare {
    let i = this.inputs;
    if (i === null) {
      i = [];
      this.inputs = i;
    }
    for (let j = 0; j < fields.length; j++) i.push(fields[j]);
    return this;
  }

  /** Declares the config keys the component reads (added to earlier ones). */
  config(keys: string[]): Declare {
    let c = this.configKeys;
    if (c === null) {
      c = [];
      this.configKeys = c;
    }
    for (let j = 0; j < keys.length; j++) c.push(keys[j]);
    return this;
  }
}

/** The registered component. */
export class Registered {
  static spout: Spout | null = null;
  static bolt: Bolt | null = null;
  static decl: Declare = new Declare();
}

/**
 * Makes s this module's component. Call it at the top level of the entry
 * file (it runs from _initialize). A module registers exactly one
 * component. Declare its outputs and config on the result (see Declare).
 */
export function registerSpout(s: Spout): Declare {
  checkUnregistered();
  Registered.spout = s;
  return Registered.decl;
}

/** Makes b this module's component; see registerSpout and Declare. */
export function registerBolt(b: Bolt): Declare {
  checkUnregistered();
  Registered.bolt = b;
  return Registered.decl;
}

function checkUnregistered(): void {
  if (Registered.spout !== null || Registered.bolt !== null) {
    throw new Error("ardea: a component is already registered; a module registers exactly one spout or bolt");
  }
}
