//! ardea::testing itself, and the declarations (registration macros,
//! manifest JSON, the Tester's checks).

use super::util::*;
use crate::testing::{Tester, Val};
use crate::*;

/// A bolt using everything the harness records: config, emits on two
/// streams, acks and fails, logs, metrics, state, ticks and finish.
#[derive(Default)]
struct Upper {
    prefix: String,
    seen: i64,
}

impl Bolt for Upper {
    fn prepare(&mut self, ctx: &mut Context) -> Result {
        self.prefix = ctx.config_or("prefix", "").to_string();
        ctx.info("prepared");
        Ok(())
    }
    fn execute(&mut self, t: &Tuple, c: &mut BoltCollector) -> Result {
        let line = t.str("line");
        if line == "bad" {
            c.fail(t);
            return Ok(());
        }
        self.seen += 1;
        let n = c.state().add_int(line, 1);
        c.emit_anchored(t, (format!("{}{}", self.prefix, line.to_ascii_uppercase()),));
        c.emit_anchored_to("counts", t, (line, n));
        c.metric("lines", 1);
        c.gauge("last.len", line.len() as f64);
        c.observe("len", line.len() as i64);
        c.warn(&format!("saw {}", line));
        c.ack(t);
        Ok(())
    }
    fn tick(&mut self, c: &mut BoltCollector) -> Result {
        c.emit_to("counts", ("tick", self.seen));
        Ok(())
    }
    fn finish(&mut self, c: &mut BoltCollector) -> Result {
        c.emit_to("counts", ("total", self.seen));
        Ok(())
    }
}

mod registered {
    use crate::testing::Tester;
    crate::register_bolt!(super::Upper::default(), emits: [("default", ["line"]), ("counts", ["line", "n"])], reads: ["line"], config: ["prefix"]);

    /// What ardea::tester!() gives in a component crate.
    pub(super) fn tester() -> Tester {
        Tester::with_declarations(__ardea_component(), __ardea_declarations())
    }

    pub(super) fn declarations() -> crate::Declarations {
        __ardea_declarations()
    }
}

#[test]
fn bolt_emits_per_stream_acks_fails_logs_metrics_state_tick_finish() {
    let mut t = registered::tester().config("prefix", ">");
    t.set_state_int("b", 41);
    t.start().unwrap();
    t.execute_strs(1, &["a"]).unwrap();
    t.execute_strs(2, &["b"]).unwrap();
    t.execute_strs(3, &["bad"]).unwrap();
    let out = t.take_output();
    assert_eq!(out.firsts("default"), [">A", ">B"]);
    assert_eq!(out.on("default")[1].anchors, [2]);
    let counts = out.on("counts");
    assert_eq!((counts[1].str(0), counts[1].int(1)), ("b".to_string(), 42));
    assert_eq!(counts[0].values, [Val::from("a"), Val::from(1i64)]);
    assert_eq!(out.acks, [1, 2]);
    assert_eq!(out.fails, [3]);
    assert_eq!(t.logs()[0], (LEVEL_INFO, "prepared".to_string()));
    assert_eq!(t.logs()[2], (LEVEL_WARN, "saw b".to_string()));
    assert_eq!(t.metric("lines"), 2);
    assert_eq!(t.gauge("last.len"), Some(1.0));
    assert_eq!(t.observed("len"), [1, 1]);
    assert_eq!(t.state_int("a"), Some(1));
    assert_eq!(t.state_int("b"), Some(42));
    t.tick().unwrap();
    t.finish().unwrap();
    let out = t.take_output();
    assert_eq!(out.emits.len(), 2);
    assert_eq!((out.emits[0].stream.as_str(), out.emits[0].str(0), out.emits[0].int(1)), ("counts", "tick".to_string(), 2));
    assert_eq!(out.emits[1].str(0), "total");
    assert!(out.emits[1].anchors.is_empty());
    t.close().unwrap();
}

#[test]
fn declarations_make_the_context_and_are_checked() {
    // A context whose input lacks a field the bolt reads is refused at
    // start, naming both lists (what `ardea run` refuses of a topology).
    let mut t = registered::tester().input("split", &["token"]);
    let err = t.start().unwrap_err();
    assert!(err.contains("reads [\"line\"] by name, but its input split/default has fields [\"token\"]"), "{}", err);
    // Outputs that differ from the declared ones.
    let mut t = registered::tester().output("default", &["word"]);
    let err = t.start().unwrap_err();
    assert!(err.contains("declares emits [default:[\"line\"], counts:[\"line\", \"n\"]] but the context's outputs are [default:[\"word\"]]"), "{}", err);

    // A field read by name or a config key that the bolt does not declare
    // fails the call.
    let mut t = Tester::bolt(FnBolt::new(|tp, _| {
        tp.str("other");
        Ok(())
    }))
    .declare(Declarations::new().emits("default", &["line"]).reads(&["line"]))
    .input("up", &["line", "other"]);
    t.start().unwrap();
    let err = t.execute_strs(1, &["x", "y"]).unwrap_err();
    assert!(err.contains("read field \"other\" by name, which it does not declare (reads: [\"line\"])"), "{}", err);
    let mut b = FnBolt::new(|_, _| Ok(()));
    b.prepare = Box::new(|ctx| {
        ctx.config("limit");
        Ok(())
    });
    let mut t = Tester::bolt(b).declare(Declarations::new().config(&["max"]));
    let err = t.start().unwrap_err();
    assert!(err.contains("read config key \"limit\", which it does not declare (config: [\"max\"])"), "{}", err);
}

