//! Test a component natively, without a wasm runtime: [`Tester`] drives
//! the real SDK runtime through the ABI's lifecycle calls against
//! [`TestHost`], an in-memory host that records what the component emits,
//! acks, fails, logs, counts and stores. Use it in `#[cfg(test)]` tests of
//! your crate (`cargo test --offline`, or `rustc --test`).
//!
//! ```ignore
//! #[test]
//! fn upper_cases_and_acks() {
//!     // The component as registered (ardea::register_bolt! at the crate
//!     // root), with its declarations: the context is made from them and
//!     // the bolt is checked against them.
//!     let mut t = ardea::tester!();
//!     t.start().unwrap();                          // prepare (a spout: open)
//!     t.execute_strs(1, &["hello"]).unwrap();      // one tuple, id 1
//!     let out = t.take_output();
//!     assert_eq!(out.on("default")[0].str(0), "HELLO");
//!     assert_eq!(out.on("default")[0].anchors, [1]);
//!     assert_eq!(out.acks, [1]);
//! }
//! ```
//!
//! Or build the tester from a value and a context of your own:
//! `Tester::bolt(Upper).config("k", "v").input("lines", &["line"])
//! .output("default", &["line"])`, or [`Tester::prepare`] with a
//! [`ContextBlob`].
//!
//! What a Tester covers: config ([`Tester::config`]), tuples
//! ([`Tester::execute_strs`], [`Tester::execute_values`],
//! [`Tester::execute_on`], [`Tester::execute`]), emits per stream with
//! their anchors, message ids and direct tasks, acks and fails
//! ([`Tester::take_output`]), logs ([`Tester::logs`]), user metrics
//! ([`Tester::metric`], [`Tester::gauge`], [`Tester::observed`]), state
//! before and after ([`Tester::set_state`], [`Tester::state`]), the clock
//! ([`Tester::set_now`]), ticks, finish, activate and deactivate, a spout's
//! next with a budget, its acks and fails ([`Tester::next`],
//! [`Tester::drain`], [`Tester::ack`], [`Tester::fail`]), and failing calls:
//! an error returned or a panic is the call's `Err` with the text a module
//! reports to the host, and [`Tester::cursor`] names the failing record.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::Once;

use crate::codec::{decode_ops, encode_batch, encode_msgids, encode_values, le32, ContextBlob, Input, Op, Record, Stream, Value};
use crate::host::Host;
use crate::manifest::Declarations;
use crate::runtime::{Bolt, Component, Runtime, Spout, Status};

impl Stream {
    /// A stream with its field names.
    pub fn new(name: &str, fields: &[&str]) -> Stream {
        Stream { name: name.to_string(), fields: fields.iter().map(|f| f.to_string()).collect() }
    }
}

impl Input {
    /// An input with its field names.
    pub fn new(component: &str, stream: &str, fields: &[&str]) -> Input {
        Input { component: component.to_string(), stream: stream.to_string(), fields: fields.iter().map(|f| f.to_string()).collect() }
    }
}

/// What [`TestHost`] recorded.
#[derive(Default, Debug, Clone)]
pub struct Recorded {
    /// Every `emit` call's ops, in order.
    pub emits: Vec<Vec<u8>>,
    /// Log lines (level, text).
    pub logs: Vec<(i32, String)>,
    /// `error` texts.
    pub errors: Vec<String>,
    /// The state as the host holds it.
    pub state: BTreeMap<Vec<u8>, Vec<u8>>,
    /// Host calls by kind.
    pub state_gets: usize,
    pub state_writes: usize,
    pub state_scans: usize,
    /// Custom metrics (summed).
    pub metrics: BTreeMap<String, i64>,
    /// `metric` calls.
    pub metric_calls: usize,
    /// User gauges (the last value set).
    pub gauges: BTreeMap<String, f64>,
    /// User histograms: every value observed, in order.
    pub observed: BTreeMap<String, Vec<i64>>,
    /// What `now` returns.
    pub now: i64,
}

