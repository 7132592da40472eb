//! The ops.txt vectors: the op codec, and every emit, ack and fail of the
//! bolt and spout APIs.

use super::util::*;
use crate::codec::*;
use crate::testing::Tester;
use crate::*;

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
