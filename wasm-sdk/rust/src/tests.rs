//! The SDK against the shared ABI vectors in wasm-sdk/testdata (formats in
//! its README.md) and its own behaviour. Run natively:
//!
//!   rustc --edition 2021 --test src/lib.rs -o /tmp/ardea-tests && /tmp/ardea-tests
//!
//! The vectors are found in $ARDEA_TESTDATA, else ../testdata from the
//! crate (cargo) or from the current directory.
//!
//! The tests live in the files of src/tests/, by topic; util.rs holds
//! their shared helpers.

#![allow(clippy::type_complexity)]

mod util;

// The shared vectors, one module per file (or pair of files).
mod context; // context.txt, msgids.txt
mod hash; // hash.txt
mod invalid; // invalid.txt
mod ops; // ops.txt
mod values; // values.txt, batch.txt

// Behaviour beyond the vectors.
mod emit;
mod harness;
mod runtime;
mod state;
