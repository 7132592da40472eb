//! Helpers of the SDK's tests: the vector files and their values specs,
//! bolts and spouts made of closures, and the contexts the tests declare.

use std::path::PathBuf;

use crate::*;

pub(super) fn testdata() -> PathBuf {
    if let Ok(d) = std::env::var("ARDEA_TESTDATA") {
        return PathBuf::from(d);
    }
    if let Some(m) = option_env!("CARGO_MANIFEST_DIR") {
        return PathBuf::from(m).join("../testdata");
    }
    PathBuf::from("../testdata")
}

pub(super) fn vectors(name: &str) -> Vec<Vec<String>> {
    let p = testdata().join(name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {} (set ARDEA_TESTDATA to wasm-sdk/testdata)", p.display(), e));
    let out: Vec<Vec<String>> = text.split('\n').filter(|l| !l.is_empty() && !l.starts_with('#')).map(|l| l.split('\t').map(String::from).collect()).collect();
    assert!(!out.is_empty(), "{}: no vectors", name);
    out
}

pub(super) fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len() % 2 == 0, "odd hex {:?}", s);
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap_or_else(|_| panic!("bad hex {:?}", s))).collect()
}

pub(super) fn hex(b: &[u8]) -> String {
    b.iter().map(|c| format!("{:02x}", c)).collect()
}

pub(super) fn unhex_str(s: &str) -> String {
    String::from_utf8(unhex(s)).expect("UTF-8")
}

/// An owned field of a values spec.
#[derive(Clone, Debug)]
pub(super) enum Ov {
    N,
    S(Vec<u8>),
    X(Vec<u8>),
    I(i64),
    F(f64),
    B(bool),
}

pub(super) fn parse_spec(spec: &str) -> Vec<Ov> {
    if spec == "-" {
        return Vec::new();
    }
    spec.split(' ')
        .map(|tok| {
            let (k, arg) = tok.split_at(tok.find(':').unwrap_or_else(|| panic!("bad token {:?}", tok)));
            let arg = &arg[1..];
            match k {
                "n" => Ov::N,
                "s" => Ov::S(unhex(arg)),
                "x" => Ov::X(unhex(arg)),
                "i" => Ov::I(arg.parse().unwrap()),
                "f" => Ov::F(arg.parse().unwrap()),
                "b" => match arg {
                    "0" => Ov::B(false),
                    "1" => Ov::B(true),
                    _ => panic!("bad bool {:?}", arg),
                },
                _ => panic!("bad token {:?}", tok),
            }
        })
        .collect()
}

pub(super) fn values_of(ov: &[Ov]) -> Vec<Value<'_>> {
    ov.iter()
        .map(|v| match v {
            Ov::N => Value::Null,
            Ov::S(b) => Value::String(b),
            Ov::X(b) => Value::Bytes(b),
            Ov::I(i) => Value::Int(*i),
            Ov::F(f) => Value::Float(*f),
            Ov::B(b) => Value::Bool(*b),
        })
        .collect()
}

/// Compares decoded values with a spec, floats by their bits.
pub(super) fn check_values(name: &str, got: &[Value], want: &[Ov]) {
    assert_eq!(got.len(), want.len(), "{}: field count", name);
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = match (g, w) {
            (Value::Null, Ov::N) => true,
            (Value::String(a), Ov::S(b)) => a == b,
            (Value::Bytes(a), Ov::X(b)) => a == b,
            (Value::Int(a), Ov::I(b)) => a == b,
            (Value::Float(a), Ov::F(b)) => a.to_bits() == b.to_bits(),
            (Value::Bool(a), Ov::B(b)) => a == b,
            _ => false,
        };
        assert!(ok, "{}: field {}: got {:?}, want {:?}", name, i, g, w);
    }
}

