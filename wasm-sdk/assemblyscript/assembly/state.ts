// Keyed state held by the host, with a write-back cache in the guest.

import { hostStateGet, hostStateWrite, hostStateScan, hostNow } from "./host";
import { RawBuf, scratch, scratchUTF8, copyBytes, decodeUTF8 } from "./raw";

/** Cache bounds: an insert past either first writes the dirty entries and empties the cache. */
export const DEFAULT_CACHE_ENTRIES: i32 = 1 << 16;
export const DEFAULT_CACHE_BYTES: i32 = 8 << 20;

// A slot (one cached key) in unmanaged memory:
//   0 hash u32 | 4 key offset u32 | 8 key length u32 | 12 value length i32 (-1: absent)
//  16 big value block | 20 its capacity | 24 dirty | 32 inline value (16 bytes)
const SLOT: usize = 48;
const INLINE: i32 = 16;
const MAX_PROBE: i32 = 64;

// @ts-ignore: decorator
@inline function slotHash(s: usize): u32 { return load<u32>(s); }
// @ts-ignore: decorator
@inline function slotKoff(s: usize): u32 { return load<u32>(s, 4); }
// @ts-ignore: decorator
@inline function slotKlen(s: usize): i32 { return load<i32>(s, 8); }
// @ts-ignore: decorator
@inline function slotVlen(s: usize): i32 { return load<i32>(s, 12); }
// @ts-ignore: decorator
@inline function slotValue(s: usize): usize {
  return load<i32>(s, 12) > INLINE ? <usize>load<u32>(s, 16) : s + 32;
}

/**
 * State is the task's key/value state. The host holds it (it survives a
 * module restart or swap); the SDK keeps a write-back cache in the guest:
 *
 * - get reads through the cache: a miss asks the host once (state_get)
 *   and caches the value, or its absence.
 * - put and delete only change the cache and mark the key dirty.
 * - When a lifecycle call returns successfully, all dirty entries go to
 *   the host in ONE state_write call, before the call's emits.
 * - The cache holds at most DEFAULT_CACHE_ENTRIES keys and
 *   DEFAULT_CACHE_BYTES bytes; an insert past that first writes the dirty
 *   entries (an extra state_write) and empties the cache.
 * - scan first writes the dirty entries, then asks the host.
 * - If the call fails, its unwritten changes are dropped (the instance
 *   fails anyway).
 *
 * Keys are any bytes: a string key means its UTF-8 bytes. Every method
 * comes in three forms: with a string key, with a Uint8Array key (`...Bytes`)
 * and with a key at a pointer and length (`...At`, for example a field view
 * from Tuple.payloadPtr/payloadLen), which allocates nothing once the key
 * is cached. Values come back as copies.
 */
export class State {
  static instance: State = new State();

  private index: usize = 0; // u32 cells: slot number + 1, 0 = empty
  private icap: i32 = 0; // cells, a power of two (0: no index yet)
  private slots: usize = 0;
  private nslots: i32 = 0;
  private scap: i32 = 0;
  private keys: RawBuf = new RawBuf();
  private dirty: RawBuf = new RawBuf(); // u32 slot numbers, first-write order
  private bytes: i32 = 0; // keys + values
  private seed: u64 = 0x2545f4914f6cdd1d;
  private vbuf: RawBuf = new RawBuf(); // state_get
  private wbuf: RawBuf = new RawBuf(); // state_write

  maxEntries: i32 = DEFAULT_CACHE_ENTRIES;
  maxBytes: i32 = DEFAULT_CACHE_BYTES;

  // ---- string keys ----

  /** A key's value (a copy), or null if absent. */
  get(key: string): Uint8Array | null {
    let n = scratchUTF8(key);
    return this.getAt(scratch.ptr, n);
  }
  /** Whether a key has a value. */
  has(key: string): bool {
    let n = scratchUTF8(key);
    return this.hasAt(scratch.ptr, n);
  }
  /** Stores a value (copied). */
  put(key: string, value: Uint8Array): void {
    let n = scratchUTF8(key);
    this.putAt(scratch.ptr, n, value.dataStart, value.length);
  }
  /** Removes a key. */
  delete(key: string): void {
    let n = scratchUTF8(key);
    this.deleteAt(scratch.ptr, n);
  }
  /** The int64 stored by putInt, or def if absent or not 8 bytes. */
  getInt(key: string, def: i64 = 0): i64 {
    let n = scratchUTF8(key);
    return this.getIntAt(scratch.ptr, n, def);
  }
  /** Stores v as 8 bytes little-endian. */
  putInt(key: string, v: i64): void {
    let n = scratchUTF8(key);
    this.putIntAt(scratch.ptr, n, v);
  }
  /** Adds delta to the int64 under key (absent counts as 0); returns the new value. */
  addInt(key: string, delta: i64): i64 {
    let n = scratchUTF8(key);
    return this.addIntAt(scratch.ptr, n, delta);
  }
  /** Iterates over the keys starting with prefix, ascending (see StateIterator). */
  scan(prefix: string): StateIterator {
    let n = scratchUTF8(prefix);
    return this.scanAt(scratch.ptr, n);
  }

