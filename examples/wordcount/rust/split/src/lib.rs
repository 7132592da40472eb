// The word-count example's split bolt in Rust: for each input tuple it
// splits field 0 (`line`, a string) on Unicode white space exactly like
// Go's strings.Fields and emits one (`word`) per word, anchored on the
// line, then acks the line. Words are emitted as views of the input line
// (ardea::Text), so splitting allocates nothing per word.
//
// Build (from the repository root; wasm-sdk/rust/build.sh does this):
//
//   ardea build examples/wordcount/rust/split -o examples/wordcount/rust/split.wasm
//
// or with plain rustc (see ../BUILD.md for the exact flags):
//
//   /usr/bin/rustc --edition 2021 --crate-type cdylib --crate-name split --target wasm32-wasi \
//     -C opt-level=3 -C panic=abort -C codegen-units=1 -C lto -C strip=debuginfo -C debuginfo=0 \
//     --extern ardea=libardea.rlib -o examples/wordcount/rust/split.wasm examples/wordcount/rust/split/src/lib.rs

use ardea::{Bolt, BoltCollector, Result, Text, Tuple};

/// Byte classes: 0 a non-space byte, 1 an ASCII space, 2 the first byte of
/// a multi-byte space (U+0085, U+00A0: C2; U+1680: E1; U+2000..U+200A,
/// U+2028, U+2029, U+202F, U+205F: E2; U+3000: E3).
static CLASS: [u8; 256] = {
    let mut c = [0u8; 256];
    c[b'\t' as usize] = 1;
    c[b'\n' as usize] = 1;
    c[0x0B] = 1;
    c[0x0C] = 1;
    c[b'\r' as usize] = 1;
    c[b' ' as usize] = 1;
    c[0xC2] = 2;
    c[0xE1] = 2;
    c[0xE2] = 2;
    c[0xE3] = 2;
    c
};

/// The length of the multi-byte white space character at the start of
/// `b`, or 0 if there is none. Only exact encodings of the spaces match;
/// any other (valid or invalid) sequence is non-space, which is what
/// strings.Fields does: bytes that are not spaces never start one, and
/// an invalid byte decodes as one non-space U+FFFD.
#[inline]
fn multibyte_space(b: &[u8]) -> usize {
    match b {
        [0xC2, 0x85, ..] | [0xC2, 0xA0, ..] => 2,
        [0xE1, 0x9A, 0x80, ..] => 3,
        [0xE2, 0x80, 0x80..=0x8A, ..] | [0xE2, 0x80, 0xA8, ..] | [0xE2, 0x80, 0xA9, ..] | [0xE2, 0x80, 0xAF, ..] => 3,
        [0xE2, 0x81, 0x9F, ..] => 3,
        [0xE3, 0x80, 0x80, ..] => 3,
        _ => 0,
    }
}

struct Split;

impl Bolt for Split {
    fn execute(&mut self, t: &Tuple, c: &mut BoltCollector) -> Result {
        let line = t.bytes(0);
        let mut start = usize::MAX; // start of the current word, or MAX between words
        let mut i = 0;
        while i < line.len() {
            let size = match CLASS[line[i] as usize] {
                0 => 0,
                1 => 1,
                _ => multibyte_space(&line[i..]),
            };
            if size == 0 {
                if start == usize::MAX {
                    start = i;
                }
                i += 1;
                continue;
            }
            if start != usize::MAX {
                c.emit_anchored(t, (Text(&line[start..i]),));
                start = usize::MAX;
            }
            i += size;
        }
        if start != usize::MAX {
            c.emit_anchored(t, (Text(&line[start..]),));
        }
        c.ack(t);
        Ok(())
    }
}

// The declarations make the module's manifest: `ardea run` checks the
// topology's streams against them before it starts. Split reads its
// input's only field (the line) by index, whatever its name, so it
// declares no reads.
ardea::register_bolt!(Split, emits: [("default", ["word"])]);

#[cfg(test)]
mod tests {
    fn words(line: &[u8]) -> (Vec<String>, Vec<u64>) {
        let mut t = ardea::tester!().input("lines", &["line"]);
        t.start().unwrap();
        t.execute_values(9, &[ardea::Value::String(line)]).unwrap();
        let out = t.take_output();
        assert!(out.on("default").iter().all(|e| e.anchors == [9]), "every word is anchored on its line");
        (out.firsts("default"), out.acks)
    }

    #[test]
    fn splits_like_strings_fields() {
        let (got, acks) = words("  the\tquick\u{3000}brown\u{85}fox\u{a0}\u{2028}jumps ".as_bytes());
        assert_eq!(got, ["the", "quick", "brown", "fox", "jumps"]);
        assert_eq!(acks, [9]);
        // An invalid byte is one non-space character; U+200B is not a space.
        let (got, _) = words(b"a\xffb\xe2\x80\x8bc \xc2");
        assert_eq!(got.len(), 2, "{:?}", got);
    }
}
