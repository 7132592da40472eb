//! Dispatch of the ABI's lifecycle exports to the registered component.

use std::cell::Cell;
use std::rc::Rc;

use crate::codec::{check_msgids, le16, le32, le64, scan_values, ContextBlob, OP_ACK, RECORD_HEADER};
use crate::context::{BoltCollector, Context, SpoutCollector};
use crate::host::Host;
use crate::tuple::Tuple;

/// The error type of component methods: any error converts with `?`, and
/// so do strings (`Err("bad input".into())`).
pub type Error = Box<dyn std::error::Error>;

/// The result of component methods.
pub type Result<T = ()> = std::result::Result<T, Error>;

/// A spout's answer to `next`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Emitted zero or more tuples; call again. The SDK calls `next` again
    /// within the same host call while it emits and the host's budget
    /// ([`SpoutCollector::remaining`]) is not used up.
    More = 0,
    /// Nothing to emit now; the host backs off briefly.
    Idle = 1,
    /// The input is exhausted; `next` is never called again.
    Done = 2,
}

/// A source. Every method has a default (a no-op; `next` reports Done):
/// implement what you need.
///
/// Every method runs inside one host call; what it emits is sent when the
/// call returns. Returning an error (or panicking) fails the task
/// instance.
pub trait Spout {
    /// Called once before anything else.
    fn open(&mut self, _ctx: &mut Context) -> Result {
        Ok(())
    }
    /// Emits up to `c.remaining()` tuples and says whether there is more.
    fn next(&mut self, _c: &mut SpoutCollector) -> Result<Status> {
        Ok(Status::Done)
    }
    /// The tuple tree of a message id has been fully processed.
    fn ack(&mut self, _msgid: u64, _c: &mut SpoutCollector) -> Result {
        Ok(())
    }
    /// The tuple tree of a message id failed or timed out; `c` may emit
    /// (for example to replay it).
    fn fail(&mut self, _msgid: u64, _c: &mut SpoutCollector) -> Result {
        Ok(())
    }
    /// Resume emitting.
    fn activate(&mut self, _ctx: &mut Context) -> Result {
        Ok(())
    }
    /// Stop emitting: `next` is not called until `activate`.
    fn deactivate(&mut self, _ctx: &mut Context) -> Result {
        Ok(())
    }
    /// The task is stopping. It may not emit.
    fn close(&mut self, _ctx: &mut Context) -> Result {
        Ok(())
    }
}

/// Processes tuples. Every method has a default (a no-op; `execute` acks
/// the tuple): implement what you need.
///
/// An error returned from (or a panic in) `execute` fails that tuple: the
/// SDK stores which record of the batch was executing (`ardea_cursor`), the
/// host drops what the call emitted and wrote to state, restarts the
/// instance with its state kept and fails the tuple by the topology's
/// delivery mode, then runs the rest of the batch. An error or panic in
/// another method fails the task instance. To fail a tuple without an
/// error call `c.fail(t)` and return `Ok(())`.
pub trait Bolt {
    /// Called once before anything else.
    fn prepare(&mut self, _ctx: &mut Context) -> Result {
        Ok(())
    }
    /// Processes one input tuple. `t` views the input batch and is valid
    /// only during the call (keep `t.to_owned_tuple()` or `t.id()`).
    fn execute(&mut self, t: &Tuple, c: &mut BoltCollector) -> Result {
        c.ack(t);
        Ok(())
    }
    /// Called every `topology.tick.tuple.freq.ms`.
    fn tick(&mut self, _c: &mut BoltCollector) -> Result {
        Ok(())
    }
    /// Every upstream task has finished (finite input): emit final results.
    fn finish(&mut self, _c: &mut BoltCollector) -> Result {
        Ok(())
    }
    /// The task is stopping. It may not emit.
    fn close(&mut self, _ctx: &mut Context) -> Result {
        Ok(())
    }
}

/// The module's component (see [`crate::register_bolt!`] and
/// [`crate::register_spout!`]).
pub enum Component {
    Spout(Box<dyn Spout>),
    Bolt(Box<dyn Bolt>),
}

thread_local! {
    /// The current lifecycle call, for the panic hook's message.
    static CALL: Cell<&'static str> = const { Cell::new("") };
    /// The tuple whose `execute` is running (a `*const Tuple`), or null:
    /// the panic hook names it.
    static TUPLE: Cell<*const ()> = const { Cell::new(std::ptr::null()) };
}