/// An in-memory host.
#[derive(Default, Debug)]
pub struct TestHost {
    pub rec: RefCell<Recorded>,
}

impl Host for TestHost {
    fn emit(&self, ops: &[u8]) {
        self.rec.borrow_mut().emits.push(ops.to_vec());
    }
    fn log(&self, level: i32, msg: &str) {
        self.rec.borrow_mut().logs.push((level, msg.to_string()));
    }
    fn error(&self, msg: &str) {
        self.rec.borrow_mut().errors.push(msg.to_string());
    }
    fn state_get(&self, key: &[u8], buf: &mut [u8]) -> i32 {
        let mut r = self.rec.borrow_mut();
        r.state_gets += 1;
        match r.state.get(key) {
            None => -1,
            Some(v) => {
                if v.len() <= buf.len() {
                    buf[..v.len()].copy_from_slice(v);
                }
                v.len() as i32
            }
        }
    }
    fn state_write(&self, ops: &[u8]) {
        let mut r = self.rec.borrow_mut();
        r.state_writes += 1;
        let mut b = ops;
        while !b.is_empty() {
            let op = b[0];
            let kl = le32(&b[1..]) as usize;
            let k = b[5..5 + kl].to_vec();
            let vl = le32(&b[5 + kl..]) as usize;
            let v = b[9 + kl..9 + kl + vl].to_vec();
            b = &b[9 + kl + vl..];
            match op {
                1 => {
                    r.state.insert(k, v);
                }
                2 => {
                    r.state.remove(&k);
                }
                _ => panic!("state_write: bad op {}", op),
            }
        }
    }
    fn state_scan(&self, prefix: &[u8], buf: &mut [u8]) -> i32 {
        let mut r = self.rec.borrow_mut();
        r.state_scans += 1;
        let mut out = Vec::new();
        let mut n = 0u32;
        for (k, v) in r.state.range(prefix.to_vec()..) {
            if !k.starts_with(prefix) {
                break;
            }
            n += 1;
            out.extend_from_slice(&(k.len() as u32).to_le_bytes());
            out.extend_from_slice(k);
            out.extend_from_slice(&(v.len() as u32).to_le_bytes());
            out.extend_from_slice(v);
        }
        let mut enc = n.to_le_bytes().to_vec();
        enc.extend_from_slice(&out);
        if enc.len() <= buf.len() {
            buf[..enc.len()].copy_from_slice(&enc);
        }
        enc.len() as i32
    }
    fn metric(&self, name: &str, delta: i64) {
        let mut r = self.rec.borrow_mut();
        r.metric_calls += 1;
        *r.metrics.entry(name.to_string()).or_insert(0) += delta;
    }
    fn gauge(&self, name: &str, value: f64) {
        self.rec.borrow_mut().gauges.insert(name.to_string(), value);
    }
    fn observe(&self, name: &str, value: i64) {
        self.rec.borrow_mut().observed.entry(name.to_string()).or_default().push(value);
    }
    fn now(&self) -> i64 {
        self.rec.borrow().now
    }
}

thread_local! {
    /// Whether a Tester call is under way on this thread (its panics are
    /// captured, not printed).
    static CAPTURE: Cell<bool> = const { Cell::new(false) };
    /// The text of the last captured panic.
    static PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
    /// The field names read by name and config keys looked up during a
    /// Tester call whose component has declarations.
    static WATCH: RefCell<Option<Watched>> = const { RefCell::new(None) };
}

#[derive(Default)]
struct Watched {
    reads: Vec<String>,
    config: Vec<String>,
}

/// Notes a field read by name (native builds only; see [`Tester`]).
#[cfg(not(target_arch = "wasm32"))]
#[inline]
pub(crate) fn note_read(name: &str) {
    WATCH.with(|w| {
        if let Some(w) = w.borrow_mut().as_mut() {
            if !w.reads.iter().any(|r| r == name) {
                w.reads.push(name.to_string());
            }
        }
    })
}

