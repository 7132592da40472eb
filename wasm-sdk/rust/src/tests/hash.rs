//! The hash.txt vectors: grouping hashes, state keys, key groups and the
//! tasks that own them.

use std::rc::Rc;

use super::util::*;
use crate::codec::*;
use crate::*;

#[test]
fn vectors_hash() {
    let ps = [1u32, 2, 3, 7, 100, 256];
    let tasks = |kg: u32| -> String { ps.iter().map(|&p| key_group_task(kg, p, 256).to_string()).collect::<Vec<_>>().join(",") };
    let (mut ntuple, mut nkey) = (0, 0);
    for l in vectors("hash.txt") {
        match l[0].as_str() {
            "tuple" => {
                ntuple += 1;
                let name = &l[1];
                let spec = parse_spec(&l[2]);
                let idx: Vec<usize> = l[3].split(',').map(|s| s.parse().unwrap()).collect();
                let mut raw = Vec::new();
                encode_values(&values_of(&spec), &mut raw);
                let mut offs = Vec::new();
                scan_values(&raw, &mut offs).unwrap();
                let inp = Rc::new(input(spec.len()));
                let t = Tuple::new(&raw, &offs, 0, 0, 0, &inp);
                let h = t.grouping_hash(&idx);
                assert_eq!(format!("{:016x}", h), l[4], "{}: hash", name);
                assert_eq!(key_group(h, 256).to_string(), l[5], "{}: key group", name);
                assert_eq!(tasks(key_group(h, 256)), l[6], "{}: tasks", name);
                let key = t.state_key(&idx);
                assert_eq!(hex(&key), l[7], "{}: state key", name);
                // By field name too.
                let names: Vec<String> = idx.iter().map(|i| format!("f{}", i)).collect();
                let names: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
                assert_eq!(t.state_key(&names), key, "{}", name);
                if idx.len() == 1 {
                    assert_eq!(t.payload(idx[0]), &key[..], "{}: payload", name);
                }
                assert_eq!(format!("{:016x}", state_key_hash(&key)), l[8], "{}: state key hash", name);
            }
            "key" => {
                nkey += 1;
                let name = &l[1];
                let h = state_key_hash(&unhex(&l[2]));
                assert_eq!(format!("{:016x}", h), l[3], "{}: hash", name);
                assert_eq!(key_group(h, 256).to_string(), l[4], "{}", name);
                assert_eq!(tasks(key_group(h, 256)), l[5], "{}", name);
            }
            k => panic!("hash.txt: unknown line kind {:?}", k),
        }
    }
    assert!(ntuple > 0 && nkey > 0);
}