  // ---- Uint8Array keys ----

  getBytes(key: Uint8Array): Uint8Array | null { return this.getAt(key.dataStart, key.length); }
  hasBytes(key: Uint8Array): bool { return this.hasAt(key.dataStart, key.length); }
  putBytes(key: Uint8Array, value: Uint8Array): void { this.putAt(key.dataStart, key.length, value.dataStart, value.length); }
  deleteBytes(key: Uint8Array): void { this.deleteAt(key.dataStart, key.length); }
  getIntBytes(key: Uint8Array, def: i64 = 0): i64 { return this.getIntAt(key.dataStart, key.length, def); }
  putIntBytes(key: Uint8Array, v: i64): void { this.putIntAt(key.dataStart, key.length, v); }
  addIntBytes(key: Uint8Array, delta: i64): i64 { return this.addIntAt(key.dataStart, key.length, delta); }
  scanBytes(prefix: Uint8Array): StateIterator { return this.scanAt(prefix.dataStart, prefix.length); }

  // ---- keys at a pointer ----

  getAt(kp: usize, kn: i32): Uint8Array | null {
    let s = this.slotAt(this.lookup(kp, kn));
    let vn = slotVlen(s);
    return vn < 0 ? null : copyBytes(slotValue(s), vn);
  }
  hasAt(kp: usize, kn: i32): bool {
    return slotVlen(this.slotAt(this.lookup(kp, kn))) >= 0;
  }
  putAt(kp: usize, kn: i32, vp: usize, vn: i32): void {
    let i = this.entry(kp, kn, vn);
    this.store(this.slotAt(i), vp, vn);
    this.touch(i);
  }
  deleteAt(kp: usize, kn: i32): void {
    let i = this.entry(kp, kn, 0);
    this.drop(this.slotAt(i));
    this.touch(i);
  }
  getIntAt(kp: usize, kn: i32, def: i64 = 0): i64 {
    let s = this.slotAt(this.lookup(kp, kn));
    return slotVlen(s) == 8 ? load<i64>(s, 32) : def;
  }
  putIntAt(kp: usize, kn: i32, v: i64): void {
    let i = this.entry(kp, kn, 8);
    let s = this.slotAt(i);
    this.setInt(s, v);
    this.touch(i);
  }
  addIntAt(kp: usize, kn: i32, delta: i64): i64 {
    let i = this.lookup(kp, kn);
    let s = this.slotAt(i);
    let v: i64 = slotVlen(s) == 8 ? load<i64>(s, 32) : 0;
    v += delta;
    this.setInt(s, v);
    if (load<u32>(s, 24) == 0) {
      store<u32>(s, 1, 24);
      this.dirty.u32(<u32>i);
    }
    return v;
  }
  scanAt(pp: usize, pn: i32): StateIterator {
    this.flush();
    let buf = new ArrayBuffer(4096);
    for (;;) {
      let n = hostStateScan(pp, pn, changetype<usize>(buf), buf.byteLength);
      if (n < 4) throw new Error("ardea: state_scan returned " + n.toString());
      if (n <= buf.byteLength) return new StateIterator(buf, n);
      buf = new ArrayBuffer(n);
    }
    return unreachable();
  }

  // ---- the cache ----

  @inline private slotAt(i: i32): usize {
    return this.slots + <usize>i * SLOT;
  }

  private hashKey(p: usize, n: i32): u32 {
    let x = this.seed ^ (<u64>n * 0x9e3779b97f4a7c15);
    if (n > 8) {
      let q = p, end = p + <usize>n - 8;
      while (q < end) {
        x = rotl<u64>((x ^ load<u64>(q)) * 0x9e3779b97f4a7c15, 29);
        q += 8;
      }
      x ^= load<u64>(end);
    } else if (n >= 4) {
      x ^= <u64>load<u32>(p) | (<u64>load<u32>(p + <usize>n - 4) << (8 * <u64>(n - 4)));
    } else if (n > 0) {
      x ^= <u64>load<u8>(p) | (<u64>load<u8>(p + <usize>(n >> 1)) << (8 * <u64>(n >> 1))) |
        (<u64>load<u8>(p + <usize>n - 1) << (8 * <u64>(n - 1)));
    }
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccd;
    x ^= x >> 33;
    return <u32>x;
  }