/// Notes a config key looked up (native builds only).
#[cfg(not(target_arch = "wasm32"))]
#[inline]
pub(crate) fn note_config(key: &str) {
    WATCH.with(|w| {
        if let Some(w) = w.borrow_mut().as_mut() {
            if !w.config.iter().any(|r| r == key) {
                w.config.push(key.to_string());
            }
        }
    })
}

/// Installs, once, a panic hook that captures the text of panics in
/// Tester calls (as the SDK's hook in a module does) and leaves other
/// panics to the previous hook.
fn capture_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if CAPTURE.with(|c| c.get()) {
                let text = crate::runtime::panic_text(info.payload(), info.location());
                PANIC.with(|p| *p.borrow_mut() = Some(text));
            } else {
                prev(info)
            }
        }));
    });
}

/// An emitted field value, owned (see [`Emitted`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    Null,
    Bytes(Vec<u8>),
    /// A string field (invalid UTF-8 replaced by U+FFFD).
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl From<Value<'_>> for Val {
    fn from(v: Value<'_>) -> Val {
        match v {
            Value::Null => Val::Null,
            Value::Bytes(b) => Val::Bytes(b.to_vec()),
            Value::String(b) => Val::Str(String::from_utf8_lossy(b).into_owned()),
            Value::Int(i) => Val::Int(i),
            Value::Float(f) => Val::Float(f),
            Value::Bool(b) => Val::Bool(b),
        }
    }
}

impl From<&str> for Val {
    fn from(s: &str) -> Val {
        Val::Str(s.to_string())
    }
}

impl From<String> for Val {
    fn from(s: String) -> Val {
        Val::Str(s)
    }
}

impl From<i64> for Val {
    fn from(i: i64) -> Val {
        Val::Int(i)
    }
}

impl From<f64> for Val {
    fn from(f: f64) -> Val {
        Val::Float(f)
    }
}

impl From<bool> for Val {
    fn from(b: bool) -> Val {
        Val::Bool(b)
    }
}

/// One emitted tuple.
#[derive(Clone, Debug, PartialEq)]
pub struct Emitted {
    /// The stream's name (from the context's outputs).
    pub stream: String,
    pub values: Vec<Val>,
    /// The tuple ids it is anchored on (a bolt's emits).
    pub anchors: Vec<u64>,
    /// The message id (a spout's tracked emits; 0: none).
    pub msgid: u64,
    /// The task of a direct emit.
    pub direct: Option<u32>,
}

impl Emitted {
    /// Field i as text: a string's (or bytes') content, a number or bool
    /// formatted, null as "". Panics if there is no field i.
    pub fn str(&self, i: usize) -> String {
        match &self.values[i] {
            Val::Null => String::new(),
            Val::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
            Val::Str(s) => s.clone(),
            Val::Int(n) => n.to_string(),
            Val::Float(f) => f.to_string(),
            Val::Bool(b) => b.to_string(),
        }
    }

    /// Field i as an int64 (panics if it is not one).
    pub fn int(&self, i: usize) -> i64 {
        match &self.values[i] {
            Val::Int(n) => *n,
            v => panic!("emitted field {} is {:?}, not an int64", i, v),
        }
    }
}

/// What a component sent: emits, acks and fails, in the order sent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Output {
    pub emits: Vec<Emitted>,
    /// Tuple ids acked (a bolt).
    pub acks: Vec<u64>,
    /// Tuple ids failed (a bolt).
    pub fails: Vec<u64>,
}

impl Output {
    /// The emits on one stream.
    pub fn on(&self, stream: &str) -> Vec<&Emitted> {
        self.emits.iter().filter(|e| e.stream == stream).collect()
    }

    /// Field 0 of every emit on a stream, as text (see [`Emitted::str`]).
    pub fn firsts(&self, stream: &str) -> Vec<String> {
        self.on(stream).iter().map(|e| e.str(0)).collect()
    }
}

