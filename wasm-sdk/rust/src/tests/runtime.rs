//! The rest of the runtime: context config, logs, metrics and now; the
//! spout loop and replay; the Tuple accessors by name and their errors.

use std::cell::RefCell;
use std::rc::Rc;

use super::util::*;
use crate::codec::*;
use crate::testing::Tester;
use crate::*;

#[test]
fn context_config_log_metric_now() {
    let mut bolt = FnBolt::new(|tp, c| {
        c.metric("seen", 1);
        c.metric("other", 2);
        c.gauge("depth", tp.str(0).len() as f64 + 0.5);
        c.observe("size", tp.str(0).len() as i64);
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
    assert_eq!(r.gauges.get("depth"), Some(&1.5));
    assert_eq!(r.observed.get("size"), Some(&vec![1, 1]), "every observation reaches the host");
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

/// A batch of one-word tuples on input 0 from task 1, ids from `first`.
fn word_batch(first: u64, words: &[&str]) -> Vec<u8> {
    let vals: Vec<Vec<u8>> = words
        .iter()
        .map(|w| {
            let mut v = Vec::new();
            encode_values(&[Value::str(w)], &mut v);
            v
        })
        .collect();
    let recs: Vec<Record> = vals.iter().enumerate().map(|(i, v)| Record { input: 0, source: 1, id: first + i as u64, values: v }).collect();
    encode_batch(&recs)
}

#[test]
fn panic_fails_the_call_naming_tuple_and_location_and_sets_the_cursor() {
    let mut t = Tester::bolt(FnBolt::new(|tp, c| {
        if tp.str(0) == "boom" {
            panic!("no {}", "boom");
        }
        c.emit_anchored(tp, (tp.str(0), 1i64));
        c.ack(tp);
        Ok(())
    }));
    t.prepare(&words_ctx()).unwrap();
    let line = line!() - 7;
    let err = t.execute_raw(&word_batch(10, &["a", "b", "boom", "c"])).unwrap_err();
    let want = format!("Execute: tuple 12 from split/default task 1: panic: no boom at {}:{}:13", file!(), line);
    assert_eq!(err, want);
    assert_eq!(t.cursor(), 2, "the cursor names the failing record");
    assert!(t.take_ops_text().is_empty(), "a failed call sends nothing");
    // An error returned by execute: the same cursor, the error's text.
    let mut t = Tester::bolt(FnBolt::new(|tp, _| if tp.str(0) == "bad" { Err("bad word".into()) } else { Ok(()) }));
    t.prepare(&words_ctx()).unwrap();
    t.execute_raw(&word_batch(1, &["x", "bad"])).unwrap_err();
    assert_eq!(t.cursor(), 1);
    assert_eq!(t.host().rec.borrow().errors.last().unwrap(), "Execute: tuple 2 from split/default task 1: bad word");
    // The component keeps working after a failed call.
    t.execute_raw(&word_batch(3, &["y"])).unwrap();
    assert_eq!(t.cursor(), 0);
    // A panic outside execute names the call.
    let mut b = FnBolt::new(|_, _| Ok(()));
    b.tick = Box::new(|_| panic!("tick boom"));
    let mut t = Tester::bolt(b);
    t.prepare(&words_ctx()).unwrap();
    let err = t.tick().unwrap_err();
    assert!(err.starts_with(&format!("Tick: panic: tick boom at {}:", file!())), "{}", err);
}

#[test]
fn absent_field_by_name_names_the_field_and_the_tuples_fields() {
    let mut t = Tester::bolt(FnBolt::new(|tp, _| {
        tp.str("token");
        Ok(())
    }));
    t.prepare(&words_ctx()).unwrap();
    let err = t.execute_values(5, &[Value::str("w")]).unwrap_err();
    assert!(err.starts_with("Execute: tuple 5 from split/default task 1: panic: ardea: stream split/default has no field \"token\" (fields [\"word\"])"), "{}", err);
}
