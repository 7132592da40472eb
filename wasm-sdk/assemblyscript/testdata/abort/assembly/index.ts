// abort: a bolt that fails on purpose. By its input word (field 0):
//   "abort" or "panic": calls abort("as abort");
//   "throw": throws new Error("as throw");
//   "divzero": divides by zero in average (a trap without abort: the
//              host's stack trace names average, from the name section;
//              "avg...": calls it too, so that -O3 does not inline it);
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

// average is the mean of s's char codes over n (0 divides by zero).
function average(s: string, n: i32): i32 {
  let sum = 0;
  for (let i = 0; i < s.length; i++) sum += s.charCodeAt(i) * (i + 1);
  for (let i = s.length - 1; i >= 0; i--) sum ^= s.charCodeAt(i) << (i & 7);
  return sum / n;
}

class Abort extends Bolt {
  execute(t: Tuple, c: BoltCollector): void {
    if (t.equals(0, "abort") || t.equals(0, "panic")) abort("as abort");
    if (t.equals(0, "throw")) throw new Error("as throw");
    if (t.equals(0, "divzero")) {
      c.emit().string(average(t.string(0), 0).toString());
      return;
    }
    if (t.hasPrefix(0, "avg")) {
      c.emit().string(average(t.string(0), 3).toString());
      return;
    }
    c.emit().string(t.string(0));
  }
}

registerBolt(new Abort());
