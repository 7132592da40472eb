// The word-count example's count bolt in Rust. It is fields-grouped on
// `word` and keeps each word's count in the task's host-side state under
// the word's own bytes (the ABI's rule for state that moves with its
// keys), int64 little endian, so counts survive a module restart or swap
// and a count written by another language's count bolt carries on. The
// SDK's write-back cache sends a batch's changed counts to the host in one
// state_write when the batch is done. Each time a count changes it emits
// (`word`, `count`) anchored on the input, then acks it.
//
// Build (from the repository root; wasm-sdk/rust/build.sh does this):
//
//   ardea build examples/wordcount/rust/count -o examples/wordcount/rust/count.wasm
//
// or with plain rustc (see ../BUILD.md for the exact flags):
//
//   /usr/bin/rustc --edition 2021 --crate-type cdylib --crate-name count --target wasm32-wasi \
//     -C opt-level=3 -C panic=abort -C codegen-units=1 -C lto -C strip=debuginfo -C debuginfo=0 \
//     --extern ardea=libardea.rlib -o examples/wordcount/rust/count.wasm examples/wordcount/rust/count/src/lib.rs

use ardea::{Bolt, BoltCollector, Result, Text, Tuple};

struct Count;

impl Bolt for Count {
    fn execute(&mut self, t: &Tuple, c: &mut BoltCollector) -> Result {
        // The key is a view of the input word; the cache copies it only
        // when the word is new to it, and the word is emitted from the
        // same view, so counting allocates nothing.
        let word = t.bytes("word");
        let n = c.state().add_int(word, 1);
        c.emit_anchored(t, (Text(word), n));
        c.ack(t);
        Ok(())
    }
}

// The declarations make the module's manifest: `ardea run` checks the
// topology's streams against them before it starts.
ardea::register_bolt!(Count, emits: [("default", ["word", "count"])], reads: ["word"]);

#[cfg(test)]
mod tests {
    #[test]
    fn counts_in_host_state() {
        let mut t = ardea::tester!();
        t.set_state_int("b", 41);
        t.start().unwrap();
        for (id, w) in [(1, "a"), (2, "b"), (3, "a")] {
            t.execute_strs(id, &[w]).unwrap();
        }
        assert_eq!(
            t.take_ops_text(),
            ["emit s0 [1] (\"a\", 1)", "ack 1", "emit s0 [2] (\"b\", 42)", "ack 2", "emit s0 [3] (\"a\", 2)", "ack 3"]
        );
        assert_eq!(t.state_int("a"), Some(2));
    }
}
