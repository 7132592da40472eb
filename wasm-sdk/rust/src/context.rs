//! The task's context and the collectors that emit, ack and fail.

use std::ops::{Deref, DerefMut};
use std::rc::Rc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::codec::{ContextBlob, Input, Stream, NO_TASK, OP_ACK, OP_EMIT, OP_FAIL};
use crate::host::Host;
use crate::state::State;
use crate::tuple::Anchor;
use crate::values::Values;

/// Pending emit ops are sent as soon as they reach this size.
pub(crate) const OUT_FLUSH: usize = 64 << 10;

/// Log levels, as Go's log/slog.
pub const LEVEL_DEBUG: i32 = -4;
pub const LEVEL_INFO: i32 = 0;
pub const LEVEL_WARN: i32 = 4;
pub const LEVEL_ERROR: i32 = 8;

/// Sends log lines to the host (tagged there with the topology, component
/// and task). Cheap to clone; keep one in your component if you like.
#[derive(Clone)]
pub struct Logger {
    host: Rc<dyn Host>,
}

impl Logger {
    /// A line at a level (see the `LEVEL_*` constants).
    pub fn log(&self, level: i32, msg: &str) {
        self.host.log(level, msg)
    }
    pub fn debug(&self, msg: &str) {
        self.host.log(LEVEL_DEBUG, msg)
    }
    pub fn info(&self, msg: &str) {
        self.host.log(LEVEL_INFO, msg)
    }
    pub fn warn(&self, msg: &str) {
        self.host.log(LEVEL_WARN, msg)
    }
    pub fn error(&self, msg: &str) {
        self.host.log(LEVEL_ERROR, msg)
    }
}

/// The task's context: its topology, component, position, config and
/// declared streams, its logger, state, custom metrics and the host's
/// clock. `open`/`prepare` receive it; the collectors dereference to it,
/// so `c.config("k")` or `c.state()` work in `execute` and `next` too.
pub struct Context {
    pub(crate) host: Rc<dyn Host>,
    pub(crate) blob: ContextBlob,
    pub(crate) inputs: Rc<Vec<Rc<Input>>>,
    pub(crate) state: State,
    pub(crate) out: Vec<u8>,
    metrics: Vec<(String, i64)>,
    pub(crate) emit_err: Option<String>,
    pub(crate) can_emit: bool,
    pub(crate) call: &'static str,
    pub(crate) def_stream: usize, // index of "default", or usize::MAX
    pub(crate) def_fields: usize,
    pub(crate) emitted: usize,
    pub(crate) max: usize,
    // Acking: manual mode, the tuple being executed (0: none), whether it
    // was acked or failed during the call, what plain emits anchor on.
    pub(crate) manual_ack: bool,
    pub(crate) cur: u64,
    pub(crate) cur_done: bool,
    pub(crate) auto_anchor: u64,
    logger: Logger,
}

impl Context {
    pub(crate) fn new(host: Rc<dyn Host>) -> Context {
        Context {
            state: State::new(host.clone()),
            logger: Logger { host: host.clone() },
            host,
            blob: ContextBlob::default(),
            inputs: Rc::new(Vec::new()),
            out: Vec::new(),
            metrics: Vec::new(),
            emit_err: None,
            can_emit: false,
            manual_ack: false,
            cur: 0,
            cur_done: false,
            auto_anchor: 0,
            call: "",
            def_stream: usize::MAX,
            def_fields: 0,
            emitted: 0,
            max: 0,
        }
    }

    /// Installs a decoded context blob (open/prepare).
    pub(crate) fn setup(&mut self, blob: ContextBlob) -> Result<(), String> {
        for (i, o) in blob.outputs.iter().enumerate() {
            if blob.outputs[..i].iter().any(|p| p.name == o.name) {
                return Err(format!("context: output stream {:?} declared twice", o.name));
            }
        }
        self.def_stream = usize::MAX;
        self.def_fields = 0;
        if let Some(i) = blob.outputs.iter().position(|o| o.name == "default") {
            self.def_stream = i;
            self.def_fields = blob.outputs[i].fields.len();
        }
        self.inputs = Rc::new(blob.inputs.iter().cloned().map(Rc::new).collect());
        self.blob = blob;
        self.state.discard();
        Ok(())
    }

    /// The topology's name.
    pub fn topology(&self) -> &str {
        &self.blob.topology
    }

