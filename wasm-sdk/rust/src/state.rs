//! The task's key/value state with the SDK's write-back cache.

use std::rc::Rc;

use crate::codec::le32;
use crate::host::Host;

/// The cache's default bounds; when an insert would exceed one, the cache
/// writes its dirty entries to the host and starts empty.
pub const DEFAULT_CACHE_ENTRIES: usize = 1 << 16;
/// See [`DEFAULT_CACHE_ENTRIES`]; counts keys plus values.
pub const DEFAULT_CACHE_BYTES: usize = 8 << 20;

/// Values up to this size live inside their cache slot (an int64 does).
const INLINE: usize = 16;

/// An insert whose free index cell is further than this from the key's
/// home cell (only with pathological keys) empties the cache first.
const MAX_PROBE: usize = 64;

/// The task's key/value state. The host holds it (it survives a module
/// restart or swap); the SDK keeps a write-back cache in the guest:
///
/// - `get` reads through the cache: a miss asks the host once
///   (`state_get`) and caches the value or its absence.
/// - `put`, `delete` and the int helpers change only the cache and mark
///   the key dirty.
/// - When a lifecycle call (execute, next, tick, finish, ack, ...)
///   returns successfully, all dirty entries go to the host in ONE
///   `state_write` call, before the call's emits. A batch of N tuples
///   costs one host call for its writes however many keys it touched.
/// - The cache holds at most [`DEFAULT_CACHE_ENTRIES`] entries and
///   [`DEFAULT_CACHE_BYTES`] bytes; an insert beyond that first writes the
///   dirty entries and empties the cache.
/// - `scan` first writes the dirty entries, then asks the host.
/// - A failed call (error or panic) fails the instance; its unwritten
///   changes are dropped.
///
/// The cache assumes the task is its state's only writer, which is how
/// the host runs a task; it is emptied at every prepare/open.
///
/// Keys are any bytes (`&str`, `&[u8]`, `String`, `Vec<u8>`). To keep a
/// key's state with the tuples routed by it when the component is
/// rescaled, build keys with [`crate::Tuple::payload`] or
/// [`crate::Tuple::state_key`].
pub struct State {
    host: Rc<dyn Host>,
    // Open addressing (linear probing): index holds slot number + 1 per
    // cell, 0 for empty; its size is a power of two, at least twice the
    // number of slots. Keys are stored back to back in `keys`.
    index: Vec<u32>,
    slots: Vec<Slot>,
    keys: Vec<u8>,
    big: Vec<Vec<u8>>,
    dirty: Vec<u32>,
    seed: u64,
    bytes: usize,
    max_entries: usize,
    max_bytes: usize,
    vbuf: Vec<u8>,
    wbuf: Vec<u8>,
}

#[derive(Clone)]
struct Slot {
    hash: u32,
    koff: u32,
    klen: u32,
    vlen: i32, // -1: absent
    big: u32,  // 0, or big[big-1] holds the value if vlen > INLINE
    dirty: bool,
    inl: [u8; INLINE],
}

impl State {
    pub(crate) fn new(host: Rc<dyn Host>) -> State {
        use std::collections::hash_map::RandomState;
        use std::hash::{BuildHasher, Hasher};
        let seed = RandomState::new().build_hasher().finish() | 1;
        State {
            host,
            index: Vec::new(),
            slots: Vec::new(),
            keys: Vec::new(),
            big: Vec::new(),
            dirty: Vec::new(),
            seed,
            bytes: 0,
            max_entries: DEFAULT_CACHE_ENTRIES,
            max_bytes: DEFAULT_CACHE_BYTES,
            vbuf: Vec::new(),
            wbuf: Vec::new(),
        }
    }

    /// Changes the cache bounds (entries, and bytes of keys plus values).
    pub fn set_cache_limits(&mut self, entries: usize, bytes: usize) {
        self.max_entries = entries.max(1);
        self.max_bytes = bytes.max(1);
    }

    /// The number of cached keys.
    pub fn cached_entries(&self) -> usize {
        self.slots.len()
    }

