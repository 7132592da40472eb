// The poison bolt with the AssemblyScript SDK: it upper-cases field 0
// ("line"), emits it anchored and acks the line; a line holding "poison"
// throws, which aborts with the message and its source location, and the
// host fails that tuple (the SDK exports ardea_cursor).
// Build: host/testdata/poison/build.sh.
import { Bolt, BoltCollector, Tuple, registerBolt } from "ardea-sdk";
export * from "ardea-sdk/exports";

class Upper extends Bolt {
  execute(t: Tuple, c: BoltCollector): void {
    let line = t.string(0);
    if (line.includes("poison")) {
      throw new Error("poison tuple: " + line);
    }
    c.emitAnchored(t).string(line.toUpperCase());
    c.ack(t);
  }
}

registerBolt(new Upper()).emits("default", ["line"]).reads(["line"]);