/// Checks a tuple's typed accessors against a spec.
pub(super) fn check_tuple(name: &str, t: &Tuple, want: &[Ov]) {
    assert_eq!(t.len(), want.len(), "{}: len", name);
    for (i, w) in want.iter().enumerate() {
        match w {
            Ov::N => {
                assert!(t.is_null(i), "{}: field {} null", name, i);
                assert_eq!(t.int(i), 0);
                assert_eq!(t.bytes(i), b"");
            }
            Ov::S(b) => {
                assert_eq!(t.kind(i), Kind::String);
                assert_eq!(t.bytes(i), &b[..], "{}: field {}", name, i);
                if let Ok(s) = std::str::from_utf8(b) {
                    assert_eq!(t.str(i), s);
                }
            }
            Ov::X(b) => {
                assert_eq!(t.kind(i), Kind::Bytes);
                assert_eq!(t.bytes(i), &b[..], "{}: field {}", name, i);
            }
            Ov::I(v) => assert_eq!(t.int(i), *v, "{}: field {}", name, i),
            Ov::F(v) => assert_eq!(t.float(i).to_bits(), v.to_bits(), "{}: field {}", name, i),
            Ov::B(v) => assert_eq!(t.bool(i), *v, "{}: field {}", name, i),
        }
    }
    check_values(name, &t.values(), want);
}

/// A bolt made of closures.
pub(super) struct FnBolt {
    pub(super) prepare: Box<dyn FnMut(&mut Context) -> crate::Result>,
    pub(super) execute: Box<dyn FnMut(&Tuple, &mut BoltCollector) -> crate::Result>,
    pub(super) tick: Box<dyn FnMut(&mut BoltCollector) -> crate::Result>,
}

impl FnBolt {
    pub(super) fn new(execute: impl FnMut(&Tuple, &mut BoltCollector) -> crate::Result + 'static) -> FnBolt {
        FnBolt { prepare: Box::new(|_| Ok(())), execute: Box::new(execute), tick: Box::new(|_| Ok(())) }
    }
}

impl Bolt for FnBolt {
    fn prepare(&mut self, ctx: &mut Context) -> crate::Result {
        // The SDK tests check the acks they send themselves (the
        // conformance suite covers automatic acking).
        ctx.manual_ack();
        (self.prepare)(ctx)
    }
    fn execute(&mut self, t: &Tuple, c: &mut BoltCollector) -> crate::Result {
        (self.execute)(t, c)
    }
    fn tick(&mut self, c: &mut BoltCollector) -> crate::Result {
        (self.tick)(c)
    }
}

/// A spout made of closures.
pub(super) struct FnSpout {
    pub(super) next: Box<dyn FnMut(&mut SpoutCollector) -> crate::Result<Status>>,
    pub(super) ack: Box<dyn FnMut(u64, bool, &mut SpoutCollector) -> crate::Result>,
}

impl Spout for FnSpout {
    fn next(&mut self, c: &mut SpoutCollector) -> crate::Result<Status> {
        (self.next)(c)
    }
    fn ack(&mut self, id: u64, c: &mut SpoutCollector) -> crate::Result {
        (self.ack)(id, false, c)
    }
    fn fail(&mut self, id: u64, c: &mut SpoutCollector) -> crate::Result {
        (self.ack)(id, true, c)
    }
}

pub(super) fn fields(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("f{}", i)).collect()
}

pub(super) fn stream(name: &str, n: usize) -> Stream {
    Stream { name: name.to_string(), fields: fields(n) }
}

pub(super) fn input(n: usize) -> Input {
    Input { component: "up".into(), stream: "default".into(), fields: fields(n) }
}

pub(super) fn bolt_ctx(outputs: Vec<Stream>, inputs: Vec<Input>) -> ContextBlob {
    ContextBlob { topology: "t".into(), component: "c".into(), task_id: 3, task_index: 0, parallelism: 1, config: Vec::new(), outputs, inputs }
}

/// The context of the behaviour tests: a word count task.
pub(super) fn words_ctx() -> ContextBlob {
    ContextBlob {
        topology: "wc".into(),
        component: "count".into(),
        task_id: 7,
        task_index: 1,
        parallelism: 2,
        config: vec![("limit".into(), " 42 ".into()), ("name".into(), "x".into()), ("bad".into(), "1x".into())],
        outputs: vec![Stream::new("default", &["word", "n"]), Stream::new("events", &["kind", "detail"])],
        inputs: vec![Input::new("split", "default", &["word"])],
    }
}
