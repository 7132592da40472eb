//! The ABI v1 encodings (wasm-sdk/ABI.md): values, input batches, context
//! blobs, emit ops, message id lists and the fields-grouping hash. The
//! runtime uses them to talk to the host; they are public so that tests
//! (yours and the SDK's) can build inputs and read outputs.

use std::fmt;

/// A field's type: the ABI's tag byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Null = 0,
    Bytes = 1,
    String = 2,
    Int = 3,
    Float = 4,
    Bool = 5,
}

impl Kind {
    /// The kind of a tag byte, or None for an unknown tag.
    pub fn from_tag(tag: u8) -> Option<Kind> {
        match tag {
            0 => Some(Kind::Null),
            1 => Some(Kind::Bytes),
            2 => Some(Kind::String),
            3 => Some(Kind::Int),
            4 => Some(Kind::Float),
            5 => Some(Kind::Bool),
            _ => None,
        }
    }

    /// The kind's name as the ABI spells it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Bytes => "bytes",
            Kind::String => "string",
            Kind::Int => "int64",
            Kind::Float => "float64",
            Kind::Bool => "bool",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One field value, borrowing its bytes. A string is kept as its UTF-8
/// bytes, exactly as the wire carries it ([`Value::as_str`] checks them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    Null,
    Bytes(&'a [u8]),
    String(&'a [u8]),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl<'a> Value<'a> {
    /// A string value.
    pub fn str(s: &'a str) -> Value<'a> {
        Value::String(s.as_bytes())
    }

    /// The value's kind.
    pub fn kind(&self) -> Kind {
        match self {
            Value::Null => Kind::Null,
            Value::Bytes(_) => Kind::Bytes,
            Value::String(_) => Kind::String,
            Value::Int(_) => Kind::Int,
            Value::Float(_) => Kind::Float,
            Value::Bool(_) => Kind::Bool,
        }
    }

    /// The string, if this is a string field holding valid UTF-8.
    pub fn as_str(&self) -> Option<&'a str> {
        match *self {
            Value::String(b) => std::str::from_utf8(b).ok(),
            _ => None,
        }
    }

    /// The field's payload: its bytes after the tag (and after the length
    /// prefix of a string or bytes field), as fields grouping hashes them.
    /// An int64 or float64 is 8 bytes little endian, a bool 1 byte, null
    /// nothing. `buf` holds the fixed-size payloads.
    pub fn payload<'b>(&'b self, buf: &'b mut [u8; 8]) -> &'b [u8] {
        match *self {
            Value::Null => &[],
            Value::Bytes(b) | Value::String(b) => b,
            Value::Int(i) => {
                *buf = i.to_le_bytes();
                &buf[..]
            }
            Value::Float(f) => {
                *buf = f.to_bits().to_le_bytes();
                &buf[..]
            }
            Value::Bool(b) => {
                buf[0] = b as u8;
                &buf[..1]
            }
        }
    }

    /// Appends the field (tag and payload) to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            Value::Null => out.push(0),
            Value::Bytes(b) => put_blob(out, 1, b),
            Value::String(b) => put_blob(out, 2, b),
            Value::Int(i) => put_fixed(out, 3, i as u64),
            Value::Float(f) => put_fixed(out, 4, f.to_bits()),
            Value::Bool(b) => out.extend_from_slice(&[5, b as u8]),
        }
    }
}

/// Appends a bytes (tag 1) or string (tag 2) field.
#[inline]
pub(crate) fn put_blob(out: &mut Vec<u8>, tag: u8, b: &[u8]) {
    let n = (b.len() as u32).to_le_bytes();
    out.reserve(5 + b.len());
    out.extend_from_slice(&[tag, n[0], n[1], n[2], n[3]]);
    out.extend_from_slice(b);
}

