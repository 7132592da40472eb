// A valid bolt built as a WASI command (a bin crate with main, so the
// module exports _start): the host must refuse it as not a reactor
// (wasm-sdk/conformance/SPEC.md). Build (wasm-sdk/rust/build.sh, after
// building the SDK into libardea.rlib):
//
//   /usr/bin/rustc --edition 2021 --crate-type bin --crate-name command --target wasm32-wasi \
//     -C opt-level=3 -C panic=abort -C codegen-units=1 -C lto -C strip=debuginfo -C debuginfo=0 \
//     --extern ardea=libardea.rlib -o wasm-sdk/rust/testdata/command.wasm wasm-sdk/rust/testdata/command/src/main.rs

struct Ack;

// The default execute acks every tuple.
impl ardea::Bolt for Ack {}

ardea::register_bolt!(Ack);

fn main() {}
