//! The context.txt and msgids.txt vectors: the context blob through
//! prepare, and the id lists through ardea_ack and ardea_fail.

use std::cell::RefCell;
use std::rc::Rc;

use super::util::*;
use crate::codec::*;
use crate::testing::Tester;
use crate::*;

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