/// Drives a component through the ABI as the host would. Each call
/// returns the call's error text (what the component reports to the host
/// with `ardea.error`) as `Err`.
///
/// A panic in a call fails it as in a module: the error is the text the
/// SDK reports there (`Execute: tuple 3 from lines/default task 1: panic:
/// MESSAGE at src/lib.rs:LINE:COL`), what the call emitted and wrote to
/// state is dropped, and [`Tester::cursor`] names the failing record of a
/// batch. (The host would then start a fresh instance; the Tester keeps
/// the component as the panic left it.)
///
/// With declarations ([`crate::tester!`], [`Tester::with_declarations`],
/// [`Tester::declare`]), the context is made from them (outputs: the
/// declared streams; inputs: one, `upstream`/`default`, with the fields
/// read by name) and the component is checked against them, as `ardea
/// run` checks a topology: [`Tester::start`] refuses a context whose
/// outputs differ from the declared ones or whose inputs lack a field
/// read; and a call fails if the component read a field by name or a
/// config key it did not declare.
pub struct Tester {
    rt: Runtime,
    host: Rc<TestHost>,
    taken: usize,
    bolt: bool,
    decl: Option<Declarations>,
    ctx: ContextBlob,
    auto_inputs: bool,
    auto_outputs: bool,
}

