//! The SDK against the shared ABI vectors in wasm-sdk/testdata (formats in
//! its README.md) and its own behaviour. Run natively:
//!
//!   rustc --edition 2021 --test src/lib.rs -o /tmp/ardea-tests && /tmp/ardea-tests
//!
//! The vectors are found in $ARDEA_TESTDATA, else ../testdata from the
//! crate (cargo) or from the current directory.

#![allow(clippy::type_complexity)]

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;

use crate::codec::*;
use crate::testing::Tester;
use crate::*;

fn testdata() -> PathBuf {
    if let Ok(d) = std::env::var("ARDEA_TESTDATA") {
        return PathBuf::from(d);
    }
    if let Some(m) = option_env!("CARGO_MANIFEST_DIR") {
        return PathBuf::from(m).join("../testdata");
    }
    PathBuf::from("../testdata")
}

fn vectors(name: &str) -> Vec<Vec<String>> {
    let p = testdata().join(name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {} (set ARDEA_TESTDATA to wasm-sdk/testdata)", p.display(), e));
    let out: Vec<Vec<String>> = text.split('\n').filter(|l| !l.is_empty() && !l.starts_with('#')).map(|l| l.split('\t').map(String::from).collect()).collect();
    assert!(!out.is_empty(), "{}: no vectors", name);
    out
}

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len() % 2 == 0, "odd hex {:?}", s);
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap_or_else(|_| panic!("bad hex {:?}", s))).collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|c| format!("{:02x}", c)).collect()
}

fn unhex_str(s: &str) -> String {
    String::from_utf8(unhex(s)).expect("UTF-8")
}

/// An owned field of a values spec.
#[derive(Clone, Debug)]
enum Ov {
    N,
    S(Vec<u8>),
    X(Vec<u8>),
    I(i64),
    F(f64),
    B(bool),
}

