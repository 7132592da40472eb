//! The host's side of the ABI (the `ardea` import module). In a wasm
//! module it is the real imports; native tests use
//! [`crate::testing::TestHost`].

/// The host functions of ABI v1. Slices passed in are only valid during
/// the call.
pub trait Host {
    /// `ardea.emit`: a sequence of ops.
    fn emit(&self, ops: &[u8]);
    /// `ardea.log`: a log line (levels as Go's slog).
    fn log(&self, level: i32, msg: &str);
    /// `ardea.error`: the current call's error text.
    fn error(&self, msg: &str);
    /// `ardea.state_get`: the value's length (copied if it fits), or -1.
    fn state_get(&self, key: &[u8], buf: &mut [u8]) -> i32;
    /// `ardea.state_write`: `(u8 op, u32 klen, key, u32 vlen, value)*`.
    fn state_write(&self, ops: &[u8]);
    /// `ardea.state_scan`: the encoded size (copied if it fits).
    fn state_scan(&self, prefix: &[u8], buf: &mut [u8]) -> i32;
    /// `ardea.metric`: adds delta to a custom counter.
    fn metric(&self, name: &str, delta: i64);
    /// `ardea.gauge`: sets a user gauge.
    fn gauge(&self, name: &str, value: f64);
    /// `ardea.observe`: records a value in a user histogram.
    fn observe(&self, name: &str, value: i64);
    /// `ardea.now`: Unix nanoseconds.
    fn now(&self) -> i64;
}

#[cfg(target_arch = "wasm32")]
mod imports {
    #[link(wasm_import_module = "ardea")]
    extern "C" {
        #[link_name = "emit"]
        pub fn ardea_emit(ptr: *const u8, len: usize);
        #[link_name = "log"]
        pub fn ardea_log(level: i32, ptr: *const u8, len: usize);
        #[link_name = "error"]
        pub fn ardea_error(ptr: *const u8, len: usize);
        #[link_name = "state_get"]
        pub fn ardea_state_get(kptr: *const u8, klen: usize, vptr: *mut u8, vcap: usize) -> i32;
        #[link_name = "state_write"]
        pub fn ardea_state_write(ptr: *const u8, len: usize);
        #[link_name = "state_scan"]
        pub fn ardea_state_scan(pptr: *const u8, plen: usize, bptr: *mut u8, bcap: usize) -> i32;
        #[link_name = "metric"]
        pub fn ardea_metric(nptr: *const u8, nlen: usize, delta: i64);
        #[link_name = "gauge"]
        pub fn ardea_gauge(nptr: *const u8, nlen: usize, value: f64);
        #[link_name = "observe"]
        pub fn ardea_observe(nptr: *const u8, nlen: usize, value: i64);
        #[link_name = "now"]
        pub fn ardea_now() -> i64;
    }
}

/// The real host: the module's `ardea` imports.
#[cfg(target_arch = "wasm32")]
pub struct WasmHost;

#[cfg(target_arch = "wasm32")]
impl Host for WasmHost {
    fn emit(&self, ops: &[u8]) {
        unsafe { imports::ardea_emit(ops.as_ptr(), ops.len()) }
    }
    fn log(&self, level: i32, msg: &str) {
        unsafe { imports::ardea_log(level, msg.as_ptr(), msg.len()) }
    }
    fn error(&self, msg: &str) {
        unsafe { imports::ardea_error(msg.as_ptr(), msg.len()) }
    }
    fn state_get(&self, key: &[u8], buf: &mut [u8]) -> i32 {
        unsafe { imports::ardea_state_get(key.as_ptr(), key.len(), buf.as_mut_ptr(), buf.len()) }
    }
    fn state_write(&self, ops: &[u8]) {
        unsafe { imports::ardea_state_write(ops.as_ptr(), ops.len()) }
    }
    fn state_scan(&self, prefix: &[u8], buf: &mut [u8]) -> i32 {
        unsafe { imports::ardea_state_scan(prefix.as_ptr(), prefix.len(), buf.as_mut_ptr(), buf.len()) }
    }
    fn metric(&self, name: &str, delta: i64) {
        unsafe { imports::ardea_metric(name.as_ptr(), name.len(), delta) }
    }
    fn gauge(&self, name: &str, value: f64) {
        unsafe { imports::ardea_gauge(name.as_ptr(), name.len(), value) }
    }
    fn observe(&self, name: &str, value: i64) {
        unsafe { imports::ardea_observe(name.as_ptr(), name.len(), value) }
    }
    fn now(&self) -> i64 {
        unsafe { imports::ardea_now() }
    }
}

/// Reports a panic's text with `ardea.error` before the module traps (the
/// host then leads its error with it).
#[cfg(target_arch = "wasm32")]
pub(crate) fn report_panic(msg: &str) {
    unsafe { imports::ardea_error(msg.as_ptr(), msg.len()) }
}
