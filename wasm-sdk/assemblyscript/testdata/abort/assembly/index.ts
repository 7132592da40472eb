// abort: a bolt whose execute calls abort("as abort"). The SDK's abort
// handler reports "Execute: as abort at <file>:<line>:<column>" with
// ardea.error and traps; the host must fail the instance with that text.
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
    abort("as abort");
  }
}

registerBolt(new Abort());