  // find returns the slot number of a cached key, or ~cell with the index
  // cell where it would go; cell is icap if there is no index yet or the
  // free cell is more than MAX_PROBE cells from the key's home.
  private find(kp: usize, kn: i32, h: u32): i32 {
    if (this.icap == 0) return ~0;
    let mask = <u32>this.icap - 1;
    let c = h & mask;
    for (let probes = 0; ; probes++) {
      let j = load<u32>(this.index + (<usize>c << 2));
      if (j == 0) return probes > MAX_PROBE ? ~this.icap : ~(<i32>c);
      let s = this.slotAt(<i32>j - 1);
      if (slotHash(s) == h && slotKlen(s) == kn &&
          memory.compare(this.keys.ptr + <usize>slotKoff(s), kp, <usize>kn) == 0) {
        return <i32>j - 1;
      }
      c = (c + 1) & mask;
    }
    return unreachable();
  }

  // lookup returns the slot number of a key, loading it from the host on a miss.
  private lookup(kp: usize, kn: i32): i32 {
    let h = this.hashKey(kp, kn);
    let c = this.find(kp, kn, h);
    if (c >= 0) return c;
    // Miss: ask the host, then cache the value or its absence.
    let vb = this.vbuf;
    if (vb.cap == 0) vb.grow(256);
    let vn: i32;
    for (;;) {
      vn = hostStateGet(kp, kn, vb.ptr, vb.cap);
      if (vn <= vb.cap) break;
      vb.len = 0;
      vb.grow(vn);
    }
    let i = this.insert(kp, kn, h, ~c, max(vn, 0));
    if (vn >= 0) this.store(this.slotAt(i), vb.ptr, vn);
    return i;
  }

  // entry returns the slot of a key about to get a value of vn bytes (or
  // be deleted): a miss does not read the host.
  private entry(kp: usize, kn: i32, vn: i32): i32 {
    let h = this.hashKey(kp, kn);
    let c = this.find(kp, kn, h);
    return c >= 0 ? c : this.insert(kp, kn, h, ~c, vn);
  }

  private insert(kp: usize, kn: i32, h: u32, cell: i32, vn: i32): i32 {
    if (cell >= this.icap || this.nslots >= this.maxEntries ||
        <i64>this.bytes + <i64>kn + <i64>vn > <i64>this.maxBytes) {
      if (this.nslots > 0) {
        this.flush();
        this.reset();
      }
      cell = -1;
    }
    if (2 * (this.nslots + 1) > this.icap) {
      this.growIndex();
      cell = -1;
    }
    if (cell < 0) {
      cell = ~this.find(kp, kn, h);
      if (cell >= this.icap) throw new Error("ardea: state cache: no free cell");
    }
    if (this.nslots == this.scap) {
      let c = max(this.scap * 2, 64);
      this.slots = this.slots == 0 ? heap.alloc(<usize>c * SLOT) : heap.realloc(this.slots, <usize>c * SLOT);
      this.scap = c;
    }
    let i = this.nslots++;
    let s = this.slotAt(i);
    memory.fill(s, 0, SLOT);
    store<u32>(s, h);
    store<u32>(s, <u32>this.keys.len, 4);
    store<i32>(s, kn, 8);
    store<i32>(s, -1, 12);
    this.keys.bytes(kp, kn);
    store<u32>(this.index + (<usize>cell << 2), <u32>i + 1);
    this.bytes += kn;
    return i;
  }

  private growIndex(): void {
    let n = max(this.icap * 2, 64);
    while (n < 2 * (this.nslots + 1)) n <<= 1;
    if (this.index != 0) heap.free(this.index);
    this.index = heap.alloc(<usize>n << 2);
    memory.fill(this.index, 0, <usize>n << 2);
    this.icap = n;
    let mask = <u32>n - 1;
    for (let j = 0; j < this.nslots; j++) {
      let c = slotHash(this.slotAt(j)) & mask;
      while (load<u32>(this.index + (<usize>c << 2)) != 0) c = (c + 1) & mask;
      store<u32>(this.index + (<usize>c << 2), <u32>j + 1);
    }
  }

  // reset empties the cache (its unwritten changes are lost).
  private reset(): void {
    for (let j = 0; j < this.nslots; j++) {
      let big = load<u32>(this.slotAt(j), 16);
      if (big != 0) heap.free(<usize>big);
    }
    if (this.icap > 0) memory.fill(this.index, 0, <usize>this.icap << 2);
    this.nslots = 0;
    this.keys.len = 0;
    this.dirty.len = 0;
    this.bytes = 0;
  }

  private store(s: usize, vp: usize, vn: i32): void {
    this.bytes += vn - max(slotVlen(s), 0);
    if (vn <= INLINE) {
      memory.copy(s + 32, vp, <usize>vn);
    } else {
      let big = <usize>load<u32>(s, 16);
      if (big == 0 || load<i32>(s, 20) < vn) {
        if (big != 0) heap.free(big);
        big = heap.alloc(<usize>vn);
        store<u32>(s, <u32>big, 16);
        store<i32>(s, vn, 20);
      }
      memory.copy(big, vp, <usize>vn);
    }
    store<i32>(s, vn, 12);
  }