impl Tester {
    /// A tester for a bolt.
    pub fn bolt<B: Bolt + 'static>(b: B) -> Tester {
        Tester::new(Component::Bolt(Box::new(b)))
    }

    /// A tester for a spout.
    pub fn spout<S: Spout + 'static>(s: S) -> Tester {
        Tester::new(Component::Spout(Box::new(s)))
    }

    /// A tester for a component, without declarations.
    pub fn new(comp: Component) -> Tester {
        let host = Rc::new(TestHost::default());
        let bolt = matches!(comp, Component::Bolt(_));
        let ctx = ContextBlob { topology: "test".into(), component: "component".into(), task_id: 1, task_index: 0, parallelism: 1, ..ContextBlob::default() };
        Tester { rt: Runtime::new(host.clone(), comp), host, taken: 0, bolt, decl: None, ctx, auto_inputs: true, auto_outputs: true }
    }

    /// A tester for a component with its declarations (what
    /// [`crate::tester!`] makes from the crate's registration).
    pub fn with_declarations(comp: Component, decl: Declarations) -> Tester {
        Tester::new(comp).declare(decl)
    }

    /// Checks the component against declarations, and makes the context's
    /// outputs and inputs from them (until [`Tester::output`] or
    /// [`Tester::input`] give others).
    pub fn declare(mut self, decl: Declarations) -> Tester {
        if self.auto_outputs {
            self.ctx.outputs = decl.outputs.clone().unwrap_or_default();
        }
        if self.auto_inputs && self.bolt {
            self.ctx.inputs = match &decl.inputs {
                Some(r) => vec![Input { component: "upstream".into(), stream: "default".into(), fields: r.clone() }],
                None => Vec::new(),
            };
        }
        self.decl = Some(decl);
        self
    }

    /// The declarations the component is checked against, if any.
    pub fn declarations(&self) -> Option<&Declarations> {
        self.decl.as_ref()
    }

    /// Sets a config value of the context (before [`Tester::start`]).
    pub fn config(mut self, key: &str, value: &str) -> Tester {
        self.ctx.config.retain(|(k, _)| k != key);
        self.ctx.config.push((key.to_string(), value.to_string()));
        self.ctx.config.sort();
        self
    }

    /// Sets the component's name in the context (default "component").
    pub fn component(mut self, name: &str) -> Tester {
        self.ctx.component = name.to_string();
        self
    }

    /// Sets the task's id, index and the component's parallelism (default
    /// 1, 0, 1).
    pub fn task(mut self, id: u32, index: u32, parallelism: u32) -> Tester {
        self.ctx.task_id = id;
        self.ctx.task_index = index;
        self.ctx.parallelism = parallelism;
        self
    }

    /// Adds an output stream to the context (the first call replaces the
    /// declared ones).
    pub fn output(mut self, stream: &str, fields: &[&str]) -> Tester {
        if self.auto_outputs {
            self.ctx.outputs.clear();
            self.auto_outputs = false;
        }
        self.ctx.outputs.push(Stream::new(stream, fields));
        self
    }

    /// Adds an input to the context: `component`'s "default" stream with
    /// these fields; its input index is the number of inputs before it
    /// (the first call replaces the one made from the declarations).
    pub fn input(self, component: &str, fields: &[&str]) -> Tester {
        self.input_stream(component, "default", fields)
    }

    /// Adds an input on a named stream (see [`Tester::input`]).
    pub fn input_stream(mut self, component: &str, stream: &str, fields: &[&str]) -> Tester {
        if self.auto_inputs {
            self.ctx.inputs.clear();
            self.auto_inputs = false;
        }
        self.ctx.inputs.push(Input::new(component, stream, fields));
        self
    }

    /// The context [`Tester::start`] gives the component, to change at will.
    pub fn context_mut(&mut self) -> &mut ContextBlob {
        self.auto_inputs = false;
        self.auto_outputs = false;
        &mut self.ctx
    }

    /// The host and what it recorded.
    pub fn host(&self) -> &TestHost {
        &self.host
    }

    /// The runtime (to call the exports directly).
    pub fn runtime(&mut self) -> &mut Runtime {
        &mut self.rt
    }

    fn result(&self, code: i32) -> Result<i32, String> {
        if code < 0 {
            let r = self.host.rec.borrow();
            return Err(r.errors.last().cloned().unwrap_or_else(|| format!("call returned {} without an error text", code)));
        }
        Ok(code)
    }

    /// Runs one lifecycle call: a panic becomes the call's error, and with
    /// declarations, so does a field read by name or a config key looked
    /// up that is not declared.
    fn call(&mut self, f: impl FnOnce(&mut Runtime) -> i32) -> i32 {
        capture_panics();
        CAPTURE.with(|c| c.set(true));
        if self.decl.is_some() {
            WATCH.with(|w| *w.borrow_mut() = Some(Watched::default()));
        }
        let r = catch_unwind(AssertUnwindSafe(|| f(&mut self.rt)));
        CAPTURE.with(|c| c.set(false));
        let watched = WATCH.with(|w| w.borrow_mut().take());
        let code = match r {
            Ok(code) => code,
            Err(_) => {
                let text = PANIC.with(|p| p.borrow_mut().take()).unwrap_or_else(|| "panic".to_string());
                return self.rt.fail_text(&text);
            }
        };
        if let (Some(d), Some(w)) = (&self.decl, watched) {
            if let Some(msg) = undeclared(d, &w, self.kind()) {
                self.host.error(&msg);
                return -1;
            }
        }
        code
    }

    fn kind(&self) -> &'static str {
        if self.bolt {
            "bolt"
        } else {
            "spout"
        }
    }

    /// The index of the batch record the last `execute` was processing
    /// (after a failed `execute`: the failing tuple's, as `ardea_cursor`
    /// tells the host).
    pub fn cursor(&self) -> u32 {
        self.rt.cursor()
    }

    fn put(&mut self, b: &[u8]) -> i32 {
        self.rt.input_mut(b.len()).copy_from_slice(b);
        b.len() as i32
    }

    /// Opens a spout or prepares a bolt with the tester's context (made
    /// from the declarations, [`Tester::config`], [`Tester::input`],
    /// [`Tester::output`]...), after checking it against the declarations.
    pub fn start(&mut self) -> Result<(), String> {
        let ctx = self.ctx.clone();
        if self.bolt {
            self.prepare(&ctx)
        } else {
            self.open(&ctx)
        }
    }

    /// Checks a context against the declarations (what `ardea run` checks
    /// of a topology).
    fn check_context(&self, ctx: &ContextBlob) -> Result<(), String> {
        let d = match &self.decl {
            Some(d) => d,
            None => return Ok(()),
        };
        let kind = self.kind();
        if let Some(outs) = &d.outputs {
            if outs != &ctx.outputs {
                return Err(format!("declarations: the {} declares emits {} but the context's outputs are {}", kind, streams_text(outs), streams_text(&ctx.outputs)));
            }
        }
        if let Some(reads) = &d.inputs {
            for inp in &ctx.inputs {
                let missing: Vec<&String> = reads.iter().filter(|r| !inp.fields.contains(r)).collect();
                if !missing.is_empty() {
                    return Err(format!(
                        "declarations: the {} reads {:?} by name, but its input {}/{} has fields {:?} (no {:?})",
                        kind, reads, inp.component, inp.stream, inp.fields, missing
                    ));
                }
            }
        }
        Ok(())
    }

    /// `ardea_prepare` with a context.
    pub fn prepare(&mut self, ctx: &ContextBlob) -> Result<(), String> {
        self.check_context(ctx)?;
        let n = self.put(&ctx.encode());
        let c = self.call(|rt| rt.prepare(n));
        self.result(c).map(|_| ())
    }

    /// `ardea_open` with a context.
    pub fn open(&mut self, ctx: &ContextBlob) -> Result<(), String> {
        self.check_context(ctx)?;
        let n = self.put(&ctx.encode());
        let c = self.call(|rt| rt.open(n));
        self.result(c).map(|_| ())
    }

    /// `ardea_execute` with a batch of records.
    pub fn execute(&mut self, records: &[Record]) -> Result<(), String> {
        self.execute_raw(&encode_batch(records))
    }

    /// `ardea_execute` with an encoded batch.
    pub fn execute_raw(&mut self, batch: &[u8]) -> Result<(), String> {
        let n = self.put(batch);
        let c = self.call(|rt| rt.execute(n));
        self.result(c).map(|_| ())
    }

    /// `ardea_execute` with one tuple on input 0 from task 1.
    pub fn execute_values(&mut self, id: u64, values: &[Value]) -> Result<(), String> {
        self.execute_on(0, 1, id, values)
    }

    /// `ardea_execute` with one tuple of string fields on input 0 from
    /// task 1 (`id` 0: the topology does not track the tuple).
    pub fn execute_strs(&mut self, id: u64, fields: &[&str]) -> Result<(), String> {
        let vals: Vec<Value> = fields.iter().map(|f| Value::str(f)).collect();
        self.execute_on(0, 1, id, &vals)
    }

    /// `ardea_execute` with one tuple on an input index from a task.
    pub fn execute_on(&mut self, input: u16, source_task: u32, id: u64, values: &[Value]) -> Result<(), String> {
        let mut v = Vec::new();
        encode_values(values, &mut v);
        self.execute(&[Record { input, source: source_task, id, values: &v }])
    }

    /// `ardea_next` with a budget of `max` tuples.
    pub fn next(&mut self, max: i32) -> Result<Status, String> {
        let c = self.call(|rt| rt.next(max));
        match self.result(c)? {
            0 => Ok(Status::More),
            1 => Ok(Status::Idle),
            2 => Ok(Status::Done),
            s => Err(format!("next returned status {}", s)),
        }
    }

    /// Calls `next` with a budget of `max` until the spout reports Done or
    /// Idle (at most `calls` times), and returns the last status; the
    /// emits are in [`Tester::take_output`].
    pub fn drain(&mut self, max: i32, calls: usize) -> Result<Status, String> {
        let mut st = Status::More;
        for _ in 0..calls {
            st = self.next(max)?;
            if st != Status::More {
                break;
            }
        }
        Ok(st)
    }

    /// `ardea_ack` with message ids.
    pub fn ack(&mut self, ids: &[u64]) -> Result<(), String> {
        let n = self.put(&encode_msgids(ids));
        let c = self.call(|rt| rt.ack_fail(n, false));
        self.result(c).map(|_| ())
    }

    /// `ardea_fail` with message ids.
    pub fn fail(&mut self, ids: &[u64]) -> Result<(), String> {
        let n = self.put(&encode_msgids(ids));
        let c = self.call(|rt| rt.ack_fail(n, true));
        self.result(c).map(|_| ())
    }

    /// `ardea_activate`.
    pub fn activate(&mut self) -> Result<(), String> {
        let c = self.call(|rt| rt.activate(true));
        self.result(c).map(|_| ())
    }

    /// `ardea_deactivate`.
    pub fn deactivate(&mut self) -> Result<(), String> {
        let c = self.call(|rt| rt.activate(false));
        self.result(c).map(|_| ())
    }

    /// `ardea_tick`.
    pub fn tick(&mut self) -> Result<(), String> {
        let c = self.call(|rt| rt.tick());
        self.result(c).map(|_| ())
    }

    /// `ardea_finish`.
    pub fn finish(&mut self) -> Result<(), String> {
        let c = self.call(|rt| rt.finish());
        self.result(c).map(|_| ())
    }

    /// `ardea_close`.
    pub fn close(&mut self) -> Result<(), String> {
        let c = self.call(|rt| rt.close());
        self.result(c).map(|_| ())
    }

    /// The ops emitted since the last `take_*`, concatenated.
    pub fn take_ops(&mut self) -> Vec<u8> {
        let r = self.host.rec.borrow();
        let out = r.emits[self.taken..].concat();
        self.taken = r.emits.len();
        out
    }

    /// The ops sent since the last `take_*`, decoded with their values
    /// (strings shown as text) — handy in assertions.
    pub fn take_ops_text(&mut self) -> Vec<String> {
        let ops = self.take_ops();
        decode_ops(&ops).expect("emitted ops decode").iter().map(op_text).collect()
    }

    /// The emits, acks and fails sent since the last `take_*`, with stream
    /// names from the context.
    pub fn take_output(&mut self) -> Output {
        let ops = self.take_ops();
        let mut out = Output::default();
        let outputs = self.rt.context().outputs().to_vec();
        for op in decode_ops(&ops).expect("emitted ops decode") {
            match op {
                Op::Ack(id) => out.acks.push(id),
                Op::Fail(id) => out.fails.push(id),
                Op::Emit { stream, direct, msgid, ref anchors, .. } => out.emits.push(Emitted {
                    stream: outputs.get(stream as usize).map(|s| s.name.clone()).unwrap_or_else(|| format!("#{}", stream)),
                    values: op.decoded_values().into_iter().map(Val::from).collect(),
                    anchors: anchors.clone(),
                    msgid,
                    direct: if direct == crate::codec::NO_TASK { None } else { Some(direct) },
                }),
            }
        }
        out
    }

    /// The log lines so far: (level, text), levels as [`crate::LEVEL_INFO`]...
    pub fn logs(&self) -> Vec<(i32, String)> {
        self.host.rec.borrow().logs.clone()
    }

    /// The error texts the component reported so far.
    pub fn errors(&self) -> Vec<String> {
        self.host.rec.borrow().errors.clone()
    }

    /// A user counter's total (0 if never added to).
    pub fn metric(&self, name: &str) -> i64 {
        self.host.rec.borrow().metrics.get(name).copied().unwrap_or(0)
    }

    /// A user gauge's last value.
    pub fn gauge(&self, name: &str) -> Option<f64> {
        self.host.rec.borrow().gauges.get(name).copied()
    }

    /// Every value observed in a user histogram, in order.
    pub fn observed(&self, name: &str) -> Vec<i64> {
        self.host.rec.borrow().observed.get(name).cloned().unwrap_or_default()
    }

    /// Stores a value in the host's state, as if an earlier instance had
    /// written it (call it before [`Tester::start`]: the SDK caches what
    /// it reads).
    pub fn set_state<K: AsRef<[u8]>, V: AsRef<[u8]>>(&self, key: K, value: V) {
        self.host.rec.borrow_mut().state.insert(key.as_ref().to_vec(), value.as_ref().to_vec());
    }

    /// Stores an int64 as `State::put_int` does (8 bytes little endian).
    pub fn set_state_int<K: AsRef<[u8]>>(&self, key: K, v: i64) {
        self.set_state(key, v.to_le_bytes());
    }

    /// The host's state: every key and value the component has written
    /// (written back at the end of each successful call).
    pub fn state(&self) -> BTreeMap<Vec<u8>, Vec<u8>> {
        self.host.rec.borrow().state.clone()
    }

    /// One key's value in the host's state.
    pub fn state_get<K: AsRef<[u8]>>(&self, key: K) -> Option<Vec<u8>> {
        self.host.rec.borrow().state.get(key.as_ref()).cloned()
    }

    /// One key's int64 (8 bytes little endian) in the host's state.
    pub fn state_int<K: AsRef<[u8]>>(&self, key: K) -> Option<i64> {
        let v = self.state_get(key)?;
        let b: [u8; 8] = v.as_slice().try_into().ok()?;
        Some(i64::from_le_bytes(b))
    }

    /// Sets what the host's clock (`now`) returns, Unix nanoseconds.
    pub fn set_now(&self, nanos: i64) {
        self.host.rec.borrow_mut().now = nanos;
    }
}