    /// A key's value, or None if it is absent.
    pub fn get<K: AsRef<[u8]>>(&mut self, key: K) -> Option<&[u8]> {
        let i = self.lookup(key.as_ref());
        let e = &self.slots[i];
        if e.vlen < 0 {
            return None;
        }
        Some(self.value(i))
    }

    /// Stores a value (copied).
    pub fn put<K: AsRef<[u8]>>(&mut self, key: K, value: &[u8]) {
        let i = self.entry(key.as_ref(), value.len());
        self.store(i, value);
        self.touch(i);
    }

    /// Removes a key.
    pub fn delete<K: AsRef<[u8]>>(&mut self, key: K) {
        let i = self.entry(key.as_ref(), 0);
        self.drop_value(i);
        self.touch(i);
    }

    /// The int64 stored by `put_int`/`add_int` (8 bytes little endian);
    /// None if the key is absent or its value is not 8 bytes.
    pub fn get_int<K: AsRef<[u8]>>(&mut self, key: K) -> Option<i64> {
        let i = self.lookup(key.as_ref());
        let e = &self.slots[i];
        if e.vlen != 8 {
            return None;
        }
        let mut b = [0u8; 8];
        b.copy_from_slice(&e.inl[..8]);
        Some(i64::from_le_bytes(b))
    }

    /// Stores v as 8 bytes little endian.
    pub fn put_int<K: AsRef<[u8]>>(&mut self, key: K, v: i64) {
        let i = self.entry(key.as_ref(), 8);
        self.store(i, &v.to_le_bytes());
        self.touch(i);
    }

    /// Adds delta to the int64 under key (absent, or not 8 bytes, counts
    /// as 0) and returns the new value. A counter keyed by a view of the
    /// input costs no allocation once its key is cached.
    #[inline]
    pub fn add_int<K: AsRef<[u8]>>(&mut self, key: K, delta: i64) -> i64 {
        let i = self.lookup(key.as_ref());
        if self.slots[i].vlen != 8 {
            self.store(i, &[0u8; 8]);
        }
        let e = &mut self.slots[i];
        let mut b = [0u8; 8];
        b.copy_from_slice(&e.inl[..8]);
        let v = i64::from_le_bytes(b).wrapping_add(delta);
        e.inl[..8].copy_from_slice(&v.to_le_bytes());
        if !e.dirty {
            e.dirty = true;
            self.dirty.push(i as u32);
        }
        v
    }

    /// Every key starting with `prefix` and its value, in ascending key
    /// order, as the host holds them: the dirty entries are written first.
    /// The result owns its buffer, so you can emit while iterating it.
    pub fn scan<K: AsRef<[u8]>>(&mut self, prefix: K) -> Scan {
        self.flush();
        let prefix = prefix.as_ref();
        let mut buf = vec![0u8; 4096];
        loop {
            let n = self.host.state_scan(prefix, &mut buf);
            if n < 4 {
                panic!("ardea: state_scan returned {}", n);
            }
            let n = n as usize;
            if n <= buf.len() {
                buf.truncate(n);
                break;
            }
            buf = vec![0u8; n];
        }
        // Validate once so that iterating cannot fail.
        let count = le32(&buf) as usize;
        let mut off = 4;
        for _ in 0..2 * count {
            if buf.len() - off < 4 || buf.len() - off - 4 < le32(&buf[off..]) as usize {
                panic!("ardea: malformed state_scan result");
            }
            off += 4 + le32(&buf[off..]) as usize;
        }
        Scan { buf, count }
    }

    fn hash(&self, k: &[u8]) -> u32 {
        const M: u64 = 0x9e37_79b9_7f4a_7c15;
        let n = k.len();
        let mut x = self.seed ^ (n as u64).wrapping_mul(M);
        if n > 8 {
            let mut r = k;
            while r.len() > 8 {
                x = ((x ^ crate::codec::le64(r)).wrapping_mul(M)).rotate_left(29);
                r = &r[8..];
            }
            x ^= crate::codec::le64(&k[n - 8..]);
        } else if n >= 4 {
            x ^= le32(k) as u64 | (le32(&k[n - 4..]) as u64) << 32;
        } else if n > 0 {
            x ^= k[0] as u64 | (k[n / 2] as u64) << 8 | (k[n - 1] as u64) << 16;
        }
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x as u32
    }