#[test]
fn manifest_json() {
    let d = registered::declarations();
    assert_eq!(
        d.manifest_json("bolt"),
        r#"{"manifest":1,"sdk":{"language":"rust","version":"0.1.0"},"kind":"bolt","outputs":[{"stream":"default","fields":["line"]},{"stream":"counts","fields":["line","n"]}],"inputs":["line"],"config":["prefix"]}"#
    );
    assert_eq!(Declarations::new().manifest_json("spout"), r#"{"manifest":1,"sdk":{"language":"rust","version":"0.1.0"},"kind":"spout"}"#);
    let d = Declarations::new().emits_nothing().config(&["a\"b\\c\n"]);
    assert_eq!(d.manifest_json("bolt"), r#"{"manifest":1,"sdk":{"language":"rust","version":"0.1.0"},"kind":"bolt","outputs":[],"config":["a\"b\\c\n"]}"#);
    // The version is the crate's.
    if let Some(v) = option_env!("CARGO_PKG_VERSION") {
        assert_eq!(SDK_VERSION, v);
    }
}

mod forms {
    // Every form of the registration macros compiles; declarations in any
    // order, a trailing comma, none at all.
    pub(super) mod plain {
        crate::register_bolt!(crate::tests::util::FnBolt::new(|_, _| Ok(())));
        pub(crate) fn d() -> crate::Declarations {
            __ardea_declarations()
        }
    }
    pub(super) mod spout {
        crate::register_spout!(super::super::Lines { n: 0 }, config: ["count"], emits: [("default", ["line"])],);
        pub(crate) fn t() -> crate::testing::Tester {
            crate::testing::Tester::with_declarations(__ardea_component(), __ardea_declarations())
        }
    }
    pub(super) mod sink {
        crate::register_bolt!(crate::tests::util::FnBolt::new(|_, _| Ok(())), emits: [], reads: []);
        pub(crate) fn d() -> crate::Declarations {
            __ardea_declarations()
        }
    }
}

#[test]
fn registration_forms() {
    assert_eq!(forms::plain::d(), Declarations::new());
    assert_eq!(forms::sink::d(), Declarations { outputs: Some(vec![]), inputs: Some(vec![]), config: None });
}

/// A spout of `count` lines (config), each tracked by its number.
struct Lines {
    n: i64,
}

impl Spout for Lines {
    fn next(&mut self, c: &mut SpoutCollector) -> Result<Status> {
        let count = c.config_int("count", 10)?;
        while c.remaining() > 0 {
            if self.n == count {
                return Ok(Status::Done);
            }
            self.n += 1;
            c.emit_with_id(self.n as u64, (format!("line {}", self.n),));
        }
        Ok(Status::More)
    }
    fn fail(&mut self, id: u64, c: &mut SpoutCollector) -> Result {
        c.emit_with_id(id, (format!("line {} again", id),));
        Ok(())
    }
    fn ack(&mut self, _id: u64, c: &mut SpoutCollector) -> Result {
        c.metric("acked", 1);
        Ok(())
    }
    fn deactivate(&mut self, ctx: &mut Context) -> Result {
        ctx.info("paused");
        Ok(())
    }
}

#[test]
fn spout_next_budget_drain_ack_fail_activate() {
    let mut t = forms::spout::t().config("count", "5");
    t.start().unwrap();
    assert_eq!(t.next(2).unwrap(), Status::More);
    let out = t.take_output();
    assert_eq!(out.firsts("default"), ["line 1", "line 2"]);
    assert_eq!(out.emits[1].msgid, 2);
    assert_eq!(t.drain(2, 100).unwrap(), Status::Done);
    assert_eq!(t.take_output().firsts("default"), ["line 3", "line 4", "line 5"]);
    t.ack(&[1, 2]).unwrap();
    t.fail(&[3]).unwrap();
    assert_eq!(t.metric("acked"), 2);
    assert_eq!(t.take_output().emits[0].str(0), "line 3 again");
    t.deactivate().unwrap();
    t.activate().unwrap();
    assert_eq!(t.logs(), [(LEVEL_INFO, "paused".to_string())]);
}
