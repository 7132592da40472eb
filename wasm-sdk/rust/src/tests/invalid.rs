//! The invalid.txt vectors: every malformed input is refused by the codec
//! and by the export that reads it.

use super::util::*;
use crate::codec::*;
use crate::testing::Tester;
use crate::*;

#[test]
fn vectors_invalid() {
    let mut kinds = std::collections::BTreeMap::new();
    for l in vectors("invalid.txt") {
        let (name, kind, b) = (&l[0], l[1].as_str(), unhex(l.get(2).map(|s| s.as_str()).unwrap_or("")));
        *kinds.entry(kind.to_string()).or_insert(0) += 1;
        match kind {
            "values" => {
                assert!(decode_values(&b).is_err(), "{}: decoded", name);
                // As the only record of a batch, execute refuses it.
                let mut t = Tester::bolt(FnBolt::new(|_, _| Ok(())));
                t.prepare(&bolt_ctx(vec![], vec![input(0)])).unwrap();
                let batch = encode_batch(&[Record { input: 0, source: 1, id: 0, values: &b }]);
                assert!(t.execute_raw(&batch).is_err(), "{}: executed", name);
            }
            "batch" => {
                assert!(decode_batch(&b).is_err(), "{}: decoded", name);
                let mut t = Tester::bolt(FnBolt::new(|_, _| Ok(())));
                t.prepare(&bolt_ctx(vec![], vec![input(0), input(0), input(0)])).unwrap();
                let e = t.execute_raw(&b);
                assert!(e.is_err(), "{}: executed", name);
                assert!(e.unwrap_err().starts_with("Execute: "), "{}", name);
            }
            "ops" => assert!(decode_ops(&b).is_err(), "{}: decoded", name),
            "context" => {
                assert!(ContextBlob::decode(&b).is_err(), "{}: decoded", name);
                let mut t = Tester::bolt(FnBolt::new(|_, _| Ok(())));
                let n = b.len();
                t.runtime().input_mut(n).copy_from_slice(&b);
                assert!(t.runtime().prepare(n as i32) < 0, "{}: prepared", name);
            }
            "msgids" => {
                assert!(decode_msgids(&b).is_err(), "{}: decoded", name);
                let mut t = Tester::spout(FnSpout { next: Box::new(|_| Ok(Status::Done)), ack: Box::new(|_, _, _| panic!("called")) });
                t.open(&ContextBlob::default()).unwrap();
                let n = b.len();
                t.runtime().input_mut(n).copy_from_slice(&b);
                assert!(t.runtime().ack_fail(n as i32, false) < 0, "{}: acked", name);
            }
            k => panic!("{}: unknown kind {:?}", name, k),
        }
    }
    for k in ["values", "batch", "ops", "context", "msgids"] {
        assert!(kinds.contains_key(k), "no {} vectors", k);
    }
}
