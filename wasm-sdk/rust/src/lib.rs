//! Ardea guest SDK for Rust: write Ardea spouts and bolts, compiled to
//! WebAssembly (ABI v1, `wasm-sdk/ABI.md`).
//!
//! ```ignore
//! use ardea::{Bolt, BoltCollector, Result, Text, Tuple};
//!
//! struct Count;
//!
//! impl Bolt for Count {
//!     fn execute(&mut self, t: &Tuple, c: &mut BoltCollector) -> Result {
//!         let word = t.bytes("word");
//!         let n = c.state().add_int(word, 1);
//!         c.emit_anchored(t, (Text(word), n));
//!         c.ack(t);
//!         Ok(())
//!     }
//! }
//!
//! ardea::register_bolt!(Count);
//! ```
//!
//! Build a component folder with `ardea build DIR` (or see
//! `docs/sdk/rust.md` for the plain rustc and cargo commands). Build with
//! `-C panic=abort`: a panic is reported to the host with `ardea.error`
//! (`Execute: tuple 3 from lines/default task 1: panic: MESSAGE at
//! src/lib.rs:LINE:COL`) and then traps; in `execute` the host fails just
//! that tuple (the SDK's `ardea_cursor` names it), elsewhere the instance.
//!
//! The crate has no dependencies and builds with rustc 1.63 or newer.


pub mod codec;
mod context;
mod host;
mod manifest;
mod runtime;
mod state;
pub mod testing;
mod tuple;
mod values;

pub use codec::{ContextBlob, Input, Kind, Record, Stream, Value, KEY_SEP};
pub use context::{BoltCollector, Context, Logger, SpoutCollector, LEVEL_DEBUG, LEVEL_ERROR, LEVEL_INFO, LEVEL_WARN};
pub use host::Host;
pub use manifest::{Declarations, MANIFEST_VERSION, SDK_VERSION};
pub use runtime::{current_call, Bolt, Component, Error, Result, Runtime, Spout, Status};
#[doc(hidden)]
pub use runtime::__private;
pub use state::{Scan, ScanIter, State, DEFAULT_CACHE_BYTES, DEFAULT_CACHE_ENTRIES};
pub use tuple::{Anchor, FieldIndex, OwnedTuple, Tuple, KEY_SEP_BYTES};
pub use values::{Field, Null, Text, Values};

/// The guest ABI version this SDK implements.
pub const ABI_VERSION: i32 = 1;

/// Registers a bolt as the module's component and emits the ABI exports.
/// Use it once, at the crate root of a `cdylib`:
///
/// ```ignore
/// ardea::register_bolt!(MyBolt::new());
/// ```
///
/// The expression is evaluated once, when the host first calls the module.
/// Declarations may follow, each optional, in any order (see
/// [`Declarations`]): the streams and fields the bolt emits, the input
/// fields it reads by name and the config keys it reads. They make the
/// module's manifest (`ardea_manifest`), which `ardea run` checks the
/// topology against, and [`testing::Tester`] checks the bolt against:
///
/// ```ignore
/// ardea::register_bolt!(Split, emits: [("default", ["word"])], reads: ["line"], config: ["min_length"]);
/// ```
#[macro_export]
macro_rules! register_bolt {
    ($make:expr $(, $key:ident : [$($val:tt)*])* $(,)?) => {
        $crate::__ardea_exports!(
            "bolt",
            $crate::Component::Bolt(::std::boxed::Box::new($make)),
            $crate::__ardea_declarations!($($key: [$($val)*]),*)
        );
    };
}

/// Registers a spout as the module's component and emits the ABI exports
/// (see [`register_bolt!`]; a spout declares `emits` and `config`):
///
/// ```ignore
/// ardea::register_spout!(Lines::default(), emits: [("default", ["line"])], config: ["count"]);
/// ```
#[macro_export]
macro_rules! register_spout {
    ($make:expr $(, $key:ident : [$($val:tt)*])* $(,)?) => {
        $crate::__ardea_exports!(
            "spout",
            $crate::Component::Spout(::std::boxed::Box::new($make)),
            $crate::__ardea_declarations!($($key: [$($val)*]),*)
        );
    };
}

/// A [`testing::Tester`] for the component the crate registers, with its
/// declarations (use it in the crate's tests; the registration must be at
/// the crate root):
///
/// ```ignore
/// let mut t = ardea::tester!();
/// t.start().unwrap();
/// ```
#[macro_export]
macro_rules! tester {
    () => {
        $crate::testing::Tester::with_declarations(crate::__ardea_component(), crate::__ardea_declarations())
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __ardea_exports {
    ($kind:literal, $make:expr, $decl:expr) => {
        /// The registered component (the registration macro's expression).
        #[doc(hidden)]
        #[allow(dead_code)]
        fn __ardea_component() -> $crate::Component {
            $make
        }
        /// What the registration declares.
        #[doc(hidden)]
        #[allow(dead_code)]
        fn __ardea_declarations() -> $crate::Declarations {
            $decl
        }
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            fn __ardea_rt() -> &'static mut $crate::Runtime {
                $crate::__private::runtime(__ardea_component)
            }
            #[no_mangle]
            pub extern "C" fn ardea_abi_version() -> i32 {
                $crate::ABI_VERSION
            }
            #[no_mangle]
            pub extern "C" fn ardea_manifest() -> *const u8 {
                $crate::__private::manifest($kind, __ardea_declarations)
            }
            #[no_mangle]
            pub extern "C" fn ardea_buffer(size: i32) -> *mut u8 {
                __ardea_rt().buffer(size)
            }
            #[no_mangle]
            pub extern "C" fn ardea_open(n: i32) -> i32 {
                __ardea_rt().open(n)
            }
            #[no_mangle]
            pub extern "C" fn ardea_prepare(n: i32) -> i32 {
                __ardea_rt().prepare(n)
            }
            #[no_mangle]
            pub extern "C" fn ardea_next(max: i32) -> i32 {
                __ardea_rt().next(max)
            }
            #[no_mangle]
            pub extern "C" fn ardea_ack(n: i32) -> i32 {
                __ardea_rt().ack_fail(n, false)
            }
            #[no_mangle]
            pub extern "C" fn ardea_fail(n: i32) -> i32 {
                __ardea_rt().ack_fail(n, true)
            }
            #[no_mangle]
            pub extern "C" fn ardea_activate() -> i32 {
                __ardea_rt().activate(true)
            }
            #[no_mangle]
            pub extern "C" fn ardea_deactivate() -> i32 {
                __ardea_rt().activate(false)
            }
            #[no_mangle]
            pub extern "C" fn ardea_cursor() -> *const u32 {
                __ardea_rt().cursor_ptr()
            }
            #[no_mangle]
            pub extern "C" fn ardea_execute(n: i32) -> i32 {
                __ardea_rt().execute(n)
            }
            #[no_mangle]
            pub extern "C" fn ardea_tick() -> i32 {
                __ardea_rt().tick()
            }
            #[no_mangle]
            pub extern "C" fn ardea_finish() -> i32 {
                __ardea_rt().finish()
            }
            #[no_mangle]
            pub extern "C" fn ardea_close() -> i32 {
                __ardea_rt().close()
            }
        };
    };
}

#[cfg(test)]
mod tests;
