// split is the word-count example's split bolt in AssemblyScript: for each
// input tuple it splits field 0 ("line", a string) on Unicode white space
// exactly like Go's strings.Fields and emits one ("word") per word,
// anchored on the line, then acks the line. Words are emitted as views of
// the input (stringView), so splitting allocates nothing.
//
// Build (see ../BUILD.md; wasm-sdk/assemblyscript/build.sh rebuilds it):
//   go run ./cmd/ardea build examples/wordcount/assemblyscript/split -o examples/wordcount/assemblyscript/split.wasm
import { Bolt, BoltCollector, Tuple, registerBolt } from "ardea-sdk";
export * from "ardea-sdk/exports";

// ASCII white space (unicode.IsSpace): \t \n \v \f \r and space.
const asciiSpace = memory.data<u8>([
  0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
]);

// spaceAt returns the length of the non-ASCII white space character
// encoded at p (p < end), or 0. Such characters start with a lead byte
// (C2, E1, E2, E3), never a continuation byte, so scanning other bytes
// one at a time finds them where a UTF-8 decoder would (an invalid byte
// is one non-space character, as in Go).
// @ts-ignore: decorator
@inline function spaceAt(p: usize, end: usize): i32 {
  let b0 = load<u8>(p);
  if (b0 == 0xC2) { // U+0085, U+00A0
    if (end - p >= 2) {
      let b1 = load<u8>(p, 1);
      if (b1 == 0x85 || b1 == 0xA0) return 2;
    }
    return 0;
  }
  if (b0 < 0xE1 || b0 > 0xE3 || end - p < 3) return 0;
  let b1 = load<u8>(p, 1), b2 = load<u8>(p, 2);
  if (b0 == 0xE1) return b1 == 0x9A && b2 == 0x80 ? 3 : 0; // U+1680
  if (b0 == 0xE3) return b1 == 0x80 && b2 == 0x80 ? 3 : 0; // U+3000
  if (b1 == 0x80) { // U+2000..U+200A, U+2028, U+2029, U+202F
    return b2 <= 0x8A && b2 >= 0x80 || b2 == 0xA8 || b2 == 0xA9 || b2 == 0xAF ? 3 : 0;
  }
  return b1 == 0x81 && b2 == 0x9F ? 3 : 0; // U+205F
}

class Split extends Bolt {
  execute(t: Tuple, c: BoltCollector): void {
    let p = t.payloadPtr(0);
    let end = p + <usize>t.payloadLen(0);
    let start: usize = 0; // start of the current word, or 0 between words
    while (p < end) {
      let b = load<u8>(p);
      let size = 1;
      let space: bool;
      if (b < 0x80) {
        space = load<u8>(asciiSpace + <usize>b) != 0;
      } else {
        size = spaceAt(p, end);
        space = size != 0;
        if (!space) size = 1;
      }
      if (space) {
        if (start != 0) {
          c.emitAnchored(t).stringView(start, <i32>(p - start));
          start = 0;
        }
      } else if (start == 0) {
        start = p;
      }
      p += <usize>size;
    }
    if (start != 0) c.emitAnchored(t).stringView(start, <i32>(end - start));
    c.ack(t);
  }
}

// The manifest (ardea build stores it; ardea run checks the topology with
// it). split reads field 0 by position, whatever its name: no reads.
registerBolt(new Split()).emits("default", ["word"]);
