//! What the emit methods accept: a tuple of fields such as
//! `("word", 3i64)`, a slice, array or Vec of [`Value`]s, or `()` for no
//! fields.

use crate::codec::{put_blob, put_fixed, Value};

/// One field value an emit accepts. By kind:
///
/// | kind    | Rust values |
/// |---------|-------------|
/// | null    | [`Null`], `None` of an `Option` |
/// | string  | `&str`, `String`, [`Text`] |
/// | bytes   | `&[u8]`, `Vec<u8>`, `[u8; N]` arrays by reference |
/// | int64   | `i8`..`i64`, `isize`, `u8`..`u32`, and `u64`/`usize` up to `i64::MAX` |
/// | float64 | `f64`, `f32` |
/// | bool    | `bool` |
///
/// plus any [`Value`]. `encode` returns false for a value it cannot encode
/// (an unsigned integer above `i64::MAX`); the emit then fails the call.
pub trait Field {
    fn encode(&self, out: &mut Vec<u8>) -> bool;
}

/// A string field given as bytes, emitted without a UTF-8 check or copy
/// (for example a slice of an input string field). The bytes must be
/// UTF-8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Text<'a>(pub &'a [u8]);

/// The null field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Null;

impl<T: Field + ?Sized> Field for &T {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        (**self).encode(out)
    }
}

impl Field for str {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        put_blob(out, 2, self.as_bytes());
        true
    }
}

impl Field for String {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        put_blob(out, 2, self.as_bytes());
        true
    }
}

impl Field for Text<'_> {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        put_blob(out, 2, self.0);
        true
    }
}

impl Field for [u8] {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        put_blob(out, 1, self);
        true
    }
}

impl<const N: usize> Field for [u8; N] {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        put_blob(out, 1, self);
        true
    }
}

impl Field for Vec<u8> {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        put_blob(out, 1, self);
        true
    }
}

macro_rules! int_field {
    ($($t:ty),*) => {$(
        impl Field for $t {
            #[inline]
            fn encode(&self, out: &mut Vec<u8>) -> bool {
                put_fixed(out, 3, *self as i64 as u64);
                true
            }
        }
    )*};
}
int_field!(i8, i16, i32, i64, isize, u8, u16, u32);

impl Field for u64 {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        if *self > i64::MAX as u64 {
            return false;
        }
        put_fixed(out, 3, *self);
        true
    }
}

impl Field for usize {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        (*self as u64).encode(out)
    }
}

impl Field for f64 {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        put_fixed(out, 4, self.to_bits());
        true
    }
}

impl Field for f32 {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        put_fixed(out, 4, (*self as f64).to_bits());
        true
    }
}

impl Field for bool {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        out.extend_from_slice(&[5, *self as u8]);
        true
    }
}

impl Field for Null {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        out.push(0);
        true
    }
}

impl<T: Field> Field for Option<T> {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        match self {
            Some(v) => v.encode(out),
            None => {
                out.push(0);
                true
            }
        }
    }
}

impl Field for Value<'_> {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        Value::encode(self, out);
        true
    }
}

/// The values of one emitted tuple: `()`, a Rust tuple of up to 12
/// [`Field`]s (`(word,)` for one field, `(word, n)` for two), or a slice,
/// array or Vec of [`Value`]s.
pub trait Values {
    /// The number of fields.
    fn count(&self) -> usize;
    /// Appends the fields; on a value it cannot encode it returns that
    /// field's index (`out` then holds a partial encoding the caller drops).
    fn encode_fields(&self, out: &mut Vec<u8>) -> Result<(), usize>;
}

impl Values for () {
    #[inline]
    fn count(&self) -> usize {
        0
    }
    #[inline]
    fn encode_fields(&self, _: &mut Vec<u8>) -> Result<(), usize> {
        Ok(())
    }
}

macro_rules! tuple_values {
    ($n:expr; $($t:ident $i:tt),+) => {
        impl<$($t: Field),+> Values for ($($t,)+) {
            #[inline]
            fn count(&self) -> usize {
                $n
            }
            #[inline]
            fn encode_fields(&self, out: &mut Vec<u8>) -> Result<(), usize> {
                $(if !self.$i.encode(out) {
                    return Err($i);
                })+
                Ok(())
            }
        }
    };
}
tuple_values!(1; A 0);
tuple_values!(2; A 0, B 1);
tuple_values!(3; A 0, B 1, C 2);
tuple_values!(4; A 0, B 1, C 2, D 3);
tuple_values!(5; A 0, B 1, C 2, D 3, E 4);
tuple_values!(6; A 0, B 1, C 2, D 3, E 4, F 5);
tuple_values!(7; A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_values!(8; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
tuple_values!(9; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_values!(10; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_values!(11; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_values!(12; A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);

impl Values for &[Value<'_>] {
    #[inline]
    fn count(&self) -> usize {
        self.len()
    }
    fn encode_fields(&self, out: &mut Vec<u8>) -> Result<(), usize> {
        for v in self.iter() {
            v.encode(out);
        }
        Ok(())
    }
}

impl Values for Vec<Value<'_>> {
    #[inline]
    fn count(&self) -> usize {
        self.len()
    }
    fn encode_fields(&self, out: &mut Vec<u8>) -> Result<(), usize> {
        self.as_slice().encode_fields(out)
    }
}

impl Values for &Vec<Value<'_>> {
    #[inline]
    fn count(&self) -> usize {
        self.len()
    }
    fn encode_fields(&self, out: &mut Vec<u8>) -> Result<(), usize> {
        self.as_slice().encode_fields(out)
    }
}

impl<const N: usize> Values for [Value<'_>; N] {
    #[inline]
    fn count(&self) -> usize {
        N
    }
    fn encode_fields(&self, out: &mut Vec<u8>) -> Result<(), usize> {
        self.as_slice().encode_fields(out)
    }
}