fn parse_spec(spec: &str) -> Vec<Ov> {
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

fn values_of(ov: &[Ov]) -> Vec<Value<'_>> {
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
fn check_values(name: &str, got: &[Value], want: &[Ov]) {
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
fn check_tuple(name: &str, t: &Tuple, want: &[Ov]) {
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
struct FnBolt {
    prepare: Box<dyn FnMut(&mut Context) -> crate::Result>,
    execute: Box<dyn FnMut(&Tuple, &mut BoltCollector) -> crate::Result>,
    tick: Box<dyn FnMut(&mut BoltCollector) -> crate::Result>,
}

impl FnBolt {
    fn new(execute: impl FnMut(&Tuple, &mut BoltCollector) -> crate::Result + 'static) -> FnBolt {
        FnBolt { prepare: Box::new(|_| Ok(())), execute: Box::new(execute), tick: Box::new(|_| Ok(())) }
    }
}

impl Bolt for FnBolt {
    fn prepare(&mut self, ctx: &mut Context) -> crate::Result {
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
struct FnSpout {
    next: Box<dyn FnMut(&mut SpoutCollector) -> crate::Result<Status>>,
    ack: Box<dyn FnMut(u64, bool, &mut SpoutCollector) -> crate::Result>,
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

fn fields(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("f{}", i)).collect()
}

fn stream(name: &str, n: usize) -> Stream {
    Stream { name: name.to_string(), fields: fields(n) }
}

fn input(n: usize) -> Input {
    Input { component: "up".into(), stream: "default".into(), fields: fields(n) }
}

fn bolt_ctx(outputs: Vec<Stream>, inputs: Vec<Input>) -> ContextBlob {
    ContextBlob { topology: "t".into(), component: "c".into(), task_id: 3, task_index: 0, parallelism: 1, config: Vec::new(), outputs, inputs }
}

#[test]
fn vectors_values() {
    for l in vectors("values.txt") {
        let (name, spec, want) = (&l[0], parse_spec(&l[1]), unhex(&l[2]));
        let vals = values_of(&spec);
        // Encode with the codec.
        let mut enc = Vec::new();
        encode_values(&vals, &mut enc);
        assert!(enc == want, "{}: encoded {}, want {}", name, hex(&enc), l[2]);
        // Decode.
        let dec = decode_values(&want).unwrap_or_else(|e| panic!("{}: {}", name, e));
        check_values(name, &dec, &spec);
        // Emit through the public API: the op's values are the vector.
        let n = spec.len();
        let mut t = Tester::bolt(FnBolt::new(move |_, c| {
            let vals = values_of(&spec);
            c.emit(&vals);
            Ok(())
        }));
        t.prepare(&bolt_ctx(vec![stream("default", n)], vec![input(0)])).unwrap();
        t.execute_values(0, &[]).unwrap();
        let ops = t.take_ops();
        let mut head = vec![OP_EMIT, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        head.extend_from_slice(&want);
        assert!(ops == head, "{}: emitted {}", name, hex(&ops));
        // Read through the Tuple accessors.
        let spec = parse_spec(&l[1]);
        let name2 = name.clone();
        let seen = Rc::new(RefCell::new(0));
        let seen2 = seen.clone();
        let mut t = Tester::bolt(FnBolt::new(move |tp, _| {
            check_tuple(&name2, tp, &spec);
            *seen2.borrow_mut() += 1;
            Ok(())
        }));
        t.prepare(&bolt_ctx(vec![], vec![input(n)])).unwrap();
        t.execute(&[Record { input: 0, source: 1, id: 0, values: &want }]).unwrap();
        assert_eq!(*seen.borrow(), 1, "{}", name);
    }
}

#[test]
fn vectors_batch() {
    for l in vectors("batch.txt") {
        let (name, want) = (&l[0], unhex(&l[2]));
        struct R {
            input: u16,
            source: u32,
            id: u64,
            spec: Vec<Ov>,
            enc: Vec<u8>,
        }
        let recs: Vec<R> = if l[1] == "-" {
            Vec::new()
        } else {
            l[1].split('|')
                .map(|r| {
                    let p: Vec<&str> = r.splitn(4, ',').collect();
                    let spec = parse_spec(p[3]);
                    let mut enc = Vec::new();
                    encode_values(&values_of(&spec), &mut enc);
                    R { input: p[0].parse().unwrap(), source: p[1].parse().unwrap(), id: p[2].parse().unwrap(), spec, enc }
                })
                .collect()
        };
        let records: Vec<Record> = recs.iter().map(|r| Record { input: r.input, source: r.source, id: r.id, values: &r.enc }).collect();
        let enc = encode_batch(&records);
        assert!(enc == want, "{}: encoded {}, want {}", name, hex(&enc), l[2]);
        let dec = decode_batch(&want).unwrap_or_else(|e| panic!("{}: {}", name, e));
        assert_eq!(dec, records, "{}", name);
        // Through execute: every record reaches the bolt as a Tuple.
        let seen = Rc::new(RefCell::new(Vec::new()));
        let seen2 = seen.clone();
        let mut t = Tester::bolt(FnBolt::new(move |tp, _| {
            seen2.borrow_mut().push((tp.input_index() as u16, tp.source_task(), tp.id(), tp.raw().to_vec(), tp.component().to_string()));
            Ok(())
        }));
        let inputs = (0..3).map(|i| Input { component: format!("up{}", i), stream: "default".into(), fields: Vec::new() }).collect();
        t.prepare(&bolt_ctx(vec![], inputs)).unwrap();
        t.execute_raw(&want).unwrap_or_else(|e| panic!("{}: {}", name, e));
        let seen = seen.borrow();
        assert_eq!(seen.len(), recs.len(), "{}", name);
        for (s, r) in seen.iter().zip(&recs) {
            assert_eq!((s.0, s.1, s.2, &s.3, s.4.as_str()), (r.input, r.source, r.id, &r.enc, format!("up{}", r.input).as_str()), "{}", name);
            check_values(name, &decode_values(&s.3).unwrap(), &r.spec);
        }
    }
}

#[derive(Clone, Debug)]
enum VecOp {
    Emit { stream: u16, direct: u32, msgid: u64, anchors: Vec<u64>, spec: Vec<Ov> },
    Ack(u64),
    Fail(u64),
}

fn parse_ops(s: &str) -> Vec<VecOp> {
    s.split('|')
        .map(|o| {
            let p: Vec<&str> = o.splitn(6, ',').collect();
            match p[0] {
                "ack" => VecOp::Ack(p[1].parse().unwrap()),
                "fail" => VecOp::Fail(p[1].parse().unwrap()),
                "emit" => VecOp::Emit {
                    stream: p[1].parse().unwrap(),
                    direct: p[2].parse().unwrap(),
                    msgid: p[3].parse().unwrap(),
                    anchors: if p[4] == "-" { Vec::new() } else { p[4].split(':').map(|a| a.parse().unwrap()).collect() },
                    spec: parse_spec(p[5]),
                },
                k => panic!("bad op {:?}", k),
            }
        })
        .collect()
}

fn stream_name(i: u16) -> String {
    if i == 0 {
        "default".to_string()
    } else {
        format!("s{}", i)
    }
}

#[test]
fn vectors_ops() {
    for l in vectors("ops.txt") {
        let (name, want) = (l[0].clone(), unhex(&l[2]));
        let ops = parse_ops(&l[1]);
        // Encode with the codec.
        let mut enc = Vec::new();
        for o in &ops {
            match o {
                VecOp::Emit { stream, direct, msgid, anchors, spec } => {
                    let mut v = Vec::new();
                    encode_values(&values_of(spec), &mut v);
                    Op::Emit { stream: *stream, direct: *direct, msgid: *msgid, anchors: anchors.clone(), values: &v }.encode(&mut enc);
                }
                VecOp::Ack(id) => Op::Ack(*id).encode(&mut enc),
                VecOp::Fail(id) => Op::Fail(*id).encode(&mut enc),
            }
        }
        assert!(enc == want, "{}: encoded {}, want {}", name, hex(&enc), l[2]);
        assert_eq!(decode_ops(&want).unwrap_or_else(|e| panic!("{}: {}", name, e)).len(), ops.len(), "{}", name);

        // Declare streams 0..max with their field counts.
        let mut counts: Vec<usize> = Vec::new();
        let mut spout = false;
        for o in &ops {
            if let VecOp::Emit { stream, msgid, spec, .. } = o {
                let s = *stream as usize;
                if counts.len() <= s {
                    counts.resize(s + 1, 0);
                }
                counts[s] = spec.len();
                spout |= *msgid != 0;
            }
        }
        let outputs: Vec<Stream> = counts.iter().enumerate().map(|(i, n)| stream(&stream_name(i as u16), *n)).collect();
        // Rebuild the sequence through the public emit API.
        let got = if spout {
            let ops2 = ops.clone();
            let mut done = false;
            let mut t = Tester::spout(FnSpout {
                next: Box::new(move |c| {
                    if done {
                        return Ok(Status::Done);
                    }
                    done = true;
                    for o in &ops2 {
                        if let VecOp::Emit { stream, direct, msgid, anchors, spec } = o {
                            assert!(anchors.is_empty());
                            let v = values_of(spec);
                            let s = stream_name(*stream);
                            if *direct != NO_TASK {
                                c.emit_direct_with_id(*direct, &s, *msgid, &v);
                            } else if *stream == 0 {
                                c.emit_with_id(*msgid, &v);
                            } else {
                                c.emit_to_with_id(&s, *msgid, &v);
                            }
                        } else {
                            panic!("spout sequence with ack/fail");
                        }
                    }
                    Ok(Status::More)
                }),
                ack: Box::new(|_, _, _| Ok(())),
            });
            t.open(&ContextBlob { outputs, ..ContextBlob::default() }).unwrap();
            t.next(1 << 20).unwrap_or_else(|e| panic!("{}: {}", name, e));
            t.take_ops()
        } else {
            let ops2 = ops.clone();
            let mut t = Tester::bolt(FnBolt::new(move |_, c| {
                for o in &ops2 {
                    match o {
                        VecOp::Emit { stream, direct, msgid, anchors, spec } => {
                            assert_eq!(*msgid, 0);
                            let v = values_of(spec);
                            let s = stream_name(*stream);
                            if *direct != NO_TASK {
                                c.emit_direct_anchored(*direct, &s, anchors, &v);
                            } else if anchors.len() > 1 {
                                c.emit_multi_anchored(&s, anchors, &v);
                            } else if anchors.len() == 1 && *stream == 0 {
                                c.emit_anchored(anchors[0], &v);
                            } else if anchors.len() == 1 {
                                c.emit_anchored_to(&s, anchors[0], &v);
                            } else if *stream == 0 {
                                c.emit(&v);
                            } else {
                                c.emit_to(&s, &v);
                            }
                        }
                        VecOp::Ack(id) => c.ack(*id),
                        VecOp::Fail(id) => c.fail(*id),
                    }
                }
                Ok(())
            }));
            t.prepare(&bolt_ctx(outputs, vec![input(0)])).unwrap();
            t.execute_values(0, &[]).unwrap_or_else(|e| panic!("{}: {}", name, e));
            t.take_ops()
        };
        assert!(got == want, "{}: emitted {}, want {}", name, hex(&got), l[2]);
    }
}

#[test]
fn vectors_context() {
    let opt = |s: &str| -> Vec<String> {
        if s == "-" {
            Vec::new()
        } else {
            s.split(',').map(String::from).collect()
        }
    };
    for l in vectors("context.txt") {
        assert_eq!(l.len(), 10, "{}: columns", l[0]);
        let name = l[0].clone();
        let config = opt(&l[6])
            .iter()
            .map(|kv| {
                let (k, v) = kv.split_at(kv.find('=').unwrap());
                (unhex_str(k), unhex_str(&v[1..]))
            })
            .collect();
        let outputs = opt(&l[7])
            .iter()
            .map(|s| {
                let mut p = s.split(':').map(unhex_str);
                Stream { name: p.next().unwrap(), fields: p.collect() }
            })
            .collect();
        let inputs = opt(&l[8])
            .iter()
            .map(|s| {
                let mut p = s.split(':').map(unhex_str);
                Input { component: p.next().unwrap(), stream: p.next().unwrap(), fields: p.collect() }
            })
            .collect();
        let blob = ContextBlob {
            topology: unhex_str(&l[1]),
            component: unhex_str(&l[2]),
            task_id: l[3].parse().unwrap(),
            task_index: l[4].parse().unwrap(),
            parallelism: l[5].parse().unwrap(),
            config,
            outputs,
            inputs,
        };
        let want = unhex(&l[9]);
        let enc = blob.encode();
        assert!(enc == want, "{}: encoded {}, want {}", name, hex(&enc), l[9]);
        assert_eq!(ContextBlob::decode(&want).unwrap_or_else(|e| panic!("{}: {}", name, e)), blob, "{}", name);
        // Through prepare: the Context's accessors.
        let b2 = blob.clone();
        let checked = Rc::new(RefCell::new(false));
        let c2 = checked.clone();
        let mut bolt = FnBolt::new(|_, _| Ok(()));
        bolt.prepare = Box::new(move |ctx| {
            assert_eq!(ctx.topology(), b2.topology);
            assert_eq!(ctx.component(), b2.component);
            assert_eq!((ctx.task_id(), ctx.task_index(), ctx.parallelism()), (b2.task_id, b2.task_index, b2.parallelism));
            assert_eq!(ctx.config_pairs(), &b2.config[..]);
            for (k, v) in &b2.config {
                assert_eq!(ctx.config(k), Some(v.as_str()));
            }
            assert_eq!(ctx.outputs(), &b2.outputs[..]);
            let ins: Vec<Input> = ctx.inputs().iter().map(|i| (**i).clone()).collect();
            assert_eq!(ins, b2.inputs);
            *c2.borrow_mut() = true;
            Ok(())
        });
        let mut t = Tester::bolt(bolt);
        let n = want.len();
        t.runtime().input_mut(n).copy_from_slice(&want);
        assert_eq!(t.runtime().prepare(n as i32), 0, "{}: {:?}", name, t.host().rec.borrow().errors);
        assert!(*checked.borrow(), "{}", name);
    }
}

#[test]
fn vectors_msgids() {
    for l in vectors("msgids.txt") {
        let name = &l[0];
        let ids: Vec<u64> = if l[1] == "-" { Vec::new() } else { l[1].split(',').map(|s| s.parse().unwrap()).collect() };
        let want = unhex(&l[2]);
        assert!(encode_msgids(&ids) == want, "{}: encoded {}", name, hex(&encode_msgids(&ids)));
        assert_eq!(decode_msgids(&want).unwrap(), ids, "{}", name);
        // Through ardea_ack and ardea_fail.
        let seen = Rc::new(RefCell::new(Vec::new()));
        let s2 = seen.clone();
        let mut t = Tester::spout(FnSpout {
            next: Box::new(|_| Ok(Status::Done)),
            ack: Box::new(move |id, fail, _| {
                s2.borrow_mut().push((id, fail));
                Ok(())
            }),
        });
        t.open(&ContextBlob::default()).unwrap();
        let n = want.len();
        t.runtime().input_mut(n).copy_from_slice(&want);
        assert_eq!(t.runtime().ack_fail(n as i32, false), 0, "{}", name);
        t.runtime().input_mut(n).copy_from_slice(&want);
        assert_eq!(t.runtime().ack_fail(n as i32, true), 0, "{}", name);
        let wantseen: Vec<(u64, bool)> = ids.iter().map(|&i| (i, false)).chain(ids.iter().map(|&i| (i, true))).collect();
        assert_eq!(*seen.borrow(), wantseen, "{}", name);
    }
}

#[test]
fn vectors_hash() {
    let ps = [1u32, 2, 3, 7, 100, 256];
    let tasks = |kg: u32| -> String { ps.iter().map(|&p| key_group_task(kg, p, 256).to_string()).collect::<Vec<_>>().join(",") };
    let (mut ntuple, mut nkey) = (0, 0);
    for l in vectors("hash.txt") {
        match l[0].as_str() {
            "tuple" => {
                ntuple += 1;
                let name = &l[1];
                let spec = parse_spec(&l[2]);
                let idx: Vec<usize> = l[3].split(',').map(|s| s.parse().unwrap()).collect();
                let mut raw = Vec::new();
                encode_values(&values_of(&spec), &mut raw);
                let mut offs = Vec::new();
                scan_values(&raw, &mut offs).unwrap();
                let inp = Rc::new(input(spec.len()));
                let t = Tuple::new(&raw, &offs, 0, 0, 0, &inp);
                let h = t.grouping_hash(&idx);
                assert_eq!(format!("{:016x}", h), l[4], "{}: hash", name);
                assert_eq!(key_group(h, 256).to_string(), l[5], "{}: key group", name);
                assert_eq!(tasks(key_group(h, 256)), l[6], "{}: tasks", name);
                let key = t.state_key(&idx);
                assert_eq!(hex(&key), l[7], "{}: state key", name);
                // By field name too.
                let names: Vec<String> = idx.iter().map(|i| format!("f{}", i)).collect();
                let names: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
                assert_eq!(t.state_key(&names), key, "{}", name);
                if idx.len() == 1 {
                    assert_eq!(t.payload(idx[0]), &key[..], "{}: payload", name);
                }
                assert_eq!(format!("{:016x}", state_key_hash(&key)), l[8], "{}: state key hash", name);
            }
            "key" => {
                nkey += 1;
                let name = &l[1];
                let h = state_key_hash(&unhex(&l[2]));
                assert_eq!(format!("{:016x}", h), l[3], "{}: hash", name);
                assert_eq!(key_group(h, 256).to_string(), l[4], "{}", name);
                assert_eq!(tasks(key_group(h, 256)), l[5], "{}", name);
            }
            k => panic!("hash.txt: unknown line kind {:?}", k),
        }
    }
    assert!(ntuple > 0 && nkey > 0);
}

#[test]
fn vectors_invalid() {
    let mut kinds = std::collections::BTreeMap::new();
    for l in vectors("invalid.txt") {
        let (name, kind, b) = (&l[0], l[1].as_str(), unhex(l.get(2).map(|s| s.as_str()).unwrap_or("")));
        *kinds.entry(kind.to_string()).or_insert(0) += 1;
        match kind {
            "values" => {
                assert!(decode_values(&b).is_err(), "{}: decoded", name);
                // As the only record of a batch, execute refuses it.
                let mut t = Tester::bolt(FnBolt::new(|_, _| Ok(())));
                t.prepare(&bolt_ctx(vec![], vec![input(0)])).unwrap();
                let batch = encode_batch(&[Record { input: 0, source: 1, id: 0, values: &b }]);
                assert!(t.execute_raw(&batch).is_err(), "{}: executed", name);
            }
            "batch" => {
                assert!(decode_batch(&b).is_err(), "{}: decoded", name);
                let mut t = Tester::bolt(FnBolt::new(|_, _| Ok(())));
                t.prepare(&bolt_ctx(vec![], vec![input(0), input(0), input(0)])).unwrap();
                let e = t.execute_raw(&b);
                assert!(e.is_err(), "{}: executed", name);
                assert!(e.unwrap_err().starts_with("Execute: "), "{}", name);
            }
            "ops" => assert!(decode_ops(&b).is_err(), "{}: decoded", name),
            "context" => {
                assert!(ContextBlob::decode(&b).is_err(), "{}: decoded", name);
                let mut t = Tester::bolt(FnBolt::new(|_, _| Ok(())));
                let n = b.len();
                t.runtime().input_mut(n).copy_from_slice(&b);
                assert!(t.runtime().prepare(n as i32) < 0, "{}: prepared", name);
            }
            "msgids" => {
                assert!(decode_msgids(&b).is_err(), "{}: decoded", name);
                let mut t = Tester::spout(FnSpout { next: Box::new(|_| Ok(Status::Done)), ack: Box::new(|_, _, _| panic!("called")) });
                t.open(&ContextBlob::default()).unwrap();
                let n = b.len();
                t.runtime().input_mut(n).copy_from_slice(&b);
                assert!(t.runtime().ack_fail(n as i32, false) < 0, "{}: acked", name);
            }
            k => panic!("{}: unknown kind {:?}", name, k),
        }
    }
    for k in ["values", "batch", "ops", "context", "msgids"] {
        assert!(kinds.contains_key(k), "no {} vectors", k);
    }
}

// Behaviour beyond the vectors.

fn words_ctx() -> ContextBlob {
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

#[test]
fn state_write_back_cache() {
    let mut t = Tester::bolt(FnBolt::new(|tp, c| {
        let w = tp.bytes("word");
        match w {
            b"del" => c.state().delete("a"),
            b"big" => {
                let v = vec![7u8; 1000];
                c.state().put("big", &v);
                assert_eq!(c.state().get("big"), Some(&v[..]));
                c.state().put("big", b"small");
                assert_eq!(c.state().get("big"), Some(&b"small"[..]));
            }
            _ => {
                let n = c.state().add_int(w, 1);
                c.emit_anchored(tp, (Text(w), n));
            }
        }
        c.ack(tp);
        Ok(())
    }));
    t.prepare(&words_ctx()).unwrap();
    t.host().rec.borrow_mut().state.insert(b"b".to_vec(), 10i64.to_le_bytes().to_vec());
    let a = vec![Value::str("a")];
    let b = vec![Value::str("b")];
    let enc = |v: &[Value]| {
        let mut o = Vec::new();
        encode_values(v, &mut o);
        o
    };
    let (ea, eb) = (enc(&a), enc(&b));
    let recs = [
        Record { input: 0, source: 1, id: 1, values: &ea },
        Record { input: 0, source: 1, id: 2, values: &eb },
        Record { input: 0, source: 1, id: 3, values: &ea },
        Record { input: 0, source: 1, id: 0, values: &ea },
    ];
    t.execute(&recs).unwrap();
    {
        let r = t.host().rec.borrow();
        assert_eq!(r.state_gets, 2, "one state_get per key");
        assert_eq!(r.state_writes, 1, "one state_write per call");
        assert_eq!(r.emits.len(), 1, "one emit per call");
        assert_eq!(r.state.get(&b"a"[..]), Some(&3i64.to_le_bytes().to_vec()));
        assert_eq!(r.state.get(&b"b"[..]), Some(&11i64.to_le_bytes().to_vec()));
    }
    assert_eq!(
        t.take_ops_text(),
        ["emit s0 [1] (\"a\", 1)", "ack 1", "emit s0 [2] (\"b\", 11)", "ack 2", "emit s0 [3] (\"a\", 2)", "ack 3", "emit s0 (\"a\", 3)"]
    );
    // Cached now: no more reads; a call without changes writes nothing.
    t.execute(&recs[..1]).unwrap();
    let r = t.host().rec.borrow().clone();
    assert_eq!((r.state_gets, r.state_writes), (2, 2));
    t.execute_values(5, &[Value::str("del")]).unwrap();
    t.execute_values(6, &[Value::str("big")]).unwrap();
    let r = t.host().rec.borrow().clone();
    assert_eq!(r.state.get(&b"a"[..]), None);
    assert_eq!(r.state.get(&b"big"[..]), Some(&b"small".to_vec()));
    // A new prepare empties the cache.
    t.prepare(&words_ctx()).unwrap();
    t.execute(&recs[1..2]).unwrap();
    assert_eq!(t.host().rec.borrow().state_gets, 3);
    assert_eq!(t.host().rec.borrow().state.get(&b"b"[..]), Some(&12i64.to_le_bytes().to_vec()));
}

#[test]
fn state_cache_limits_and_scan() {
    let host = Rc::new(crate::testing::TestHost::default());
    let mut s = State::new(host.clone());
    s.set_cache_limits(4, 1 << 20);
    for i in 0..10 {
        s.put_int(format!("k{}", i), i);
    }
    assert!(s.cached_entries() <= 4);
    assert!(host.rec.borrow().state_writes >= 2, "limits flush");
    assert!(s.is_cached(b"k9"));
    let scan = s.scan("k");
    assert_eq!(scan.len(), 10);
    let keys: Vec<String> = scan.iter().map(|(k, _)| String::from_utf8(k.to_vec()).unwrap()).collect();
    assert_eq!(keys, ["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"]);
    let (_, v) = scan.iter().nth(3).unwrap();
    assert_eq!(v, &3i64.to_le_bytes());
    assert_eq!(s.get_int("k3"), Some(3));
    assert_eq!(s.get_int("nope"), None);
    s.delete("k3");
    assert_eq!(s.get("k3"), None);
    assert_eq!(s.scan("k3").len(), 0);
    // Many keys: the index grows.
    s.set_cache_limits(DEFAULT_CACHE_ENTRIES, DEFAULT_CACHE_BYTES);
    for i in 0..5000i64 {
        s.add_int(format!("word-{}", i), i);
    }
    for i in 0..5000i64 {
        assert_eq!(s.add_int(format!("word-{}", i), 1), i + 1);
    }
    s.flush();
    assert_eq!(host.rec.borrow().state.get(&b"word-4999"[..]), Some(&5000i64.to_le_bytes().to_vec()));
}

#[test]
fn context_config_log_metric_now() {
    let mut bolt = FnBolt::new(|tp, c| {
        c.metric("seen", 1);
        c.metric("other", 2);
        c.warn(&format!("got {}", tp.str(0)));
        assert_eq!(c.config_int("limit", 0).unwrap(), 42);
        assert_eq!(c.config_int("missing", 5).unwrap(), 5);
        assert!(c.config_int("bad", 0).is_err());
        assert_eq!(c.config_or("name", "d"), "x");
        assert_eq!(c.config_or("zzz", "d"), "d");
        assert_eq!(c.now_nanos(), 1_500_000_000);
        assert_eq!(c.now(), std::time::UNIX_EPOCH + std::time::Duration::from_millis(1500));
        c.logger().debug("dbg");
        Ok(())
    });
    bolt.prepare = Box::new(|ctx| {
        ctx.info(&format!("prepared {} task {} of {}", ctx.component(), ctx.task_id(), ctx.parallelism()));
        Ok(())
    });
    let mut t = Tester::bolt(bolt);
    t.host().rec.borrow_mut().now = 1_500_000_000;
    t.prepare(&words_ctx()).unwrap();
    t.execute_values(1, &[Value::str("w")]).unwrap();
    t.execute_values(2, &[Value::str("v")]).unwrap();
    let r = t.host().rec.borrow();
    assert_eq!(r.logs, [(0, "prepared count task 7 of 2".to_string()), (4, "got w".into()), (-4, "dbg".into()), (4, "got v".into()), (-4, "dbg".into())]);
    assert_eq!(r.metrics.get("seen"), Some(&2));
    assert_eq!(r.metrics.get("other"), Some(&4));
    assert_eq!(r.metric_calls, 4, "one metric call per name per host call");
}

#[test]
fn emit_errors_fail_the_call() {
    let cases: Vec<(&str, Box<dyn Fn(&Tuple, &mut BoltCollector)>, &str)> = vec![
        ("undeclared", Box::new(|_, c| c.emit_to("nope", ("a", 1))), "Execute: tuple 1 from split/default task 1: emit on undeclared stream \"nope\" (declared: \"default\", \"events\")"),
        ("count", Box::new(|_, c| c.emit(("a",))), "Execute: emit on stream \"default\": 1 values for 2 declared fields [\"word\", \"n\"]"),
        ("unsigned", Box::new(|_, c| c.emit(("a", u64::MAX))), "Execute: emit on stream \"default\": field 1 (n): unsigned value above i64::MAX"),
        ("direct", Box::new(|_, c| c.emit_direct(NO_TASK, "default", ("a", 1))), "Execute: emit on stream \"default\": task id 4294967295 is not a direct target"),
    ];
    for (name, f, want) in cases {
        let mut t = Tester::bolt(FnBolt::new(move |tp, c| {
            f(tp, c);
            assert!(c.emit_error().is_some());
            c.emit(("fine", 1)); // dropped with the failed call
            Ok(())
        }));
        t.prepare(&words_ctx()).unwrap();
        let e = t.execute_values(1, &[Value::str("w")]).unwrap_err();
        let want = want.replace("tuple 1 from split/default task 1: ", "");
        assert_eq!(e, want, "{}", name);
        assert!(t.take_ops().is_empty(), "{}: nothing sent", name);
    }
    // An error returned by execute names the tuple.
    let mut t = Tester::bolt(FnBolt::new(|_, _| Err("probe error: bad word".into())));
    t.prepare(&words_ctx()).unwrap();
    assert_eq!(t.execute_values(9, &[Value::str("w")]).unwrap_err(), "Execute: tuple 9 from split/default task 1: probe error: bad word");
    // A spout export on a bolt.
    assert_eq!(t.next(1).unwrap_err(), "Next: ardea_next is a spout export, but this module registers a bolt");
}

#[test]
fn emit_kinds_anchors_and_flush() {
    let mut t = Tester::bolt(FnBolt::new(|tp, c| {
        let prev = 77u64;
        c.emit_anchored_to("events", tp, ("s", String::from("owned")));
        c.emit_multi_anchored("events", [tp.id(), 0, prev], (Text(b"t"), Some("x")));
        c.emit_to("events", (Null, None::<i64>));
        c.emit_multi_anchored("default", [tp, tp], (b"by".to_vec(), 2.5f64));
        c.emit(("b", true));
        let owned = tp.to_owned_tuple();
        c.emit_anchored(&owned, (&b"xy"[..], -3i32));
        c.fail(tp);
        c.ack(0u64); // untracked: dropped
        // Many emits: flushed in several emit calls.
        for i in 0..20000 {
            c.emit(("word", i));
        }
        Ok(())
    }));
    t.prepare(&words_ctx()).unwrap();
    t.execute_values(5, &[Value::str("w")]).unwrap();
    assert!(t.host().rec.borrow().emits.len() > 1, "flushed when full");
    let ops = t.take_ops_text();
    assert_eq!(ops.len(), 7 + 20000);
    assert_eq!(
        &ops[..7],
        [
            "emit s1 [5] (\"s\", \"owned\")",
            "emit s1 [5, 77] (\"t\", \"x\")",
            "emit s1 (null, null)",
            "emit s0 [5, 5] ([98, 121], 2.5)",
            "emit s0 (\"b\", true)",
            "emit s0 [5] ([120, 121], -3)",
            "fail 5",
        ]
    );
    assert_eq!(ops[7 + 19999], "emit s0 (\"word\", 19999)");
}

#[test]
fn untracked_tuples_are_not_anchored_or_acked() {
    let mut t = Tester::bolt(FnBolt::new(|tp, c| {
        c.emit_anchored(tp, ("a", 1));
        c.emit_multi_anchored("default", [tp], ("b", 2));
        c.ack(tp);
        c.fail(tp);
        Ok(())
    }));
    t.prepare(&words_ctx()).unwrap();
    t.execute_values(0, &[Value::str("w")]).unwrap();
    assert_eq!(t.take_ops_text(), ["emit s0 (\"a\", 1)", "emit s0 (\"b\", 2)"]);
}

#[test]
fn spout_next_loop_and_replay() {
    let failed = Rc::new(RefCell::new(Vec::new()));
    let f2 = failed.clone();
    let mut i = 0u64;
    let mut t = Tester::spout(FnSpout {
        next: Box::new(move |c| {
            if let Some(id) = f2.borrow_mut().pop() {
                c.emit_with_id(id, (format!("w{}", id), id as i64));
                return Ok(Status::More);
            }
            if i == 5 {
                return Ok(Status::Done);
            }
            i += 1;
            c.emit_with_id(i, (format!("w{}", i), i as i64));
            Ok(Status::More)
        }),
        ack: Box::new(move |id, fail, c| {
            if fail {
                failed.borrow_mut().push(id);
            } else {
                c.metric("acked", 1);
            }
            Ok(())
        }),
    });
    t.open(&ContextBlob { outputs: vec![Stream::new("default", &["word", "n"])], ..ContextBlob::default() }).unwrap();
    assert_eq!(t.next(2).unwrap(), Status::More);
    assert_eq!(t.take_ops_text(), ["emit s0 id 1 (\"w1\", 1)", "emit s0 id 2 (\"w2\", 2)"]);
    t.fail(&[2]).unwrap();
    t.ack(&[1]).unwrap();
    assert_eq!(t.next(100).unwrap(), Status::Done);
    assert_eq!(t.take_ops_text().len(), 4);
    assert_eq!(t.next(100).unwrap(), Status::Done);
    assert_eq!(t.host().rec.borrow().metrics.get("acked"), Some(&1));
    // Emitting is not allowed in close.
    t.activate().unwrap();
    t.close().unwrap();
    // A bolt export on a spout.
    assert!(t.tick().unwrap_err().contains("ardea_tick is a bolt export"));
}

#[test]
fn tuple_accessors_by_name_and_kind_errors() {
    let spec = [Value::str("héllo"), Value::Int(-5), Value::Float(0.5), Value::Bool(true), Value::Bytes(&[1, 2]), Value::Null];
    let mut raw = Vec::new();
    encode_values(&spec, &mut raw);
    let mut offs = Vec::new();
    scan_values(&raw, &mut offs).unwrap();
    let inp = Rc::new(Input::new("up", "s", &["s", "i", "f", "b", "x", "n"]));
    let t = Tuple::new(&raw, &offs, 4, 2, 0, &inp);
    assert_eq!(t.str("s"), "héllo");
    assert_eq!(t.string(0), "héllo");
    assert_eq!(t.int("i"), -5);
    assert_eq!(t.float("f"), 0.5);
    assert!(t.bool("b"));
    assert_eq!(t.bytes("x"), &[1, 2]);
    assert_eq!(t.value("n"), Value::Null);
    assert_eq!(t.kind("f"), Kind::Float);
    assert_eq!(t.index("b"), Some(3));
    assert_eq!((t.component(), t.stream(), t.source_task(), t.id()), ("up", "s", 2, 4));
    let owned = t.to_owned_tuple();
    assert_eq!(owned.tuple().values(), t.values());
    let e = std::panic::catch_unwind(|| t.int("s")).unwrap_err();
    assert_eq!(e.downcast_ref::<String>().unwrap(), "ardea: field 0 (s) is string, not int64");
    let e = std::panic::catch_unwind(|| t.int("zz")).unwrap_err();
    assert!(e.downcast_ref::<String>().unwrap().contains("has no field \"zz\""));
    let e = std::panic::catch_unwind(|| t.int(9usize)).unwrap_err();
    assert!(e.downcast_ref::<String>().unwrap().contains("out of range"));
}