/// Appends an int64 (tag 3) or float64 (tag 4) field.
#[inline]
pub(crate) fn put_fixed(out: &mut Vec<u8>, tag: u8, u: u64) {
    let b = u.to_le_bytes();
    out.extend_from_slice(&[tag, b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
}

/// A malformed encoding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DecodeError {}

fn err<T>(msg: impl Into<String>) -> Result<T, DecodeError> {
    Err(DecodeError(msg.into()))
}

const SHORT: &str = "short buffer";

/// Appends a values block (`u16 nfields, field*`).
pub fn encode_values(values: &[Value<'_>], out: &mut Vec<u8>) {
    out.extend_from_slice(&(values.len() as u16).to_le_bytes());
    for v in values {
        v.encode(out);
    }
}

/// Validates a values block that must span all of `b` and sets `offs` to
/// the offset of every field's tag.
pub fn scan_values(b: &[u8], offs: &mut Vec<u32>) -> Result<(), DecodeError> {
    offs.clear();
    if b.len() < 2 {
        return err(SHORT);
    }
    let n = u16::from_le_bytes([b[0], b[1]]) as usize;
    let mut off = 2usize;
    for i in 0..n {
        if off >= b.len() {
            return err(format!("field {}: {}", i, SHORT));
        }
        offs.push(off as u32);
        let left = b.len() - off;
        match b[off] {
            0 => off += 1,
            1 | 2 => {
                if left < 5 {
                    return err(format!("field {}: {}", i, SHORT));
                }
                let l = le32(&b[off + 1..]) as usize;
                if left - 5 < l {
                    return err(format!("field {}: {}", i, SHORT));
                }
                off += 5 + l;
            }
            3 | 4 => {
                if left < 9 {
                    return err(format!("field {}: {}", i, SHORT));
                }
                off += 9;
            }
            5 => {
                if left < 2 {
                    return err(format!("field {}: {}", i, SHORT));
                }
                if b[off + 1] > 1 {
                    return err(format!("field {}: bool payload {} is not 0 or 1", i, b[off + 1]));
                }
                off += 2;
            }
            t => return err(format!("field {}: unknown kind {}", i, t)),
        }
    }
    if off != b.len() {
        return err(format!("{} trailing bytes after {} fields", b.len() - off, n));
    }
    Ok(())
}

/// The value of the field whose tag is at `b[off]` (a block that
/// [`scan_values`] accepted).
pub(crate) fn field_at(b: &[u8], off: usize) -> Value<'_> {
    match b[off] {
        1 | 2 => {
            let n = le32(&b[off + 1..]) as usize;
            let p = &b[off + 5..off + 5 + n];
            if b[off] == 1 {
                Value::Bytes(p)
            } else {
                Value::String(p)
            }
        }
        3 => Value::Int(le64(&b[off + 1..]) as i64),
        4 => Value::Float(f64::from_bits(le64(&b[off + 1..]))),
        5 => Value::Bool(b[off + 1] == 1),
        _ => Value::Null,
    }
}

/// Decodes a values block that must span all of `b`.
pub fn decode_values(b: &[u8]) -> Result<Vec<Value<'_>>, DecodeError> {
    let mut offs = Vec::new();
    scan_values(b, &mut offs)?;
    Ok(offs.iter().map(|&o| field_at(b, o as usize)).collect())
}

#[inline]
pub(crate) fn le16(b: &[u8]) -> u16 {
    u16::from_le_bytes([b[0], b[1]])
}

#[inline]
pub(crate) fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

#[inline]
pub(crate) fn le64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

/// One input batch record.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Record<'a> {
    /// Input index: the position of the (component, stream) pair in the
    /// context's inputs.
    pub input: u16,
    /// The task that emitted the tuple.
    pub source: u32,
    /// The tuple id (0: untracked).
    pub id: u64,
    /// The encoded values block.
    pub values: &'a [u8],
}

/// The size of a record before its values: `u32 len, u16 input, u32
/// source, u64 id`.
pub(crate) const RECORD_HEADER: usize = 4 + 2 + 4 + 8;

/// Appends one record to a batch under construction (see [`encode_batch`]).
pub fn encode_record(r: &Record<'_>, out: &mut Vec<u8>) {
    let l = (RECORD_HEADER - 4 + r.values.len()) as u32;
    out.extend_from_slice(&l.to_le_bytes());
    out.extend_from_slice(&r.input.to_le_bytes());
    out.extend_from_slice(&r.source.to_le_bytes());
    out.extend_from_slice(&r.id.to_le_bytes());
    out.extend_from_slice(r.values);
}