  @inline private setInt(s: usize, v: i64): void {
    let vn = slotVlen(s);
    if (vn != 8) this.bytes += 8 - max(vn, 0);
    store<i64>(s, v, 32);
    store<i32>(s, 8, 12);
  }

  private drop(s: usize): void {
    this.bytes -= max(slotVlen(s), 0);
    store<i32>(s, -1, 12);
  }

  private touch(i: i32): void {
    let s = this.slotAt(i);
    if (load<u32>(s, 24) == 0) {
      store<u32>(s, 1, 24);
      this.dirty.u32(<u32>i);
    }
  }

  /** Writes the dirty entries to the host with one state_write call. */
  flush(): void {
    let d = this.dirty;
    if (d.len == 0) return;
    let w = this.wbuf;
    w.len = 0;
    for (let k = 0; k < d.len; k += 4) {
      let s = this.slotAt(<i32>load<u32>(d.ptr + <usize>k));
      store<u32>(s, 0, 24);
      let kn = slotKlen(s);
      let kp = this.keys.ptr + <usize>slotKoff(s);
      let vn = slotVlen(s);
      if (vn < 0) {
        let p = w.reserve(9 + kn);
        store<u8>(p, 2);
        store<u32>(p, <u32>kn, 1);
        memory.copy(p + 5, kp, <usize>kn);
        store<u32>(p + 5 + <usize>kn, 0);
        w.len += 9 + kn;
      } else {
        let p = w.reserve(9 + kn + vn);
        store<u8>(p, 1);
        store<u32>(p, <u32>kn, 1);
        memory.copy(p + 5, kp, <usize>kn);
        store<u32>(p + 5 + <usize>kn, <u32>vn);
        memory.copy(p + 9 + <usize>kn, slotValue(s), <usize>vn);
        w.len += 9 + kn + vn;
      }
    }
    d.len = 0;
    hostStateWrite(w.ptr, w.len);
    w.shrink(4 << 20);
  }

  /** Drops the cache with its unwritten changes (a failed call; open/prepare). */
  discard(): void {
    if (this.nslots > 0 || this.dirty.len > 0) this.reset();
  }

  /** Seeds the cache's hash (open/prepare). */
  init(): void {
    this.discard();
    this.seed = (<u64>hostNow() * 0x9e3779b97f4a7c15) | 1;
    if (this.icap > 0) {
      // The index was built with the old seed; it is empty after discard.
      memory.fill(this.index, 0, <usize>this.icap << 2);
    }
  }

  /** The number of cached keys (tests). */
  get cachedKeys(): i32 { return this.nslots; }
}

/**
 * The result of State.scan: call next() until it returns false; after a
 * true, key/value describe the current entry. The iterator owns a copy of
 * the host's answer, so state writes during the iteration are not seen.
 */
export class StateIterator {
  private p: usize;
  private end: usize;
  private left: u32;
  keyPtr: usize = 0;
  keyLen: i32 = 0;
  valuePtr: usize = 0;
  valueLen: i32 = 0;

  constructor(private buf: ArrayBuffer, n: i32) {
    let p = changetype<usize>(buf);
    this.left = load<u32>(p);
    this.p = p + 4;
    this.end = p + <usize>n;
  }

  /** Advances to the next entry; false when there is none. */
  next(): bool {
    if (this.left == 0) return false;
    this.left--;
    this.keyLen = this.field();
    this.keyPtr = this.p - <usize>this.keyLen;
    this.valueLen = this.field();
    this.valuePtr = this.p - <usize>this.valueLen;
    return true;
  }

  private field(): i32 {
    if (this.end - this.p < 4) throw new Error("ardea: malformed state_scan result");
    let n = load<u32>(this.p);
    if (<u64>(this.end - this.p - 4) < <u64>n) throw new Error("ardea: malformed state_scan result");
    this.p += 4 + <usize>n;
    return <i32>n;
  }

  /** The current key as a string (UTF-8 decoded). */
  get key(): string { return decodeUTF8(this.keyPtr, this.keyLen); }
  /** The current key's bytes (a copy). */
  keyBytes(): Uint8Array { return copyBytes(this.keyPtr, this.keyLen); }
  /** The current value (a copy). */
  value(): Uint8Array { return copyBytes(this.valuePtr, this.valueLen); }
  /** The current value as an int64 (8 bytes little-endian), or def. */
  valueInt(def: i64 = 0): i64 { return this.valueLen == 8 ? load<i64>(this.valuePtr) : def; }
}
