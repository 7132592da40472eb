// abort: a bolt that fails on purpose. By its input word (field 0):
//   "abort": calls abort("as abort");
//   "throw": throws new Error("as throw");
//   anything else: emits the word (anchored and acked automatically).
// The SDK's abort handler reports "Execute: tuple <id> from <component>/
// <stream> task <source>: <message>[ at <file>:<line>:<column>]" with
// ardea.error and traps, having stored the failing record's index in the
// cursor (ardea_cursor); the host fails that tuple.
//
// Build (wasm-sdk/assemblyscript/build.sh does this for every guest):
//   asc assembly/index.ts -O3 --runtime incremental --exportStart _initialize \
//     --use abort=~lib/ardea-sdk/assembly/abort/ardeaAbort \
//     --use trace=~lib/ardea-sdk/assembly/abort/ardeaTrace \
//     --use seed=~lib/ardea-sdk/assembly/abort/ardeaSeed \
//     --path <dir holding ardea-sdk> -o ../abort.wasm
import { Bolt, BoltCollector, Tuple, registerBolt } from "ardea-sdk";
export * from "ardea-sdk/exports";

class Abort extends Bolt {
  execute(t: Tuple, c: BoltCollector): void {
    if (t.equals(0, "abort")) abort("as abort");
    if (t.equals(0, "throw")) throw new Error("as throw");
    c.emit().string(t.string(0));
  }
}

registerBolt(new Abort());