/// Encodes an input batch (`u32 count, record*`).
pub fn encode_batch(records: &[Record<'_>]) -> Vec<u8> {
    let mut out = (records.len() as u32).to_le_bytes().to_vec();
    for r in records {
        encode_record(r, &mut out);
    }
    out
}

/// Decodes an input batch; every record's values block is validated.
pub fn decode_batch(b: &[u8]) -> Result<Vec<Record<'_>>, DecodeError> {
    if b.len() < 4 {
        return err("batch: short header");
    }
    let count = le32(b);
    let mut off = 4usize;
    let mut out = Vec::new();
    let mut offs = Vec::new();
    for i in 0..count {
        if b.len() - off < RECORD_HEADER {
            return err(format!("batch record {}: {}", i, SHORT));
        }
        let l = le32(&b[off..]) as usize;
        if l < RECORD_HEADER - 4 || b.len() - off - 4 < l {
            return err(format!("batch record {}: length {} does not fit", i, l));
        }
        let rec = &b[off + 4..off + 4 + l];
        off += 4 + l;
        let values = &rec[RECORD_HEADER - 4..];
        if let Err(e) = scan_values(values, &mut offs) {
            return err(format!("batch record {}: {}", i, e));
        }
        out.push(Record { input: le16(rec), source: le32(&rec[2..]), id: le64(&rec[6..]), values });
    }
    if off != b.len() {
        return err(format!("batch: {} trailing bytes", b.len() - off));
    }
    Ok(out)
}

/// A declared output stream.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Stream {
    pub name: String,
    pub fields: Vec<String>,
}

/// A (component, stream) pair a bolt subscribes to, with the stream's
/// declared fields.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Input {
    pub component: String,
    pub stream: String,
    pub fields: Vec<String>,
}

impl Input {
    /// The position of a declared field, or None.
    pub fn index(&self, field: &str) -> Option<usize> {
        self.fields.iter().position(|f| f == field)
    }
}

/// The context blob of `ardea_open` / `ardea_prepare`, decoded.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ContextBlob {
    pub topology: String,
    pub component: String,
    pub task_id: u32,
    pub task_index: u32,
    pub parallelism: u32,
    /// Config pairs in the blob's order (ascending keys).
    pub config: Vec<(String, String)>,
    pub outputs: Vec<Stream>,
    pub inputs: Vec<Input>,
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

impl ContextBlob {
    /// Encodes the blob as the host does.
    pub fn encode(&self) -> Vec<u8> {
        let mut o = Vec::new();
        put_str(&mut o, &self.topology);
        put_str(&mut o, &self.component);
        for v in [self.task_id, self.task_index, self.parallelism, self.config.len() as u32] {
            o.extend_from_slice(&v.to_le_bytes());
        }
        for (k, v) in &self.config {
            put_str(&mut o, k);
            put_str(&mut o, v);
        }
        o.extend_from_slice(&(self.outputs.len() as u16).to_le_bytes());
        for s in &self.outputs {
            put_str(&mut o, &s.name);
            o.extend_from_slice(&(s.fields.len() as u16).to_le_bytes());
            for f in &s.fields {
                put_str(&mut o, f);
            }
        }
        o.extend_from_slice(&(self.inputs.len() as u16).to_le_bytes());
        for i in &self.inputs {
            put_str(&mut o, &i.component);
            put_str(&mut o, &i.stream);
            o.extend_from_slice(&(i.fields.len() as u16).to_le_bytes());
            for f in &i.fields {
                put_str(&mut o, f);
            }
        }
        o
    }

    /// Decodes a context blob that must span all of `b`.
    pub fn decode(b: &[u8]) -> Result<ContextBlob, DecodeError> {
        let mut r = Reader { b, off: 0 };
        let mut c = ContextBlob {
            topology: r.str("topology")?,
            component: r.str("component")?,
            task_id: r.u32("task id")?,
            task_index: r.u32("task index")?,
            parallelism: r.u32("parallelism")?,
            ..ContextBlob::default()
        };
        let n = r.u32("config count")?;
        for _ in 0..n {
            let k = r.str("config key")?;
            let v = r.str("config value")?;
            c.config.push((k, v));
        }
        let n = r.u16("output count")?;
        for _ in 0..n {
            let name = r.str("output stream")?;
            let fields = r.fields()?;
            c.outputs.push(Stream { name, fields });
        }
        let n = r.u16("input count")?;
        for _ in 0..n {
            let component = r.str("input component")?;
            let stream = r.str("input stream")?;
            let fields = r.fields()?;
            c.inputs.push(Input { component, stream, fields });
        }
        if r.off != b.len() {
            return err(format!("context: {} trailing bytes", b.len() - r.off));
        }
        Ok(c)
    }
}

