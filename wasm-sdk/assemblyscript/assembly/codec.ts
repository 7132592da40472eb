// The ABI v1 values encoding (wasm-sdk/ABI.md): field kinds, validation of
// a values block, and UTF-8 helpers.

/** A field's type (the ABI's tag). */
export enum Kind {
  Null = 0,
  Bytes = 1,
  String = 2,
  Int = 3,
  Float = 4,
  Bool = 5,
}

/** The name of a kind, as in error messages ("string", "int64", ...). */
export function kindName(k: i32): string {
  switch (k) {
    case Kind.Null: return "null";
    case Kind.Bytes: return "bytes";
    case Kind.String: return "string";
    case Kind.Int: return "int64";
    case Kind.Float: return "float64";
    case Kind.Bool: return "bool";
  }
  return "kind(" + k.toString() + ")";
}

/** Offsets of the current tuple's fields (u32 each), reused for every tuple. */
export class Offs {
  static ptr: usize = 0;
  static cap: i32 = 0;
}

function growOffs(n: i32): void {
  let c = max(Offs.cap * 2, 64);
  while (c < n) c <<= 1;
  Offs.ptr = Offs.ptr == 0 ? heap.alloc(<usize>c << 2) : heap.realloc(Offs.ptr, <usize>c << 2);
  Offs.cap = c;
}

/** Why the last scanValues failed. */
export let scanError: string = "";

/**
 * Validates the values block [p, p+n) that must span all n bytes and
 * stores the offset of every field's tag (from p) at Offs.ptr. Returns
 * the number of fields, or -1 (then scanError says why). It accepts
 * exactly what the Go reference codec (internal/tuple) accepts.
 */
export function scanValues(p: usize, n: i32): i32 {
  if (n < 2) {
    scanError = "short values block";
    return -1;
  }
  let nf = <i32>load<u16>(p);
  if (nf > Offs.cap) growOffs(nf);
  let offs = Offs.ptr;
  let off = 2;
  for (let i = 0; i < nf; i++) {
    if (off >= n) {
      scanError = "field " + i.toString() + ": short values block";
      return -1;
    }
    store<u32>(offs + (<usize>i << 2), off);
    let left = n - off;
    let k = <i32>load<u8>(p + <usize>off);
    if (k == Kind.String || k == Kind.Bytes) {
      if (left < 5) {
        scanError = "field " + i.toString() + ": short values block";
        return -1;
      }
      let l = load<u32>(p + <usize>off + 1);
      if (<u64>(left - 5) < <u64>l) {
        scanError = "field " + i.toString() + ": short values block";
        return -1;
      }
      off += 5 + <i32>l;
    } else if (k == Kind.Int || k == Kind.Float) {
      if (left < 9) {
        scanError = "field " + i.toString() + ": short values block";
        return -1;
      }
      off += 9;
    } else if (k == Kind.Null) {
      off += 1;
    } else if (k == Kind.Bool) {
      if (left < 2) {
        scanError = "field " + i.toString() + ": short values block";
        return -1;
      }
      let b = load<u8>(p + <usize>off + 1);
      if (b > 1) {
        scanError = "field " + i.toString() + ": bool payload " + b.toString() + " is not 0 or 1";
        return -1;
      }
      off += 2;
    } else {
      scanError = "field " + i.toString() + ": unknown kind " + k.toString();
      return -1;
    }
  }
  if (off != n) {
    scanError = (n - off).toString() + " trailing bytes after " + nf.toString() + " fields";
    return -1;
  }
  return nf;
}

/** Whether the n UTF-8 bytes at p equal the string s (no allocation). */
export function utf8Equals(p: usize, n: i32, s: string): bool {
  return utf8Match(p, n, s, true);
}

/** Whether the n UTF-8 bytes at p start with the string s. */
export function utf8HasPrefix(p: usize, n: i32, s: string): bool {
  return utf8Match(p, n, s, false);
}

function utf8Match(p: usize, n: i32, s: string, whole: bool): bool {
  let sp = changetype<usize>(s);
  let se = sp + (<usize>s.length << 1);
  let i = 0;
  while (sp < se) {
    let c = <u32>load<u16>(sp);
    sp += 2;
    if (c < 0x80) {
      if (i >= n || <u32>load<u8>(p + <usize>i) != c) return false;
      i++;
      continue;
    }
    if ((c & 0xFC00) == 0xD800 && sp < se) {
      let c2 = <u32>load<u16>(sp);
      if ((c2 & 0xFC00) == 0xDC00) {
        c = 0x10000 + ((c & 0x3FF) << 10) + (c2 & 0x3FF);
        sp += 2;
      }
    }
    if ((c & 0xF800) == 0xD800) c = 0xFFFD; // unpaired surrogate
    let w: i32;
    let b0: u32;
    if (c < 0x800) {
      w = 2; b0 = 0xC0 | (c >> 6);
    } else if (c < 0x10000) {
      w = 3; b0 = 0xE0 | (c >> 12);
    } else {
      w = 4; b0 = 0xF0 | (c >> 18);
    }
    if (i + w > n || <u32>load<u8>(p + <usize>i) != b0) return false;
    for (let j = 1; j < w; j++) {
      let b = 0x80 | ((c >> (6 * (w - 1 - j))) & 0x3F);
      if (<u32>load<u8>(p + <usize>(i + j)) != b) return false;
    }
    i += w;
  }
  return !whole || i == n;
}
