// Input tuples: typed accessors over the input batch.

import { Kind, kindName, utf8Equals, utf8HasPrefix } from "./codec";
import { Input } from "./context";
import { copyBytes, decodeUTF8 } from "./raw";

/**
 * Tuple is one input tuple. During `execute` it views the input batch in
 * the SDK's buffer, and the SDK reuses the same object for every tuple of
 * the batch: its values and even its id are only valid until `execute`
 * returns. Keep `t.copy()` to retain one (for example to ack it later).
 *
 * Accessors take a field index (0-based) or, in their `...ByName` form, a
 * declared field name. A field of the wrong kind throws (the call fails
 * with a message naming the field); a null field reads as the zero value.
 * `string` and `bytes` accept both string and bytes fields.
 */
export class Tuple {
  // The values block (base, size) and the offset of each field's tag
  // (u32 at offs). Set by the SDK.
  base: usize = 0;
  size: i32 = 0;
  offs: usize = 0;
  nfields: i32 = 0;
  id_: u64 = 0;
  src_: u32 = 0;
  input_: i32 = 0;
  pos_: i32 = 0;
  in_: Input | null = null;
  // A copy owns its memory here.
  private keep: ArrayBuffer | null = null;

  /** The tuple id: 0 unless the topology tracks delivery. */
  get id(): u64 { return this.id_; }
  /** The id of the task that emitted the tuple. */
  get sourceTask(): u32 { return this.src_; }
  /** The input index (position of its (component, stream) in Context.inputs). */
  get input(): i32 { return this.input_; }
  /** The tuple's position in the batch of the current host call, from 0. */
  get batchPos(): i32 { return this.pos_; }
  /** The upstream component that emitted the tuple. */
  get component(): string { let i = this.in_; return i ? i.component : ""; }
  /** The stream the tuple was emitted on. */
  get stream(): string { let i = this.in_; return i ? i.stream : ""; }
  /** The declared field names of the tuple's stream. */
  get fields(): string[] { let i = this.in_; return i ? i.fields : []; }
  /** The number of fields. */
  get length(): i32 { return this.nfields; }

  /** The position of a declared field, or -1. */
  index(field: string): i32 {
    let i = this.in_;
    return i ? i.index(field) : -1;
  }

  @inline private tag(i: i32): usize {
    if (<u32>i >= <u32>this.nfields) this.outOfRange(i);
    return this.base + <usize>load<u32>(this.offs + (<usize>i << 2));
  }

  private outOfRange(i: i32): void {
    throw new Error("ardea: field " + i.toString() + " out of range (the tuple has " + this.nfields.toString() + " fields)");
  }

  /** The kind of field i. */
  kind(i: i32): Kind { return <Kind>load<u8>(this.tag(i)); }

  /** Whether field i is null. */
  isNull(i: i32): bool { return load<u8>(this.tag(i)) == Kind.Null; }

  /**
   * Where field i's payload starts: a string's or bytes' content, the 8
   * bytes of an int64 or float64, the byte of a bool, nothing for null.
   * With payloadLen this views the input without copying (valid until the
   * call returns): emit it with Emit.stringView, key state with State's
   * `...At` methods.
   */
  payloadPtr(i: i32): usize {
    let p = this.tag(i);
    let k = load<u8>(p);
    return k == Kind.String || k == Kind.Bytes ? p + 5 : p + 1;
  }

  /** The length of field i's payload (see payloadPtr). */
  payloadLen(i: i32): i32 {
    let p = this.tag(i);
    switch (<i32>load<u8>(p)) {
      case Kind.String:
      case Kind.Bytes: return <i32>load<u32>(p, 1);
      case Kind.Int:
      case Kind.Float: return 8;
      case Kind.Bool: return 1;
    }
    return 0;
  }

  private wrongKind(i: i32, got: i32, want: string): void {
    let name = "";
    let f = this.fields;
    if (i < f.length) name = " (" + f[i] + ")";
    throw new Error("ardea: field " + i.toString() + name + " is " + kindName(got) + ", not " + want);
  }

  // text returns field i's tag pointer after checking it is text-like.
  private text(i: i32, want: string): usize {
    let p = this.tag(i);
    let k = <i32>load<u8>(p);
    if (k != Kind.String && k != Kind.Bytes && k != Kind.Null) this.wrongKind(i, k, want);
    return p;
  }

  private fixed(i: i32, want: i32): usize {
    let p = this.tag(i);
    let k = <i32>load<u8>(p);
    if (k != want && k != Kind.Null) this.wrongKind(i, k, kindName(want));
    return k == Kind.Null ? 0 : p + 1;
  }

  /** Field i (string or bytes) decoded from UTF-8 (null: ""). */
  string(i: i32): string {
    let p = this.text(i, "string");
    if (load<u8>(p) == Kind.Null) return "";
    return decodeUTF8(p + 5, <i32>load<u32>(p, 1));
  }

