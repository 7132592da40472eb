// Ardea's AssemblyScript SDK: write spouts and bolts for Ardea (guest ABI
// v1, wasm-sdk/ABI.md). See docs/sdk/assemblyscript.md.
//
//   import { Bolt, Tuple, BoltCollector, registerBolt } from "ardea-sdk";
//   export * from "ardea-sdk/exports";

export { Kind, kindName } from "./codec";
export { failCall } from "./call";
export { Context, Stream, Input, Logger, Level, logger } from "./context";
export { Tuple } from "./tuple";
export { State, StateIterator, DEFAULT_CACHE_ENTRIES, DEFAULT_CACHE_BYTES } from "./state";
export { Emit, SpoutCollector, BoltCollector, NO_TASK } from "./collector";
export { Spout, Bolt, Status, registerSpout, registerBolt, Declare, DeclaredStream } from "./component";
export { SDK_VERSION, manifestJSON } from "./manifest";
export { ABI_VERSION } from "./runtime";
export { ardeaAbort, ardeaTrace, ardeaSeed } from "./abort";