    /// This component's name.
    pub fn component(&self) -> &str {
        &self.blob.component
    }

    /// This task's global id (the source task downstream sees).
    pub fn task_id(&self) -> u32 {
        self.blob.task_id
    }

    /// This task's index among the component's tasks, from 0.
    pub fn task_index(&self) -> u32 {
        self.blob.task_index
    }

    /// The component's number of tasks.
    pub fn parallelism(&self) -> u32 {
        self.blob.parallelism
    }

    /// A configuration value.
    pub fn config(&self, key: &str) -> Option<&str> {
        // Natively, ardea::testing checks keys against the declarations.
        #[cfg(not(target_arch = "wasm32"))]
        crate::testing::note_config(key);
        self.blob.config.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// A configuration value, or `def` if it is not set.
    pub fn config_or<'a>(&'a self, key: &str, def: &'a str) -> &'a str {
        self.config(key).unwrap_or(def)
    }

    /// An integer configuration value, or `def` if it is not set; an error
    /// if it is set but not a decimal int64.
    pub fn config_int(&self, key: &str, def: i64) -> crate::Result<i64> {
        match self.config(key) {
            None => Ok(def),
            Some(v) => v.trim().parse::<i64>().map_err(|e| format!("config {} of component {}: {:?}: {}", key, self.blob.component, v, e).into()),
        }
    }

    /// All configuration pairs, in ascending key order.
    pub fn config_pairs(&self) -> &[(String, String)] {
        &self.blob.config
    }

    /// The declared output streams; index i is stream index i.
    pub fn outputs(&self) -> &[Stream] {
        &self.blob.outputs
    }

    /// The subscribed (component, stream) pairs; index i is input index i.
    pub fn inputs(&self) -> &[Rc<Input>] {
        &self.inputs
    }

    /// The task's logger.
    pub fn logger(&self) -> Logger {
        self.logger.clone()
    }

    /// Logs at debug level.
    pub fn debug(&self, msg: &str) {
        self.host.log(LEVEL_DEBUG, msg)
    }

    /// Logs at info level.
    pub fn info(&self, msg: &str) {
        self.host.log(LEVEL_INFO, msg)
    }

    /// Logs at warn level.
    pub fn warn(&self, msg: &str) {
        self.host.log(LEVEL_WARN, msg)
    }

    /// Logs at error level (this does not fail the call; return an error
    /// for that).
    pub fn error(&self, msg: &str) {
        self.host.log(LEVEL_ERROR, msg)
    }

    /// The task's host-side key/value state (see [`State`]).
    pub fn state(&mut self) -> &mut State {
        &mut self.state
    }

    /// Adds delta to the component's custom counter `name`. Deltas are
    /// summed in the guest and sent once per host call.
    pub fn metric(&mut self, name: &str, delta: i64) {
        if let Some(m) = self.metrics.iter_mut().find(|(n, _)| n == name) {
            m.1 += delta;
        } else {
            self.metrics.push((name.to_string(), delta));
        }
    }

    /// Sets the task's user gauge `name` to `value` (the last value set in
    /// a metrics interval is exported). Sent to the host at once.
    pub fn gauge(&mut self, name: &str, value: f64) {
        self.host.gauge(name, value)
    }

    /// Records `value` in the task's user histogram `name` (exported as
    /// the interval's mean and `<name>.count`; use nanoseconds for
    /// durations). Sent to the host at once.
    pub fn observe(&mut self, name: &str, value: i64) {
        self.host.observe(name, value)
    }

    /// The host's wall clock, Unix nanoseconds.
    pub fn now_nanos(&self) -> i64 {
        self.host.now()
    }

    /// The host's wall clock.
    pub fn now(&self) -> SystemTime {
        let n = self.host.now();
        if n >= 0 {
            UNIX_EPOCH + Duration::from_nanos(n as u64)
        } else {
            UNIX_EPOCH - Duration::from_nanos(n.unsigned_abs())
        }
    }

    /// The first emit error of the current call, if any. Emit errors (an
    /// undeclared stream, a value count that differs from the stream's
    /// fields, an unsigned value above i64::MAX, emitting where the ABI
    /// does not allow it) drop that tuple and fail the call when it
    /// returns.
    pub fn emit_error(&self) -> Option<&str> {
        self.emit_err.as_deref()
    }

    pub(crate) fn flush_metrics(&mut self) {
        for (name, d) in self.metrics.iter_mut() {
            if *d != 0 {
                self.host.metric(name, *d);
                *d = 0;
            }
        }
    }

    pub(crate) fn flush_out(&mut self) {
        if !self.out.is_empty() {
            self.host.emit(&self.out);
            self.out.clear();
        }
    }

    fn set_emit_err(&mut self, msg: String) {
        if self.emit_err.is_none() {
            self.emit_err = Some(msg);
        }
    }

    /// Validates an emit of n values on a stream (None: "default") and
    /// returns the stream index.
    #[cold]
    #[inline(never)]
    fn check_emit(&mut self, stream: Option<&str>, n: usize) -> Option<usize> {
        let name = stream.unwrap_or("default");
        if !self.can_emit {
            self.set_emit_err(format!(
                "emit on stream {:?} during {}: the ABI allows emitting only in open, next, ack, fail, prepare, execute, tick and finish",
                name, self.call
            ));
            return None;
        }
        let si = match self.blob.outputs.iter().position(|o| o.name == name) {
            Some(i) => i,
            None => {
                let names: Vec<String> = self.blob.outputs.iter().map(|o| format!("{:?}", o.name)).collect();
                let declared = if names.is_empty() { "none".to_string() } else { names.join(", ") };
                self.set_emit_err(format!("emit on undeclared stream {:?} (declared: {})", name, declared));
                return None;
            }
        };
        let o = &self.blob.outputs[si];
        if n != o.fields.len() {
            let msg = format!("emit on stream {:?}: {} values for {} declared fields {:?}", o.name, n, o.fields.len(), o.fields);
            self.set_emit_err(msg);
            return None;
        }
        Some(si)
    }

    /// The stream index for an emit, checking it unless it is the usual
    /// case (the default stream, the right count, a call that may emit).
    #[inline]
    fn stream_for(&mut self, stream: Option<&str>, n: usize) -> Option<usize> {
        if stream.is_none() && self.can_emit && self.def_stream != usize::MAX && n == self.def_fields {
            return Some(self.def_stream);
        }
        if let Some(name) = stream {
            if self.can_emit {
                if let Some(i) = self.blob.outputs.iter().position(|o| o.name == name) {
                    if self.blob.outputs[i].fields.len() == n {
                        return Some(i);
                    }
                }
            }
        }
        self.check_emit(stream, n)
    }

    /// Appends an emit op with at most one anchor (0: none).
    #[inline]
    pub(crate) fn emit_op<V: Values>(&mut self, stream: Option<&str>, direct: u32, msgid: u64, anchor: u64, values: V) {
        let si = match self.stream_for(stream, values.count()) {
            Some(si) => si,
            None => return,
        };
        let at = self.out.len();
        let s = (si as u16).to_le_bytes();
        let d = direct.to_le_bytes();
        let m = msgid.to_le_bytes();
        let nv = (values.count() as u16).to_le_bytes();
        if anchor == 0 {
            self.out.extend_from_slice(&[
                OP_EMIT, s[0], s[1], d[0], d[1], d[2], d[3], m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], 0, 0, nv[0], nv[1],
            ]);
        } else {
            let a = anchor.to_le_bytes();
            self.out.extend_from_slice(&[
                OP_EMIT, s[0], s[1], d[0], d[1], d[2], d[3], m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], 1, 0, a[0], a[1], a[2], a[3],
                a[4], a[5], a[6], a[7], nv[0], nv[1],
            ]);
        }
        self.finish_emit(at, si, values);
    }

    /// Appends an emit op with any number of anchors (ids 0 are dropped).
    pub(crate) fn emit_multi<V: Values, A: Anchor, I: IntoIterator<Item = A>>(&mut self, stream: &str, direct: u32, anchors: I, values: V) {
        let si = match self.stream_for(Some(stream), values.count()) {
            Some(si) => si,
            None => return,
        };
        let at = self.out.len();
        self.out.push(OP_EMIT);
        self.out.extend_from_slice(&(si as u16).to_le_bytes());
        self.out.extend_from_slice(&direct.to_le_bytes());
        self.out.extend_from_slice(&[0; 8]);
        self.out.extend_from_slice(&[0, 0]);
        let mut na: u16 = 0;
        for a in anchors {
            let id = a.anchor_id();
            if id != 0 {
                self.out.extend_from_slice(&id.to_le_bytes());
                na += 1;
            }
        }
        self.out[at + 15..at + 17].copy_from_slice(&na.to_le_bytes());
        self.out.extend_from_slice(&(values.count() as u16).to_le_bytes());
        self.finish_emit(at, si, values);
    }

    #[inline]
    fn finish_emit<V: Values>(&mut self, at: usize, si: usize, values: V) {
        if let Err(i) = values.encode_fields(&mut self.out) {
            self.out.truncate(at);
            self.value_error(si, i);
            return;
        }
        self.emitted += 1;
        if self.out.len() >= OUT_FLUSH {
            self.flush_out();
        }
    }

    #[cold]
    #[inline(never)]
    fn value_error(&mut self, si: usize, i: usize) {
        let o = &self.blob.outputs[si];
        let msg = format!(
            "emit on stream {:?}: field {} ({}): unsigned value above i64::MAX",
            o.name,
            i,
            o.fields.get(i).map(|s| s.as_str()).unwrap_or("?")
        );
        self.set_emit_err(msg);
    }

    fn check_direct(&mut self, task: u32, stream: &str) -> bool {
        if task == NO_TASK {
            self.set_emit_err(format!("emit on stream {:?}: task id {} is not a direct target", stream, task));
            return false;
        }
        true
    }

    /// Switches the bolt to manual acking; call it in `prepare`. By default
    /// (automatic mode) plain emits during `execute` (`emit`, `emit_to`,
    /// `emit_direct`) are anchored on the tuple being executed, and each
    /// tuple is acked when `execute` returns `Ok` unless the bolt acked or
    /// failed it itself. Bolts that keep tuples across calls (joins,
    /// windows) use manual mode: they anchor with the `emit_anchored` forms
    /// and ack or fail every tuple themselves.
    pub fn manual_ack(&mut self) {
        self.manual_ack = true;
    }

    #[inline]
    pub(crate) fn ack_fail(&mut self, op: u8, id: u64) {
        if id == 0 {
            return;
        }
        if id == self.cur {
            // The tuple being executed is acked or failed at most once per
            // call (and automatic mode then leaves it alone).
            if self.cur_done {
                return;
            }
            self.cur_done = true;
        }
        if !self.can_emit {
            let msg = format!("ack or fail during {}: not allowed there by the ABI", self.call);
            self.set_emit_err(msg);
            return;
        }
        let b = id.to_le_bytes();
        self.out.extend_from_slice(&[op, b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
        if self.out.len() >= OUT_FLUSH {
            self.flush_out();
        }
    }
}

/// Emits a spout's tuples. The `*_with_id` variants give the tuple a
/// message id: the host then tracks its tuple tree and calls the spout's
/// `ack` or `fail` with that id.
pub struct SpoutCollector<'a> {
    pub(crate) ctx: &'a mut Context,
}