  /** A copy of field i (bytes or string; null: empty). */
  bytes(i: i32): Uint8Array {
    let p = this.text(i, "bytes");
    if (load<u8>(p) == Kind.Null) return new Uint8Array(0);
    return copyBytes(p + 5, <i32>load<u32>(p, 1));
  }

  /** Field i, an int64 (null: 0). */
  int(i: i32): i64 {
    let p = this.fixed(i, Kind.Int);
    return p == 0 ? 0 : load<i64>(p);
  }

  /** Field i, a float64 (null: 0). */
  float(i: i32): f64 {
    let p = this.fixed(i, Kind.Float);
    return p == 0 ? 0 : load<f64>(p);
  }

  /** Field i, a bool (null: false). */
  bool(i: i32): bool {
    let p = this.fixed(i, Kind.Bool);
    return p != 0 && load<u8>(p) == 1;
  }

  /** Whether field i (string or bytes) equals s, compared as UTF-8 without allocating. */
  equals(i: i32, s: string): bool {
    let p = this.text(i, "string");
    if (load<u8>(p) == Kind.Null) return s.length == 0;
    return utf8Equals(p + 5, <i32>load<u32>(p, 1), s);
  }

  /** Whether field i (string or bytes) starts with s, compared as UTF-8. */
  hasPrefix(i: i32, s: string): bool {
    let p = this.text(i, "string");
    if (load<u8>(p) == Kind.Null) return s.length == 0;
    return utf8HasPrefix(p + 5, <i32>load<u32>(p, 1), s);
  }

  private must(field: string): i32 {
    let i = this.index(field);
    if (i < 0) {
      throw new Error("ardea: no field \"" + field + "\" in the tuple from " + this.component + "/" + this.stream +
        " (its fields: " + this.fields.join(", ") + ")");
    }
    return i;
  }

  stringByName(field: string): string { return this.string(this.must(field)); }
  bytesByName(field: string): Uint8Array { return this.bytes(this.must(field)); }
  intByName(field: string): i64 { return this.int(this.must(field)); }
  floatByName(field: string): f64 { return this.float(this.must(field)); }
  boolByName(field: string): bool { return this.bool(this.must(field)); }
  kindByName(field: string): Kind { return this.kind(this.must(field)); }
  equalsByName(field: string, s: string): bool { return this.equals(this.must(field), s); }
  payloadPtrByName(field: string): usize { return this.payloadPtr(this.must(field)); }
  payloadLenByName(field: string): i32 { return this.payloadLen(this.must(field)); }

  /** The encoded values block (ABI "values"), a copy. */
  raw(): Uint8Array { return copyBytes(this.base, this.size); }

  /** A tuple that owns its values and stays valid after the call. */
  copy(): Tuple {
    let t = new Tuple();
    let vn = (this.size + 3) & ~3;
    let buf = new ArrayBuffer(vn + (this.nfields << 2));
    let p = changetype<usize>(buf);
    memory.copy(p, this.base, <usize>this.size);
    memory.copy(p + <usize>vn, this.offs, <usize>this.nfields << 2);
    t.keep = buf;
    t.base = p;
    t.size = this.size;
    t.offs = p + <usize>vn;
    t.nfields = this.nfields;
    t.id_ = this.id_;
    t.src_ = this.src_;
    t.input_ = this.input_;
    t.pos_ = this.pos_;
    t.in_ = this.in_;
    return t;
  }

  /**
   * The state key of the named fields by the ABI's rule for state that
   * moves with its keys: their payloads joined with 0x00. Name the fields
   * the component is fields-grouped on, in the grouping's order; append
   * 0x1F and any suffix to keep several values per key. For one string
   * field the key is its bytes: use payloadPtr/payloadLen and the State
   * `...At` methods to avoid the copy.
   */
  stateKey(fields: string[]): Uint8Array {
    let idx = new Array<i32>(fields.length);
    for (let j = 0; j < fields.length; j++) idx[j] = this.must(fields[j]);
    return this.stateKeyAt(idx);
  }

  /** stateKey with field indexes. */
  stateKeyAt(fields: i32[]): Uint8Array {
    let n = 0;
    for (let j = 0; j < fields.length; j++) n += this.payloadLen(fields[j]) + (j > 0 ? 1 : 0);
    let out = new Uint8Array(n);
    let o = out.dataStart;
    for (let j = 0; j < fields.length; j++) {
      if (j > 0) store<u8>(o++, 0);
      let f = fields[j];
      let l = this.payloadLen(f);
      memory.copy(o, this.payloadPtr(f), <usize>l);
      o += <usize>l;
    }
    return out;
  }
}
