//! Run a component natively, without a wasm runtime: [`Tester`] drives the
//! real SDK runtime through the ABI's lifecycle calls against
//! [`TestHost`], an in-memory host that records what the component
//! emits, logs and stores. Use it in `#[cfg(test)]` tests of your crate
//! (`cargo test`, or `rustc --test`).
//!
//! ```ignore
//! let mut t = Tester::bolt(Split);
//! t.prepare(&ContextBlob {
//!     component: "split".into(),
//!     outputs: vec![Stream::new("default", &["word"])],
//!     inputs: vec![Input::new("lines", "default", &["line"])],
//!     ..ContextBlob::default()
//! }).unwrap();
//! t.execute_values(7, &[Value::str("a b")]).unwrap();
//! let ops = t.take_ops();
//! ```

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::Once;

use crate::codec::{decode_ops, encode_batch, encode_msgids, encode_values, le32, ContextBlob, Input, Op, Record, Stream, Value};
use crate::host::Host;
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

/// Drives a component through the ABI as the host would. Each method
/// returns the call's error text (what the component reported with
/// `ardea.error`) as `Err`.
///
/// A panic in a call fails it as in a module: the error is the text the
/// SDK reports there (`Execute: tuple 3 from lines/default task 1: panic:
/// MESSAGE at src/lib.rs:LINE:COL`), what the call emitted and wrote to
/// state is dropped, and [`Tester::cursor`] names the failing record of a
/// batch. (The host would then start a fresh instance; the Tester keeps
/// the component as the panic left it.)
pub struct Tester {
    rt: Runtime,
    host: Rc<TestHost>,
    taken: usize,
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

    /// A tester for a component.
    pub fn new(comp: Component) -> Tester {
        let host = Rc::new(TestHost::default());
        Tester { rt: Runtime::new(host.clone(), comp), host, taken: 0 }
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

    /// Runs one lifecycle call, turning a panic into the call's error.
    fn call(&mut self, f: impl FnOnce(&mut Runtime) -> i32) -> i32 {
        capture_panics();
        CAPTURE.with(|c| c.set(true));
        let r = catch_unwind(AssertUnwindSafe(|| f(&mut self.rt)));
        CAPTURE.with(|c| c.set(false));
        match r {
            Ok(code) => code,
            Err(_) => {
                let text = PANIC.with(|p| p.borrow_mut().take()).unwrap_or_else(|| "panic".to_string());
                self.rt.fail_text(&text)
            }
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

    /// `ardea_prepare` with a context.
    pub fn prepare(&mut self, ctx: &ContextBlob) -> Result<(), String> {
        let n = self.put(&ctx.encode());
        let c = self.call(|rt| rt.prepare(n));
        self.result(c).map(|_| ())
    }

    /// `ardea_open` with a context.
    pub fn open(&mut self, ctx: &ContextBlob) -> Result<(), String> {
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
        let mut v = Vec::new();
        encode_values(values, &mut v);
        self.execute(&[Record { input: 0, source: 1, id, values: &v }])
    }

    /// `ardea_next`.
    pub fn next(&mut self, max: i32) -> Result<Status, String> {
        let c = self.call(|rt| rt.next(max));
        match self.result(c)? {
            0 => Ok(Status::More),
            1 => Ok(Status::Idle),
            2 => Ok(Status::Done),
            s => Err(format!("next returned status {}", s)),
        }
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

    /// The ops emitted since the last call, concatenated.
    pub fn take_ops(&mut self) -> Vec<u8> {
        let r = self.host.rec.borrow();
        let out = r.emits[self.taken..].concat();
        self.taken = r.emits.len();
        out
    }

    /// The ops emitted since the last `take_ops`, decoded with their values
    /// (strings shown as text) — handy in assertions.
    pub fn take_ops_text(&mut self) -> Vec<String> {
        let ops = self.take_ops();
        decode_ops(&ops).expect("emitted ops decode").iter().map(op_text).collect()
    }
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
