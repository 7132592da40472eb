// The poison bolt with the Rust SDK: it upper-cases field 0 (`line`),
// emits it anchored and acks the line; a line holding "poison" panics,
// which the SDK reports with its message and source location before it
// traps, and the host fails that tuple (the SDK exports ardea_cursor).
// Build: host/testdata/poison/build.sh.

use ardea::{Bolt, BoltCollector, Result, Tuple};

struct Upper;

impl Bolt for Upper {
    fn execute(&mut self, t: &Tuple, c: &mut BoltCollector) -> Result {
        let line = t.str(0);
        if line.contains("poison") {
            panic!("poison tuple: {}", line);
        }
        c.emit_anchored(t, (line.to_uppercase().as_str(),));
        c.ack(t);
        Ok(())
    }
}

ardea::register_bolt!(Upper);
