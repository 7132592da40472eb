//! Input tuples: typed views of the input batch in the SDK's buffer.

use std::rc::Rc;

use crate::codec::{self, field_at, le32, le64, Input, Kind, Value, KEY_SEP};

/// Names a field of a tuple: its index (`0`) or its declared name
/// (`"word"`). A name the tuple's stream does not declare, or an index
/// past the last field, panics (the panic fails the call).
pub trait FieldIndex {
    #[track_caller]
    fn field_index(&self, t: &Tuple<'_>) -> usize;
}

impl FieldIndex for usize {
    #[inline]
    #[track_caller]
    fn field_index(&self, t: &Tuple<'_>) -> usize {
        if *self >= t.offs.len() {
            t.no_field_index(*self)
        }
        *self
    }
}

impl FieldIndex for &str {
    #[inline]
    #[track_caller]
    fn field_index(&self, t: &Tuple<'_>) -> usize {
        // Natively, ardea::testing checks reads against the declarations.
        #[cfg(not(target_arch = "wasm32"))]
        crate::testing::note_read(self);
        match t.index(self) {
            Some(i) if i < t.offs.len() => i,
            _ => t.no_field_name(self),
        }
    }
}

impl FieldIndex for &String {
    #[inline]
    #[track_caller]
    fn field_index(&self, t: &Tuple<'_>) -> usize {
        self.as_str().field_index(t)
    }
}

/// One input tuple. It views the input batch in the SDK's buffer, so it is
/// valid only during the `execute` call that received it; keep
/// [`Tuple::to_owned_tuple`] (or just its [`Tuple::id`] to ack later) to retain
/// it.
///
/// Accessors take a field index or a declared field name (see
/// [`FieldIndex`]). A field of the wrong kind makes the accessor panic,
/// which fails the call with a message naming the field; a null field
/// reads as the zero value ("", empty, 0, 0.0, false). `str` and `bytes`
/// accept both string and bytes fields.
#[derive(Clone, Copy, Debug)]
pub struct Tuple<'a> {
    pub(crate) raw: &'a [u8],
    pub(crate) offs: &'a [u32],
    pub(crate) id: u64,
    pub(crate) src: u32,
    pub(crate) idx: u16,
    pub(crate) input: &'a Rc<Input>,
}

impl<'a> Tuple<'a> {
    /// A tuple over an encoded values block (`offs` from
    /// [`codec::scan_values`]), for tests and tools.
    pub fn new(raw: &'a [u8], offs: &'a [u32], id: u64, source_task: u32, input_index: u16, input: &'a Rc<Input>) -> Tuple<'a> {
        Tuple { raw, offs, id, src: source_task, idx: input_index, input }
    }

    /// The tuple id: 0 unless the topology tracks delivery. Emits anchor on
    /// it and ack/fail send it only if it is not 0.
    #[inline]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The id of the task that emitted the tuple.
    #[inline]
    pub fn source_task(&self) -> u32 {
        self.src
    }

    /// The input index: the position of the tuple's (component, stream) in
    /// the context's inputs.
    #[inline]
    pub fn input_index(&self) -> usize {
        self.idx as usize
    }

    /// The upstream component that emitted the tuple.
    pub fn component(&self) -> &'a str {
        &self.input.component
    }

