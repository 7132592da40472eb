//! The values.txt and batch.txt vectors: the codec, the emit API and the
//! Tuple accessors against them.

use std::cell::RefCell;
use std::rc::Rc;

use super::util::*;
use crate::codec::*;
use crate::testing::Tester;

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