    /// The slot of a cached key (Ok), or the index cell where it would go
    /// (Err; `index.len()` if there is no index or the free cell is too
    /// far from the key's home).
    #[inline]
    fn find(&self, k: &[u8], h: u32) -> Result<usize, usize> {
        if self.index.is_empty() {
            return Err(0);
        }
        let mask = self.index.len() - 1;
        let mut c = h as usize & mask;
        let mut n = 0;
        loop {
            let j = self.index[c];
            if j == 0 {
                return Err(if n > MAX_PROBE { self.index.len() } else { c });
            }
            let e = &self.slots[j as usize - 1];
            if e.hash == h && e.klen as usize == k.len() && &self.keys[e.koff as usize..(e.koff + e.klen) as usize] == k {
                return Ok(j as usize - 1);
            }
            c = (c + 1) & mask;
            n += 1;
        }
    }

    /// The slot of a key, loading it from the host on a miss.
    #[inline]
    fn lookup(&mut self, k: &[u8]) -> usize {
        let h = self.hash(k);
        match self.find(k, h) {
            Ok(i) => i,
            Err(cell) => self.miss(k, h, cell),
        }
    }

    #[inline(never)]
    fn miss(&mut self, k: &[u8], h: u32, cell: usize) -> usize {
        let mut vbuf = std::mem::take(&mut self.vbuf);
        if vbuf.is_empty() {
            vbuf.resize(256, 0);
        }
        let mut found = None;
        loop {
            let n = self.host.state_get(k, &mut vbuf);
            if n < 0 {
                break;
            }
            let n = n as usize;
            if n <= vbuf.len() {
                found = Some(n);
                break;
            }
            vbuf.resize(n, 0);
        }
        let i = self.insert(k, h, cell, found.unwrap_or(0));
        if let Some(n) = found {
            self.store(i, &vbuf[..n]);
        }
        self.vbuf = vbuf;
        i
    }

    /// The slot of a key about to be given a value of vlen bytes (or
    /// deleted): a miss does not read the host.
    fn entry(&mut self, k: &[u8], vlen: usize) -> usize {
        let h = self.hash(k);
        match self.find(k, h) {
            Ok(i) => i,
            Err(cell) => self.insert(k, h, cell, vlen),
        }
    }

    /// Adds an absent slot for a key that is not cached.
    fn insert(&mut self, k: &[u8], h: u32, cell: usize, vlen: usize) -> usize {
        let mut cell = Some(cell);
        if cell == Some(self.index.len()) || self.slots.len() >= self.max_entries || self.bytes + k.len() + vlen > self.max_bytes {
            if !self.slots.is_empty() {
                self.flush();
                self.reset();
            }
            cell = None;
        }
        if 2 * (self.slots.len() + 1) > self.index.len() {
            self.grow();
            cell = None;
        }
        let cell = match cell {
            Some(c) => c,
            None => match self.find(k, h) {
                Err(c) if c < self.index.len() => c,
                _ => panic!("ardea: state cache: no free cell"),
            },
        };
        self.slots.push(Slot { hash: h, koff: self.keys.len() as u32, klen: k.len() as u32, vlen: -1, big: 0, dirty: false, inl: [0; INLINE] });
        self.keys.extend_from_slice(k);
        self.index[cell] = self.slots.len() as u32;
        self.bytes += k.len();
        self.slots.len() - 1
    }

    fn grow(&mut self) {
        let mut n = (2 * self.index.len()).max(64);
        while n < 2 * (self.slots.len() + 1) {
            n *= 2;
        }
        self.index = vec![0; n];
        let mask = n - 1;
        for (j, e) in self.slots.iter().enumerate() {
            let mut c = e.hash as usize & mask;
            while self.index[c] != 0 {
                c = (c + 1) & mask;
            }
            self.index[c] = j as u32 + 1;
        }
    }

    fn reset(&mut self) {
        for c in self.index.iter_mut() {
            *c = 0;
        }
        self.slots.clear();
        self.keys.clear();
        self.big.clear();
        self.dirty.clear();
        self.bytes = 0;
    }