    /// The stream the tuple was emitted on.
    pub fn stream(&self) -> &'a str {
        &self.input.stream
    }

    /// The declared field names of the tuple's stream.
    pub fn fields(&self) -> &'a [String] {
        &self.input.fields
    }

    /// The number of fields.
    #[inline]
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.offs.len()
    }

    /// The position of a declared field, or None.
    pub fn index(&self, field: &str) -> Option<usize> {
        self.input.index(field)
    }

    /// The encoded values block (ABI `values`).
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// The kind of a field.
    #[inline]
    #[track_caller]
    pub fn kind<F: FieldIndex>(&self, f: F) -> Kind {
        let i = f.field_index(self);
        Kind::from_tag(self.raw[self.offs[i] as usize]).unwrap_or(Kind::Null)
    }

    /// Whether a field is null.
    #[track_caller]
    pub fn is_null<F: FieldIndex>(&self, f: F) -> bool {
        self.kind(f) == Kind::Null
    }

    /// A field's value.
    #[inline]
    #[track_caller]
    pub fn value<F: FieldIndex>(&self, f: F) -> Value<'a> {
        let i = f.field_index(self);
        field_at(self.raw, self.offs[i] as usize)
    }

    /// All fields.
    pub fn values(&self) -> Vec<Value<'a>> {
        self.offs.iter().map(|&o| field_at(self.raw, o as usize)).collect()
    }

    /// A string or bytes field's bytes, without copying.
    #[inline]
    #[track_caller]
    pub fn bytes<F: FieldIndex>(&self, f: F) -> &'a [u8] {
        let i = f.field_index(self);
        let o = self.offs[i] as usize;
        match self.raw[o] {
            1 | 2 => {
                let n = le32(&self.raw[o + 1..]) as usize;
                &self.raw[o + 5..o + 5 + n]
            }
            0 => &[],
            t => self.wrong_kind(i, t, "bytes"),
        }
    }

    /// A string or bytes field as a `&str`, without copying. It panics if
    /// the bytes are not UTF-8 (use [`Tuple::bytes`] to read any bytes).
    #[inline]
    #[track_caller]
    pub fn str<F: FieldIndex>(&self, f: F) -> &'a str {
        let i = f.field_index(self);
        let b = self.bytes(i);
        match std::str::from_utf8(b) {
            Ok(s) => s,
            Err(e) => panic!("ardea: field {}{} is not UTF-8: {}", i, self.field_name(i), e),
        }
    }

    /// A string or bytes field as a new String (see [`Tuple::str`]).
    #[track_caller]
    pub fn string<F: FieldIndex>(&self, f: F) -> String {
        self.str(f).to_string()
    }

    /// An int64 field.
    #[inline]
    #[track_caller]
    pub fn int<F: FieldIndex>(&self, f: F) -> i64 {
        let i = f.field_index(self);
        let o = self.offs[i] as usize;
        match self.raw[o] {
            3 => le64(&self.raw[o + 1..]) as i64,
            0 => 0,
            t => self.wrong_kind(i, t, "int64"),
        }
    }

    /// A float64 field.
    #[inline]
    #[track_caller]
    pub fn float<F: FieldIndex>(&self, f: F) -> f64 {
        let i = f.field_index(self);
        let o = self.offs[i] as usize;
        match self.raw[o] {
            4 => f64::from_bits(le64(&self.raw[o + 1..])),
            0 => 0.0,
            t => self.wrong_kind(i, t, "float64"),
        }
    }

    /// A bool field.
    #[inline]
    #[track_caller]
    pub fn bool<F: FieldIndex>(&self, f: F) -> bool {
        let i = f.field_index(self);
        let o = self.offs[i] as usize;
        match self.raw[o] {
            5 => self.raw[o + 1] == 1,
            0 => false,
            t => self.wrong_kind(i, t, "bool"),
        }
    }

    /// A field's payload, viewing the input: a string's or bytes' content,
    /// an int64 or float64 as 8 bytes little endian, a bool as 1 byte,
    /// null as nothing. For a single grouping field this is the state key
    /// the ABI's rule for state that moves with its keys asks for.
    #[inline]
    #[track_caller]
    pub fn payload<F: FieldIndex>(&self, f: F) -> &'a [u8] {
        let i = f.field_index(self);
        let o = self.offs[i] as usize;
        match self.raw[o] {
            1 | 2 => {
                let n = le32(&self.raw[o + 1..]) as usize;
                &self.raw[o + 5..o + 5 + n]
            }
            3 | 4 => &self.raw[o + 1..o + 9],
            5 => &self.raw[o + 1..o + 2],
            _ => &[],
        }
    }

    /// Appends the state key of the given fields to `dst`: their payloads
    /// joined with 0x00 (the ABI's rule for state that moves with its
    /// keys). Name the fields the component is fields-grouped on, in the
    /// grouping's order; push [`KEY_SEP`] and a suffix to keep several
    /// values per key.
    ///
    /// Caveat (ABI v1): the host hashes a state key only up to its first
    /// 0x1F byte, so a payload containing 0x1F (the int64 31, say) gives a
    /// key whose state stays in another key group when rescaled.
    #[track_caller]
    pub fn append_state_key<F: FieldIndex + Copy>(&self, dst: &mut Vec<u8>, fields: &[F]) {
        for (n, f) in fields.iter().enumerate() {
            if n > 0 {
                dst.push(0);
            }
            dst.extend_from_slice(self.payload(*f));
        }
    }

    /// The state key of the given fields (see [`Tuple::append_state_key`]).
    #[track_caller]
    pub fn state_key<F: FieldIndex + Copy>(&self, fields: &[F]) -> Vec<u8> {
        let mut k = Vec::new();
        self.append_state_key(&mut k, fields);
        k
    }

    /// The fields-grouping hash of the given fields (FNV-1a 64 over their
    /// payloads joined with 0x00): what the host routes the tuple by.
    #[track_caller]
    pub fn grouping_hash<F: FieldIndex + Copy>(&self, fields: &[F]) -> u64 {
        codec::tuple_hash(fields.iter().map(|f| self.value(*f)))
    }

    /// A copy that owns its values and outlives the call.
    pub fn to_owned_tuple(&self) -> OwnedTuple {
        OwnedTuple { raw: self.raw.to_vec(), offs: self.offs.to_vec(), id: self.id, src: self.src, idx: self.idx, input: self.input.clone() }
    }

    fn field_name(&self, i: usize) -> String {
        match self.input.fields.get(i) {
            Some(n) => format!(" ({})", n),
            None => String::new(),
        }
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn wrong_kind(&self, i: usize, tag: u8, want: &str) -> ! {
        let got = Kind::from_tag(tag).map(|k| k.name()).unwrap_or("invalid");
        panic!("ardea: field {}{} is {}, not {}", i, self.field_name(i), got, want)
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn no_field_index(&self, i: usize) -> ! {
        panic!("ardea: field index {} out of range: the tuple from {}/{} has {} fields", i, self.input.component, self.input.stream, self.offs.len())
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn no_field_name(&self, name: &str) -> ! {
        panic!("ardea: stream {}/{} has no field {:?} (fields {:?})", self.input.component, self.input.stream, name, self.input.fields)
    }
}

/// A tuple that owns its values (from [`Tuple::to_owned_tuple`]).
#[derive(Clone, Debug)]
pub struct OwnedTuple {
    raw: Vec<u8>,
    offs: Vec<u32>,
    id: u64,
    src: u32,
    idx: u16,
    input: Rc<Input>,
}

impl OwnedTuple {
    /// A view with the accessors of [`Tuple`].
    pub fn tuple(&self) -> Tuple<'_> {
        Tuple { raw: &self.raw, offs: &self.offs, id: self.id, src: self.src, idx: self.idx, input: &self.input }
    }

    /// The tuple id.
    pub fn id(&self) -> u64 {
        self.id
    }
}

/// Something emits anchor on and ack/fail take: a tuple (by reference),
/// an owned tuple, or a tuple id (`u64`).
pub trait Anchor {
    fn anchor_id(&self) -> u64;
}

impl Anchor for Tuple<'_> {
    #[inline]
    fn anchor_id(&self) -> u64 {
        self.id
    }
}

impl Anchor for OwnedTuple {
    #[inline]
    fn anchor_id(&self) -> u64 {
        self.id
    }
}

impl Anchor for u64 {
    #[inline]
    fn anchor_id(&self) -> u64 {
        *self
    }
}

impl<T: Anchor + ?Sized> Anchor for &T {
    #[inline]
    fn anchor_id(&self) -> u64 {
        (**self).anchor_id()
    }
}

/// The state key separator as a byte string, for building keys.
pub const KEY_SEP_BYTES: &[u8] = &[KEY_SEP];