struct Reader<'a> {
    b: &'a [u8],
    off: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], DecodeError> {
        if self.b.len() - self.off < n {
            return err(format!("context: {}: {}", what, SHORT));
        }
        let s = &self.b[self.off..self.off + n];
        self.off += n;
        Ok(s)
    }
    fn u16(&mut self, what: &str) -> Result<u16, DecodeError> {
        self.take(2, what).map(le16)
    }
    fn u32(&mut self, what: &str) -> Result<u32, DecodeError> {
        self.take(4, what).map(le32)
    }
    fn str(&mut self, what: &str) -> Result<String, DecodeError> {
        let n = self.u32(what)? as usize;
        let b = self.take(n, what)?;
        match std::str::from_utf8(b) {
            Ok(s) => Ok(s.to_string()),
            Err(_) => err(format!("context: {}: not UTF-8", what)),
        }
    }
    fn fields(&mut self) -> Result<Vec<String>, DecodeError> {
        let n = self.u16("field count")?;
        let mut f = Vec::new();
        for _ in 0..n {
            f.push(self.str("field name")?);
        }
        Ok(f)
    }
}

/// Encodes a spout's ack/fail payload (`u32 count, u64 msgid*`).
pub fn encode_msgids(ids: &[u64]) -> Vec<u8> {
    let mut o = (ids.len() as u32).to_le_bytes().to_vec();
    for id in ids {
        o.extend_from_slice(&id.to_le_bytes());
    }
    o
}

/// Checks an ack/fail payload: its length must be `4 + 8*count`.
pub fn check_msgids(b: &[u8]) -> Result<usize, DecodeError> {
    if b.len() < 4 || (b.len() - 4) as u64 != 8 * le32(b) as u64 {
        return err(format!("malformed message id list ({} bytes)", b.len()));
    }
    Ok(le32(b) as usize)
}

/// Decodes an ack/fail payload.
pub fn decode_msgids(b: &[u8]) -> Result<Vec<u64>, DecodeError> {
    let n = check_msgids(b)?;
    Ok((0..n).map(|i| le64(&b[4 + 8 * i..])).collect())
}

/// Emit op codes.
pub const OP_EMIT: u8 = 1;
pub const OP_ACK: u8 = 2;
pub const OP_FAIL: u8 = 3;

/// The direct task of an emit that is not direct.
pub const NO_TASK: u32 = 0xFFFF_FFFF;

/// The size of an emit op before its anchors: code, stream, direct task,
/// message id, anchor count.
pub(crate) const EMIT_HEADER: usize = 1 + 2 + 4 + 8 + 2;

/// One emit op as `ardea.emit` carries it. The SDK writes ops itself; this
/// type is for reading them back (tests, [`crate::testing`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Op<'a> {
    Emit {
        stream: u16,
        /// [`NO_TASK`] unless direct.
        direct: u32,
        msgid: u64,
        anchors: Vec<u64>,
        /// The encoded values block.
        values: &'a [u8],
    },
    Ack(u64),
    Fail(u64),
}

impl<'a> Op<'a> {
    /// Appends the op.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Op::Emit { stream, direct, msgid, anchors, values } => {
                out.push(OP_EMIT);
                out.extend_from_slice(&stream.to_le_bytes());
                out.extend_from_slice(&direct.to_le_bytes());
                out.extend_from_slice(&msgid.to_le_bytes());
                out.extend_from_slice(&(anchors.len() as u16).to_le_bytes());
                for a in anchors {
                    out.extend_from_slice(&a.to_le_bytes());
                }
                out.extend_from_slice(values);
            }
            Op::Ack(id) => {
                out.push(OP_ACK);
                out.extend_from_slice(&id.to_le_bytes());
            }
            Op::Fail(id) => {
                out.push(OP_FAIL);
                out.extend_from_slice(&id.to_le_bytes());
            }
        }
    }

    /// The emitted values (empty for ack and fail).
    pub fn decoded_values(&self) -> Vec<Value<'a>> {
        match self {
            Op::Emit { values, .. } => decode_values(values).unwrap_or_default(),
            _ => Vec::new(),
        }
    }
}