    fn value(&self, i: usize) -> &[u8] {
        let e = &self.slots[i];
        if e.vlen < 0 {
            &[]
        } else if e.vlen as usize > INLINE {
            &self.big[e.big as usize - 1]
        } else {
            &e.inl[..e.vlen as usize]
        }
    }

    fn store(&mut self, i: usize, v: &[u8]) {
        let e = &mut self.slots[i];
        self.bytes = self.bytes + v.len() - e.vlen.max(0) as usize;
        if v.len() <= INLINE {
            e.inl[..v.len()].copy_from_slice(v);
            if e.vlen as isize > INLINE as isize {
                self.big[e.big as usize - 1] = Vec::new();
            }
        } else {
            if e.big == 0 {
                self.big.push(Vec::new());
                e.big = self.big.len() as u32;
            }
            let b = &mut self.big[e.big as usize - 1];
            b.clear();
            b.extend_from_slice(v);
        }
        e.vlen = v.len() as i32;
    }

    fn drop_value(&mut self, i: usize) {
        let e = &mut self.slots[i];
        self.bytes -= e.vlen.max(0) as usize;
        if e.vlen as isize > INLINE as isize {
            self.big[e.big as usize - 1] = Vec::new();
        }
        e.vlen = -1;
    }

    fn touch(&mut self, i: usize) {
        let e = &mut self.slots[i];
        if !e.dirty {
            e.dirty = true;
            self.dirty.push(i as u32);
        }
    }

    /// Writes the dirty entries to the host with one `state_write` call.
    pub(crate) fn flush(&mut self) {
        if self.dirty.is_empty() {
            return;
        }
        let mut w = std::mem::take(&mut self.wbuf);
        w.clear();
        for n in 0..self.dirty.len() {
            let i = self.dirty[n] as usize;
            self.slots[i].dirty = false;
            let e = &self.slots[i];
            let k = &self.keys[e.koff as usize..(e.koff + e.klen) as usize];
            if e.vlen < 0 {
                w.push(2);
                w.extend_from_slice(&(k.len() as u32).to_le_bytes());
                w.extend_from_slice(k);
                w.extend_from_slice(&[0, 0, 0, 0]);
                continue;
            }
            w.push(1);
            w.extend_from_slice(&(k.len() as u32).to_le_bytes());
            w.extend_from_slice(k);
            let v = self.value(i);
            w.extend_from_slice(&(v.len() as u32).to_le_bytes());
            w.extend_from_slice(v);
        }
        self.dirty.clear();
        self.host.state_write(&w);
        if w.capacity() <= 4 << 20 {
            self.wbuf = w;
        }
    }

    /// Drops the cache with its unwritten changes.
    pub(crate) fn discard(&mut self) {
        if !self.slots.is_empty() || !self.dirty.is_empty() {
            self.reset();
        }
    }

    #[cfg(test)]
    pub(crate) fn is_cached(&self, key: &[u8]) -> bool {
        self.find(key, self.hash(key)).is_ok()
    }
}

/// The result of [`State::scan`]: keys and values in ascending key order.
pub struct Scan {
    buf: Vec<u8>,
    count: usize,
}

impl Scan {
    /// The number of keys.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The (key, value) pairs.
    pub fn iter(&self) -> ScanIter<'_> {
        ScanIter { b: &self.buf[4..], left: self.count }
    }
}

impl<'a> IntoIterator for &'a Scan {
    type Item = (&'a [u8], &'a [u8]);
    type IntoIter = ScanIter<'a>;
    fn into_iter(self) -> ScanIter<'a> {
        self.iter()
    }
}

/// Iterates a [`Scan`].
pub struct ScanIter<'a> {
    b: &'a [u8],
    left: usize,
}

impl<'a> Iterator for ScanIter<'a> {
    type Item = (&'a [u8], &'a [u8]);
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let kl = le32(self.b) as usize;
        let k = &self.b[4..4 + kl];
        let r = &self.b[4 + kl..];
        let vl = le32(r) as usize;
        let v = &r[4..4 + vl];
        self.b = &r[4 + vl..];
        Some((k, v))
    }
}