impl SpoutCollector<'_> {
    /// Emits an untracked tuple on the "default" stream.
    #[inline]
    pub fn emit<V: Values>(&mut self, values: V) {
        self.ctx.emit_op(None, NO_TASK, 0, 0, values)
    }

    /// Emits an untracked tuple on a declared stream.
    pub fn emit_to<V: Values>(&mut self, stream: &str, values: V) {
        self.ctx.emit_op(Some(stream), NO_TASK, 0, 0, values)
    }

    /// Emits an untracked tuple to one task of a subscriber that uses
    /// direct grouping.
    pub fn emit_direct<V: Values>(&mut self, task: u32, stream: &str, values: V) {
        if self.ctx.check_direct(task, stream) {
            self.ctx.emit_op(Some(stream), task, 0, 0, values)
        }
    }

    /// Emits a tracked tuple on the "default" stream (msgid 0: untracked).
    #[inline]
    pub fn emit_with_id<V: Values>(&mut self, msgid: u64, values: V) {
        self.ctx.emit_op(None, NO_TASK, msgid, 0, values)
    }

    /// Emits a tracked tuple on a declared stream.
    pub fn emit_to_with_id<V: Values>(&mut self, stream: &str, msgid: u64, values: V) {
        self.ctx.emit_op(Some(stream), NO_TASK, msgid, 0, values)
    }

    /// Emits a tracked tuple to one task (direct grouping).
    pub fn emit_direct_with_id<V: Values>(&mut self, task: u32, stream: &str, msgid: u64, values: V) {
        if self.ctx.check_direct(task, stream) {
            self.ctx.emit_op(Some(stream), task, msgid, 0, values)
        }
    }

    /// The number of tuples emitted during the current host call.
    pub fn emitted(&self) -> usize {
        self.ctx.emitted
    }

    /// How many more tuples the host asked for in the current `next` call;
    /// `next` should not emit more than that.
    pub fn remaining(&self) -> usize {
        self.ctx.max.saturating_sub(self.ctx.emitted)
    }
}

