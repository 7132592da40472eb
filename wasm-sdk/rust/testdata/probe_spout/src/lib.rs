// The Rust SDK's conformance spout (wasm-sdk/conformance/SPEC.md). Build
// (wasm-sdk/rust/build.sh, after building the SDK into libardea.rlib):
//
//   /usr/bin/rustc --edition 2021 --crate-type cdylib --crate-name probe_spout --target wasm32-wasi \
//     -C opt-level=3 -C panic=abort -C codegen-units=1 -C lto -C strip=debuginfo -C debuginfo=0 \
//     --extern ardea=libardea.rlib -o wasm-sdk/rust/testdata/probe_spout.wasm wasm-sdk/rust/testdata/probe_spout/src/lib.rs

use std::collections::VecDeque;

use ardea::{Context, Result, Spout, SpoutCollector, Status};

#[derive(Default)]
struct Probe {
    count: u64,
    next: u64,              // last new tuple emitted
    replay: VecDeque<u64>, // failed ids waiting to be emitted again
}

impl Spout for Probe {
    fn open(&mut self, ctx: &mut Context) -> Result {
        self.count = ctx.config_int("count", 5)? as u64;
        ctx.info(&format!("opened {} task {}", ctx.component(), ctx.task_id()));
        Ok(())
    }

    fn next(&mut self, c: &mut SpoutCollector) -> Result<Status> {
        while c.remaining() > 0 {
            let id = match self.replay.pop_front() {
                Some(id) => id,
                None => break,
            };
            c.emit_with_id(id, (format!("w{}", id), id as i64));
        }
        while c.remaining() > 0 && self.next < self.count {
            self.next += 1;
            c.emit_with_id(self.next, (format!("w{}", self.next), self.next as i64));
        }
        if self.next >= self.count && self.replay.is_empty() {
            return Ok(Status::Done);
        }
        Ok(Status::More)
    }

    fn ack(&mut self, _id: u64, c: &mut SpoutCollector) -> Result {
        c.metric("probe.acked", 1);
        Ok(())
    }

    fn fail(&mut self, id: u64, _c: &mut SpoutCollector) -> Result {
        self.replay.push_back(id);
        Ok(())
    }

    fn activate(&mut self, ctx: &mut Context) -> Result {
        ctx.info("activated");
        Ok(())
    }

    fn deactivate(&mut self, ctx: &mut Context) -> Result {
        ctx.info("deactivated");
        Ok(())
    }
}

ardea::register_spout!(Probe::default());
