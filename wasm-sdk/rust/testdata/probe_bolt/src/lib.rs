// The Rust SDK's conformance bolt (wasm-sdk/conformance/SPEC.md). Build
// (wasm-sdk/rust/build.sh, after building the SDK into libardea.rlib):
//
//   /usr/bin/rustc --edition 2021 --crate-type cdylib --crate-name probe_bolt --target wasm32-wasi \
//     -C opt-level=3 -C panic=abort -C codegen-units=1 -C lto -C strip=debuginfo -C debuginfo=0 \
//     --extern ardea=libardea.rlib -o wasm-sdk/rust/testdata/probe_bolt.wasm wasm-sdk/rust/testdata/probe_bolt/src/lib.rs

use ardea::{Bolt, BoltCollector, Context, Result, Tuple};

#[derive(Default)]
struct Probe {
    prefix: String,
    ticks: u64,
    executed: u64,
    prev: Option<u64>, // id of the previous tuple this task executed
}

impl Probe {
    fn run(&mut self, t: &Tuple, c: &mut BoltCollector) -> Result {
        self.executed += 1;
        let w = t.str(0);
        match w {
            "fail" => {
                c.fail(t);
                return Ok(());
            }
            "auto" => {
                c.emit(("auto", 0i64));
                return Ok(());
            }
            "twice" => {
                c.ack(t);
                c.ack(t);
                return Ok(());
            }
            "error" => return Err("probe error: bad word".into()),
            "panic" => panic!("probe panic"),
            "log" => c.warn("probe log"),
            "config" => {
                let pairs: Vec<String> = c.config_pairs().iter().map(|(k, v)| format!("{}={}", k, v)).collect();
                c.emit_anchored_to("events", t, ("config", pairs.join(",")));
            }
            "scan" => {
                let scan = c.state().scan("");
                for (k, v) in &scan {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(&v[..8]);
                    let line = format!("{}={}", String::from_utf8_lossy(k), i64::from_le_bytes(b));
                    c.emit_anchored_to("events", t, ("state", line));
                }
            }
            _ if w.starts_with("delete:") => {
                let k = &w["delete:".len()..];
                c.state().delete(k);
                c.emit_anchored_to("events", t, ("deleted", k));
            }
            _ if w.starts_with("direct:") => {
                let task: u32 = w["direct:".len()..].parse()?;
                c.emit_direct_anchored(task, "default", [t], (w, 0i64));
            }
            "metrics" => {
                c.gauge("probe.gauge", 2.5);
                c.observe("probe.size", 7);
                c.observe("probe.size", 1000);
                c.metric("probe.words", 0);
            }
            "multi" => match self.prev {
                Some(p) => c.emit_multi_anchored("default", [t.id(), p], ("multi", 2i64)),
                None => c.emit_multi_anchored("default", [t], ("multi", 2i64)),
            },
            _ => {
                let n = c.state().add_int(w, 1);
                let word = format!("{}{}", self.prefix, w);
                c.emit_anchored(t, (word, n));
                c.metric("probe.words", 1);
            }
        }
        c.ack(t);
        Ok(())
    }
}

impl Bolt for Probe {
    fn prepare(&mut self, ctx: &mut Context) -> Result {
        self.prefix = ctx.config_or("prefix", "").to_string();
        if ctx.config_or("ack", "") == "manual" {
            ctx.manual_ack();
        }
        ctx.info(&format!("prepared {} task {} of {}", ctx.component(), ctx.task_id(), ctx.parallelism()));
        Ok(())
    }

    fn execute(&mut self, t: &Tuple, c: &mut BoltCollector) -> Result {
        let r = self.run(t, c);
        self.prev = Some(t.id());
        r
    }

    fn tick(&mut self, c: &mut BoltCollector) -> Result {
        self.ticks += 1;
        c.emit_to("events", ("tick", self.ticks.to_string()));
        Ok(())
    }

    fn finish(&mut self, c: &mut BoltCollector) -> Result {
        c.emit_to("events", ("finish", self.executed.to_string()));
        Ok(())
    }
}

ardea::register_bolt!(Probe::default());