impl Deref for SpoutCollector<'_> {
    type Target = Context;
    fn deref(&self) -> &Context {
        self.ctx
    }
}

impl DerefMut for SpoutCollector<'_> {
    fn deref_mut(&mut self) -> &mut Context {
        self.ctx
    }
}

/// Emits a bolt's tuples and acks or fails its input.
pub struct BoltCollector<'a> {
    pub(crate) ctx: &'a mut Context,
}

impl BoltCollector<'_> {
    /// Emits a tuple on the "default" stream: during `execute` in automatic
    /// mode (the default) anchored on the tuple being executed, otherwise
    /// unanchored.
    #[inline]
    pub fn emit<V: Values>(&mut self, values: V) {
        let a = self.ctx.auto_anchor;
        self.ctx.emit_op(None, NO_TASK, 0, a, values)
    }

    /// Emits a tuple on a declared stream (anchored like `emit`).
    pub fn emit_to<V: Values>(&mut self, stream: &str, values: V) {
        let a = self.ctx.auto_anchor;
        self.ctx.emit_op(Some(stream), NO_TASK, 0, a, values)
    }

    /// Emits a tuple to one task (direct grouping; anchored like `emit`).
    pub fn emit_direct<V: Values>(&mut self, task: u32, stream: &str, values: V) {
        if self.ctx.check_direct(task, stream) {
            let a = self.ctx.auto_anchor;
            self.ctx.emit_op(Some(stream), task, 0, a, values)
        }
    }

    /// Emits a tuple on the "default" stream anchored on an input tuple, so
    /// that its failure fails the anchor's tuple tree.
    #[inline]
    pub fn emit_anchored<A: Anchor, V: Values>(&mut self, anchor: A, values: V) {
        self.ctx.emit_op(None, NO_TASK, 0, anchor.anchor_id(), values)
    }

    /// Emits an anchored tuple on a declared stream.
    pub fn emit_anchored_to<A: Anchor, V: Values>(&mut self, stream: &str, anchor: A, values: V) {
        self.ctx.emit_op(Some(stream), NO_TASK, 0, anchor.anchor_id(), values)
    }

    /// Emits a tuple on a declared stream anchored on several input
    /// tuples (tuples, owned tuples or ids; for example `[t, prev]`).
    pub fn emit_multi_anchored<A: Anchor, I: IntoIterator<Item = A>, V: Values>(&mut self, stream: &str, anchors: I, values: V) {
        self.ctx.emit_multi(stream, NO_TASK, anchors, values)
    }

    /// Emits a tuple to one task (direct grouping), anchored on the given
    /// input tuples.
    pub fn emit_direct_anchored<A: Anchor, I: IntoIterator<Item = A>, V: Values>(&mut self, task: u32, stream: &str, anchors: I, values: V) {
        if self.ctx.check_direct(task, stream) {
            self.ctx.emit_multi(stream, task, anchors, values)
        }
    }

    /// Acks an input tuple (a no-op for an untracked tuple, id 0). In
    /// automatic mode a bolt need not call it. The tuple being executed is
    /// acked or failed at most once: a second `ack` or `fail` of it in the
    /// same call is dropped.
    #[inline]
    pub fn ack<A: Anchor>(&mut self, t: A) {
        self.ctx.ack_fail(OP_ACK, t.anchor_id())
    }

    /// Fails an input tuple: its spout's `fail` is called for the tree.
    #[inline]
    pub fn fail<A: Anchor>(&mut self, t: A) {
        self.ctx.ack_fail(OP_FAIL, t.anchor_id())
    }
}

impl Deref for BoltCollector<'_> {
    type Target = Context;
    fn deref(&self) -> &Context {
        self.ctx
    }
}

impl DerefMut for BoltCollector<'_> {
    fn deref_mut(&mut self) -> &mut Context {
        self.ctx
    }
}