/// Decodes a sequence of ops read to its end (what the host does with an
/// `ardea.emit` call).
pub fn decode_ops(b: &[u8]) -> Result<Vec<Op<'_>>, DecodeError> {
    let mut out = Vec::new();
    let mut off = 0usize;
    let mut offs = Vec::new();
    while off < b.len() {
        let code = b[off];
        let left = b.len() - off;
        match code {
            OP_ACK | OP_FAIL => {
                if left < 9 {
                    return err(format!("op at {}: {}", off, SHORT));
                }
                let id = le64(&b[off + 1..]);
                out.push(if code == OP_ACK { Op::Ack(id) } else { Op::Fail(id) });
                off += 9;
            }
            OP_EMIT => {
                if left < EMIT_HEADER {
                    return err(format!("emit at {}: {}", off, SHORT));
                }
                let h = &b[off..];
                let na = le16(&h[15..]) as usize;
                if left < EMIT_HEADER + 8 * na {
                    return err(format!("emit at {}: anchors: {}", off, SHORT));
                }
                let anchors = (0..na).map(|i| le64(&h[EMIT_HEADER + 8 * i..])).collect();
                let vstart = off + EMIT_HEADER + 8 * na;
                let vlen = values_len(&b[vstart..])?;
                let values = &b[vstart..vstart + vlen];
                scan_values(values, &mut offs)?;
                out.push(Op::Emit { stream: le16(&h[1..]), direct: le32(&h[3..]), msgid: le64(&h[7..]), anchors, values });
                off = vstart + vlen;
            }
            c => return err(format!("op at {}: unknown op code {}", off, c)),
        }
    }
    Ok(out)
}

/// The length of the values block at the start of `b`.
fn values_len(b: &[u8]) -> Result<usize, DecodeError> {
    if b.len() < 2 {
        return err(SHORT);
    }
    let n = le16(b) as usize;
    let mut off = 2;
    for i in 0..n {
        if off >= b.len() {
            return err(format!("field {}: {}", i, SHORT));
        }
        let need = match b[off] {
            0 => 1,
            1 | 2 => {
                if b.len() - off < 5 {
                    return err(format!("field {}: {}", i, SHORT));
                }
                5 + le32(&b[off + 1..]) as usize
            }
            3 | 4 => 9,
            5 => 2,
            t => return err(format!("field {}: unknown kind {}", i, t)),
        };
        if b.len() - off < need {
            return err(format!("field {}: {}", i, SHORT));
        }
        off += need;
    }
    Ok(off)
}

/// FNV-1a 64 offset basis and prime.
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a 64 of `b`, continuing from `h`.
#[inline]
pub fn fnv1a(mut h: u64, b: &[u8]) -> u64 {
    for &c in b {
        h ^= c as u64;
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// The fields-grouping hash of a tuple: FNV-1a 64 over the payloads of its
/// grouping fields (in grouping order) with one 0x00 between them.
pub fn tuple_hash<'a, I: IntoIterator<Item = Value<'a>>>(fields: I) -> u64 {
    let mut h = FNV_OFFSET;
    let mut buf = [0u8; 8];
    for (i, v) in fields.into_iter().enumerate() {
        if i > 0 {
            h = fnv1a(h, &[0]);
        }
        h = fnv1a(h, v.payload(&mut buf));
    }
    h
}

/// The separator between a state key's routing part and a suffix.
pub const KEY_SEP: u8 = 0x1F;

/// The hash of a state key: FNV-1a 64 over its bytes before the first
/// 0x1F (the whole key if it has none).
pub fn state_key_hash(key: &[u8]) -> u64 {
    let end = key.iter().position(|&c| c == KEY_SEP).unwrap_or(key.len());
    fnv1a(FNV_OFFSET, &key[..end])
}

/// The key group of a hash (`topology.max.keygroups`, default 256).
pub fn key_group(hash: u64, max_key_groups: u32) -> u32 {
    (hash % max_key_groups as u64) as u32
}

/// The task index that owns a key group.
pub fn key_group_task(key_group: u32, parallelism: u32, max_key_groups: u32) -> u32 {
    (key_group as u64 * parallelism as u64 / max_key_groups as u64) as u32
}
