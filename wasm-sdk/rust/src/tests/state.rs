//! State: the write-back cache, its limits, and scans.

use std::rc::Rc;

use super::util::*;
use crate::codec::*;
use crate::testing::Tester;
use crate::*;

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