/// The lifecycle call under way ("" outside one).
pub fn current_call() -> &'static str {
    CALL.with(|c| c.get())
}

/// The text a panic reports (with `ardea.error` in a module, as the call's
/// error in [`crate::testing::Tester`]): the call, the tuple being executed,
/// the message and where user code panicked, e.g.
/// `Execute: tuple 3 from lines/default task 1: panic: no word at src/lib.rs:12:9`.
pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send), loc: Option<&std::panic::Location<'_>>) -> String {
    let msg = if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "Box<dyn Any>".to_string()
    };
    let mut text = String::new();
    let call = current_call();
    if !call.is_empty() {
        text += call;
        text += ": ";
    }
    let t = TUPLE.with(|c| c.get());
    if call == "Execute" && !t.is_null() {
        // SAFETY: TUPLE is set only while the tuple it points to is alive
        // (around the user's execute), on this thread.
        let t = unsafe { &*(t as *const Tuple<'static>) };
        text += &format!("tuple {} from {}/{} task {}: ", t.id, t.input.component, t.input.stream, t.src);
    }
    text += "panic: ";
    text += &msg;
    if let Some(l) = loc {
        text += &format!(" at {}:{}:{}", l.file(), l.line(), l.column());
    }
    text
}

/// Runs the component: one per module, driven by the ABI exports (or by
/// [`crate::testing::Tester`] natively).
pub struct Runtime {
    comp: Component,
    ctx: Context,
    inbuf: Vec<u8>,
    offs: Vec<u32>,
    ready: bool,
    done: bool,
    /// The index of the batch record being executed (`ardea_cursor`).
    cursor: u32,
}

impl Runtime {
    pub fn new(host: Rc<dyn Host>, comp: Component) -> Runtime {
        Runtime { comp, ctx: Context::new(host), inbuf: Vec::new(), offs: Vec::new(), ready: false, done: false, cursor: 0 }
    }

    /// The input buffer, at least `size` bytes. It is replaced only when
    /// the host asks for more room (the host caches its address).
    pub fn buffer(&mut self, size: i32) -> *mut u8 {
        let size = size.max(0) as usize;
        if self.inbuf.is_empty() || size > self.inbuf.len() {
            let n = size.max(2 * self.inbuf.len()).max(64 << 10);
            self.inbuf = vec![0; n];
        }
        self.inbuf.as_mut_ptr()
    }

    /// The input buffer as a slice of `len` bytes (tests write inputs
    /// there, as the host does).
    pub fn input_mut(&mut self, len: usize) -> &mut [u8] {
        self.buffer(len as i32);
        &mut self.inbuf[..len]
    }

    fn begin(&mut self, call: &'static str, may_emit: bool) {
        CALL.with(|c| c.set(call));
        self.ctx.call = call;
        self.ctx.can_emit = may_emit;
        self.ctx.emit_err = None;
    }

    /// Completes a successful call: one state_write with the dirty state,
    /// then the pending emit ops, then metrics. A deferred emit error
    /// fails it.
    fn end(&mut self, status: i32) -> i32 {
        if let Some(e) = self.ctx.emit_err.take() {
            return self.fail(e);
        }
        self.ctx.can_emit = false;
        self.ctx.state.flush();
        self.ctx.flush_out();
        self.ctx.flush_metrics();
        CALL.with(|c| c.set(""));
        status
    }

    /// Reports msg as the call's error and drops what the call had not
    /// sent yet (emit ops, dirty state).
    fn fail(&mut self, msg: String) -> i32 {
        let text = format!("{}: {}", self.ctx.call, msg);
        self.fail_text(&text)
    }

    /// Fails the call with a complete error text (a panic's, which names
    /// the call itself): what [`crate::testing::Tester`] does when a call
    /// panics, as a module reports the panic before it traps.
    pub fn fail_text(&mut self, text: &str) -> i32 {
        TUPLE.with(|c| c.set(std::ptr::null()));
        self.ctx.can_emit = false;
        self.ctx.out.clear();
        self.ctx.state.discard();
        self.ctx.flush_metrics();
        self.ctx.cur = 0;
        self.ctx.auto_anchor = 0;
        self.ctx.host.error(text);
        CALL.with(|c| c.set(""));
        -1
    }

    /// The 0-based index of the batch record the last `execute` processed
    /// last: after a failing `execute`, the failing tuple's (ABI
    /// `ardea_cursor`).
    pub fn cursor(&self) -> u32 {
        self.cursor
    }

    /// The cursor's address, fixed for the runtime's life (the
    /// `ardea_cursor` export).
    pub fn cursor_ptr(&self) -> *const u32 {
        &self.cursor
    }

    fn kind_error(&self, export: &str, want_bolt: bool) -> String {
        let (want, have) = if want_bolt { ("bolt", "spout") } else { ("spout", "bolt") };
        format!("{} is a {} export, but this module registers a {}", export, want, have)
    }

    fn input(&self, n: i32) -> std::result::Result<&[u8], String> {
        if n < 0 || n as usize > self.inbuf.len() {
            return Err(format!("input length {} exceeds the {}-byte buffer from ardea_buffer", n, self.inbuf.len()));
        }
        Ok(&self.inbuf[..n as usize])
    }

    fn setup(&mut self, n: i32) -> std::result::Result<(), String> {
        let blob = ContextBlob::decode(self.input(n)?).map_err(|e| e.to_string())?;
        self.ctx.setup(blob)?;
        self.ready = false;
        self.done = false;
        Ok(())
    }

    /// `ardea_open`.
    pub fn open(&mut self, n: i32) -> i32 {
        self.begin("Open", false);
        if !matches!(self.comp, Component::Spout(_)) {
            let e = self.kind_error("ardea_open", false);
            return self.fail(e);
        }
        if let Err(e) = self.setup(n) {
            return self.fail(e);
        }
        self.ctx.can_emit = true;
        self.ctx.emitted = 0;
        self.ctx.max = 0;
        if let Component::Spout(s) = &mut self.comp {
            if let Err(e) = s.open(&mut self.ctx) {
                return self.fail(e.to_string());
            }
        }
        self.ready = true;
        self.end(0)
    }

    /// `ardea_prepare`.
    pub fn prepare(&mut self, n: i32) -> i32 {
        self.begin("Prepare", false);
        if !matches!(self.comp, Component::Bolt(_)) {
            let e = self.kind_error("ardea_prepare", true);
            return self.fail(e);
        }
        if let Err(e) = self.setup(n) {
            return self.fail(e);
        }
        self.ctx.can_emit = true;
        if let Component::Bolt(b) = &mut self.comp {
            if let Err(e) = b.prepare(&mut self.ctx) {
                return self.fail(e.to_string());
            }
        }
        self.ready = true;
        self.end(0)
    }

    /// Checks that an export fits the registered component.
    fn check(&self, export: &str, bolt: bool) -> std::result::Result<(), String> {
        let is_bolt = matches!(self.comp, Component::Bolt(_));
        if bolt != is_bolt {
            return Err(self.kind_error(export, bolt));
        }
        if !self.ready {
            let first = if bolt { "ardea_prepare" } else { "ardea_open" };
            return Err(format!("{} called before a successful {}", export, first));
        }
        Ok(())
    }

    /// `ardea_next`.
    pub fn next(&mut self, max: i32) -> i32 {
        self.begin("Next", true);
        if let Err(e) = self.check("ardea_next", false) {
            return self.fail(e);
        }
        if self.done {
            return self.end(Status::Done as i32);
        }
        self.ctx.max = max.max(0) as usize;
        self.ctx.emitted = 0;
        let s = match &mut self.comp {
            Component::Spout(s) => s,
            Component::Bolt(_) => unreachable!(),
        };
        loop {
            let before = self.ctx.emitted;
            let st = match s.next(&mut SpoutCollector { ctx: &mut self.ctx }) {
                Ok(st) => st,
                Err(e) => return self.fail(e.to_string()),
            };
            match st {
                Status::More => {
                    if self.ctx.emitted == before || self.ctx.emitted >= self.ctx.max || self.ctx.emit_err.is_some() {
                        return self.end(Status::More as i32);
                    }
                }
                Status::Idle => return self.end(Status::Idle as i32),
                Status::Done => {
                    self.done = true;
                    return self.end(Status::Done as i32);
                }
            }
        }
    }

    /// `ardea_ack` (fail false) and `ardea_fail` (fail true).
    pub fn ack_fail(&mut self, n: i32, fail: bool) -> i32 {
        let (call, export) = if fail { ("Fail", "ardea_fail") } else { ("Ack", "ardea_ack") };
        self.begin(call, true);
        if let Err(e) = self.check(export, false) {
            return self.fail(e);
        }
        let count = match self.input(n).and_then(|b| check_msgids(b).map_err(|e| e.to_string())) {
            Ok(c) => c,
            Err(e) => return self.fail(e),
        };
        self.ctx.max = 0;
        self.ctx.emitted = 0;
        let Runtime { comp, ctx, inbuf, .. } = self;
        let s = match comp {
            Component::Spout(s) => s,
            Component::Bolt(_) => unreachable!(),
        };
        for i in 0..count {
            let id = le64(&inbuf[4 + 8 * i..]);
            let mut c = SpoutCollector { ctx };
            let r = if fail { s.fail(id, &mut c) } else { s.ack(id, &mut c) };
            if let Err(e) = r {
                return self.fail(e.to_string());
            }
        }
        self.end(0)
    }

    /// `ardea_activate` (on true) and `ardea_deactivate`.
    pub fn activate(&mut self, on: bool) -> i32 {
        let (call, export) = if on { ("Activate", "ardea_activate") } else { ("Deactivate", "ardea_deactivate") };
        self.begin(call, false);
        if let Err(e) = self.check(export, false) {
            return self.fail(e);
        }
        if let Component::Spout(s) = &mut self.comp {
            let r = if on { s.activate(&mut self.ctx) } else { s.deactivate(&mut self.ctx) };
            if let Err(e) = r {
                return self.fail(e.to_string());
            }
        }
        self.end(0)
    }

    /// `ardea_execute`.
    pub fn execute(&mut self, n: i32) -> i32 {
        self.begin("Execute", true);
        if let Err(e) = self.check("ardea_execute", true) {
            return self.fail(e);
        }
        if n < 4 || n as usize > self.inbuf.len() {
            let e = match self.input(n) {
                Err(e) => e,
                Ok(_) => "batch: short header".to_string(),
            };
            return self.fail(e);
        }
        let Runtime { comp, ctx, inbuf, offs, cursor, .. } = self;
        let b = match comp {
            Component::Bolt(b) => b,
            Component::Spout(_) => unreachable!(),
        };
        let src = &inbuf[..n as usize];
        let inputs = ctx.inputs.clone();
        let mut off = 4usize;
        let mut res = Ok(());
        let count = le32(src);
        for i in 0..count {
            // The cursor: one store per record, read by the host only if
            // the call fails.
            *cursor = i;
            if src.len() - off < RECORD_HEADER {
                res = Err(format!("batch record {}: short record header", i));
                break;
            }
            let l = le32(&src[off..]) as usize;
            if l < RECORD_HEADER - 4 || src.len() - off - 4 < l {
                res = Err(format!("batch record {}: length {} does not fit the batch", i, l));
                break;
            }
            let rec = &src[off + 4..off + 4 + l];
            off += 4 + l;
            let idx = le16(rec);
            let input = match inputs.get(idx as usize) {
                Some(x) => x,
                None => {
                    res = Err(format!("batch record {}: input index {}, but the context declares {} inputs", i, idx, inputs.len()));
                    break;
                }
            };
            let src_task = le32(&rec[2..]);
            let vals = &rec[RECORD_HEADER - 4..];
            if vals.len() >= 7 && vals[0] == 1 && vals[1] == 0 && (vals[2] == 2 || vals[2] == 1) && le32(&vals[3..]) as usize == vals.len() - 7 {
                // One string or bytes field (split's lines, count's words).
                offs.clear();
                offs.push(2);
            } else if let Err(e) = scan_values(vals, offs) {
                res = Err(format!("batch record {} from {}/{} task {}: {}", i, input.component, input.stream, src_task, e));
                break;
            }
            let t = Tuple { raw: vals, offs, id: le64(&rec[6..]), src: src_task, idx, input };
            ctx.cur = t.id;
            ctx.cur_done = false;
            if !ctx.manual_ack {
                ctx.auto_anchor = t.id;
            }
            TUPLE.with(|c| c.set(&t as *const Tuple as *const ()));
            let r = b.execute(&t, &mut BoltCollector { ctx });
            TUPLE.with(|c| c.set(std::ptr::null()));
            if r.is_ok() && !ctx.manual_ack && t.id != 0 && !ctx.cur_done {
                ctx.ack_fail(OP_ACK, t.id);
            }
            ctx.cur = 0;
            ctx.auto_anchor = 0;
            if let Err(e) = r {
                res = Err(format!("tuple {} from {}/{} task {}: {}", t.id, input.component, input.stream, src_task, e));
                break;
            }
        }
        if res.is_ok() && off != src.len() {
            res = Err(format!("batch: {} trailing bytes after {} records", src.len() - off, count));
        }
        match res {
            Ok(()) => self.end(0),
            Err(e) => self.fail(e),
        }
    }

    /// `ardea_tick`.
    pub fn tick(&mut self) -> i32 {
        self.bolt_call("Tick", "ardea_tick", |b, c| b.tick(c))
    }

    /// `ardea_finish`.
    pub fn finish(&mut self) -> i32 {
        self.bolt_call("Finish", "ardea_finish", |b, c| b.finish(c))
    }

    fn bolt_call(&mut self, call: &'static str, export: &str, f: impl FnOnce(&mut dyn Bolt, &mut BoltCollector) -> Result) -> i32 {
        self.begin(call, true);
        if let Err(e) = self.check(export, true) {
            return self.fail(e);
        }
        if let Component::Bolt(b) = &mut self.comp {
            if let Err(e) = f(b.as_mut(), &mut BoltCollector { ctx: &mut self.ctx }) {
                return self.fail(e.to_string());
            }
        }
        self.end(0)
    }

    /// `ardea_close`.
    pub fn close(&mut self) -> i32 {
        self.begin("Close", false);
        let r = match &mut self.comp {
            Component::Spout(s) => s.close(&mut self.ctx),
            Component::Bolt(b) => b.close(&mut self.ctx),
        };
        if let Err(e) = r {
            return self.fail(e.to_string());
        }
        self.ready = false;
        self.end(0)
    }

    /// The context (tests).
    pub fn context(&mut self) -> &mut Context {
        &mut self.ctx
    }
}

/// Support for the registration macros; not a public API.
#[doc(hidden)]
pub mod __private {
    #[cfg(target_arch = "wasm32")]
    pub use self::wasm::{manifest, runtime};

    #[cfg(target_arch = "wasm32")]
    mod wasm {
        use super::super::{Component, Runtime};
        use crate::host::{report_panic, WasmHost};
        use std::rc::Rc;

        static mut RT: Option<Runtime> = None;
        static mut MANIFEST: Vec<u8> = Vec::new();

        /// The `ardea_manifest` export: `u32 len` and the manifest's JSON,
        /// valid until the next call. It calls no host import and does not
        /// create the component.
        pub fn manifest(kind: &str, decl: fn() -> crate::Declarations) -> *const u8 {
            let json = decl().manifest_json(kind);
            // SAFETY: single-threaded; exports do not nest.
            let m = unsafe { &mut *std::ptr::addr_of_mut!(MANIFEST) };
            m.clear();
            m.extend_from_slice(&(json.len() as u32).to_le_bytes());
            m.extend_from_slice(json.as_bytes());
            m.as_ptr()
        }

        /// The module's runtime, created on first use with the
        /// component `make` returns. Wasm runs one thread, and every
        /// export takes it once, so the reference is never aliased.
        pub fn runtime(make: fn() -> Component) -> &'static mut Runtime {
            // SAFETY: single-threaded; exports do not nest.
            let rt = unsafe { &mut *std::ptr::addr_of_mut!(RT) };
            if rt.is_none() {
                // A panic anywhere (user code or the SDK) reports its text
                // and location with ardea.error; then, built with
                // panic=abort, the module traps and the host fails the
                // tuple the cursor names.
                std::panic::set_hook(Box::new(|info| {
                    report_panic(&super::super::panic_text(info.payload(), info.location()));
                }));
                *rt = Some(Runtime::new(Rc::new(WasmHost), make()));
            }
            match rt {
                Some(r) => r,
                None => unreachable!(),
            }
        }
    }
}