fn streams_text(s: &[Stream]) -> String {
    let parts: Vec<String> = s.iter().map(|s| format!("{}:{:?}", s.name, s.fields)).collect();
    format!("[{}]", parts.join(", "))
}

/// The error for a field read by name or a config key looked up that the
/// declarations do not name, if any.
fn undeclared(d: &Declarations, w: &Watched, kind: &str) -> Option<String> {
    if let Some(reads) = &d.inputs {
        if let Some(f) = w.reads.iter().find(|f| !reads.contains(f)) {
            return Some(format!("declarations: the {} read field {:?} by name, which it does not declare (reads: {:?}); add it to reads: [...] where it registers", kind, f, reads));
        }
    }
    if let Some(keys) = &d.config {
        if let Some(k) = w.config.iter().find(|k| !keys.contains(k)) {
            return Some(format!("declarations: the {} read config key {:?}, which it does not declare (config: {:?}); add it to config: [...] where it registers", kind, k, keys));
        }
    }
    None
}

/// A readable form of an op: `emit s0 [anchors] (values)`, `ack ID`,
/// `fail ID`; direct and message ids when set.
pub fn op_text(op: &Op) -> String {
    match op {
        Op::Ack(id) => format!("ack {}", id),
        Op::Fail(id) => format!("fail {}", id),
        Op::Emit { stream, direct, msgid, anchors, .. } => {
            let mut s = format!("emit s{}", stream);
            if *direct != crate::codec::NO_TASK {
                s += &format!(" direct {}", direct);
            }
            if *msgid != 0 {
                s += &format!(" id {}", msgid);
            }
            if !anchors.is_empty() {
                s += &format!(" {:?}", anchors);
            }
            let vals: Vec<String> = op
                .decoded_values()
                .iter()
                .map(|v| match v {
                    Value::Null => "null".to_string(),
                    Value::String(b) => format!("{:?}", String::from_utf8_lossy(b)),
                    Value::Bytes(b) => format!("{:?}", b),
                    Value::Int(i) => i.to_string(),
                    Value::Float(f) => format!("{:?}", f),
                    Value::Bool(b) => b.to_string(),
                })
                .collect();
            s + " (" + &vals.join(", ") + ")"
        }
    }
}
