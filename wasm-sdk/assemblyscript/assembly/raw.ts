// Growable byte buffers in unmanaged memory (heap.alloc): the garbage
// collector neither scans nor moves them, and using them allocates no GC
// objects on the hot paths.

/** A growable byte buffer outside the GC heap. */
export class RawBuf {
  ptr: usize = 0;
  len: i32 = 0;
  cap: i32 = 0;

  /** Makes room for n more bytes and returns where they go (ptr + len). */
  @inline reserve(n: i32): usize {
    if (<u32>this.len + <u32>n > <u32>this.cap) this.grow(n);
    return this.ptr + <usize>this.len;
  }

  grow(n: i32): void {
    let want = <u64>this.len + <u64>n;
    if (want > 0x7fff0000) throw new Error("ardea: buffer over 2 GiB");
    let c = <u64>max(this.cap, 256);
    while (c < want) c <<= 1;
    if (c > 0x7fff0000) c = 0x7fff0000;
    this.ptr = this.ptr == 0 ? heap.alloc(<usize>c) : heap.realloc(this.ptr, <usize>c);
    this.cap = <i32>c;
  }

  @inline u8(v: u8): void {
    let p = this.reserve(1);
    store<u8>(p, v);
    this.len += 1;
  }

  @inline u32(v: u32): void {
    let p = this.reserve(4);
    store<u32>(p, v);
    this.len += 4;
  }

  @inline bytes(src: usize, n: i32): void {
    let p = this.reserve(n);
    memory.copy(p, src, <usize>n);
    this.len += n;
  }

  /** Appends the UTF-8 encoding of s (unpaired surrogates become U+FFFD). */
  utf8(s: string): void {
    let n = String.UTF8.byteLength(s);
    let p = this.reserve(n);
    String.UTF8.encodeUnsafe(changetype<usize>(s), s.length, p, false, String.UTF8.ErrorMode.REPLACE);
    this.len += n;
  }

  /** Drops the buffer's memory when it grew past keep bytes. */
  shrink(keep: i32): void {
    this.len = 0;
    if (this.cap > keep) {
      heap.free(this.ptr);
      this.ptr = 0;
      this.cap = 0;
    }
  }
}

/** Scratch space for encoding short strings (keys, names, log lines). */
export const scratch = new RawBuf();

/** Encodes s into the scratch buffer; the bytes are at scratch.ptr. */
export function scratchUTF8(s: string): i32 {
  scratch.len = 0;
  scratch.utf8(s);
  return scratch.len;
}

/** Copies n bytes at p into a new Uint8Array. */
export function copyBytes(p: usize, n: i32): Uint8Array {
  let a = new Uint8Array(n);
  memory.copy(a.dataStart, p, <usize>n);
  return a;
}

/** Decodes n bytes of UTF-8 at p. */
export function decodeUTF8(p: usize, n: i32): string {
  return String.UTF8.decodeUnsafe(p, <usize>n);
}
