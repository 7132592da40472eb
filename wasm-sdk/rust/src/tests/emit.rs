//! Emitting: errors fail the call, every emit kind and anchoring, flushing,
//! and untracked tuples.

use super::util::*;
use crate::codec::*;
use crate::testing::Tester;
use crate::*;

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
