// UTF-16 (AssemblyScript strings) against UTF-8 (everything that crosses the
// ABI), without allocating.

/**
 * Compares the UTF-8 encoding of `s` with the `n` bytes at `p`, bytewise and
 * unsigned, the order of a view's entries. Negative when `s` sorts first,
 * zero when equal, positive when `s` sorts last.
 *
 * `s` is encoded as String.UTF8.encode(s) would encode it (WTF-8: an unpaired
 * surrogate becomes its 3-byte form, which never occurs in a view), so
 * comparing equal means exactly "the bytes are String.UTF8.encode(s)".
 */
export function compareUTF8(s: string, p: usize, n: usize): i32 {
  let sp = changetype<usize>(s);
  let se = sp + (<usize>s.length << 1);
  let j: usize = 0;
  while (sp < se) {
    let c = <u32>load<u16>(sp);
    sp += 2;
    if (c < 0x80) { // ASCII fast path: one code unit, one byte
      if (j >= n) return 1;
      let b = <u32>load<u8>(p + j);
      if (c != b) return c < b ? -1 : 1;
      j++;
      continue;
    }
    // Encode one code point into up to four bytes, big end first in `w`.
    let w: u32, k: i32;
    if (c < 0x800) {
      w = (0xC0 | c >> 6) << 8 | (0x80 | (c & 0x3F));
      k = 2;
    } else {
      if ((c & 0xFC00) == 0xD800 && sp < se) {
        let d = <u32>load<u16>(sp);
        if ((d & 0xFC00) == 0xDC00) {
          sp += 2;
          c = 0x10000 + ((c & 0x3FF) << 10 | (d & 0x3FF));
        }
      }
      if (c >= 0x10000) {
        w = (0xF0 | c >> 18) << 24 | (0x80 | (c >> 12 & 0x3F)) << 16 | (0x80 | (c >> 6 & 0x3F)) << 8 | (0x80 | (c & 0x3F));
        k = 4;
      } else {
        w = (0xE0 | c >> 12) << 16 | (0x80 | (c >> 6 & 0x3F)) << 8 | (0x80 | (c & 0x3F));
        k = 3;
      }
    }
    while (k > 0) {
      k--;
      if (j >= n) return 1;
      let a = (w >> (<u32>k << 3)) & 0xFF;
      let b = <u32>load<u8>(p + j);
      if (a != b) return a < b ? -1 : 1;
      j++;
    }
  }
  return j < n ? -1 : 0;
}

/** Reports whether the `n` bytes at `p` are the UTF-8 encoding of `s`. */
// @ts-ignore: decorator
@inline
export function equalsUTF8(s: string, p: usize, n: usize): bool {
  // A string's UTF-8 is at least as long as its UTF-16 length in code units
  // and at most three times as long: a cheap early out.
  let m = <usize>s.length;
  if (n < m || n > m * 3) return false;
  return compareUTF8(s, p, n) == 0;
}

/** Decodes `n` UTF-8 bytes at `p` into a new string. */
// @ts-ignore: decorator
@inline
export function decodeUTF8(p: usize, n: usize): string {
  return n == 0 ? "" : String.UTF8.decodeUnsafe(p, n);
}

/** Copies `n` bytes at `p` into a new ArrayBuffer. */
export function copyBytes(p: usize, n: usize): ArrayBuffer {
  let b = new ArrayBuffer(<i32>n);
  memory.copy(changetype<usize>(b), p, n);
  return b;
}

/**
 * A growable block of unmanaged memory (heap.alloc, never collected), reused
 * across calls so that handing strings to the host allocates nothing once it
 * has grown.
 */
@final @unmanaged
export class Scratch {
  ptr: usize;
  cap: usize;

  /** Makes room for `n` bytes, dropping the old contents; returns the pointer. */
  ensure(n: usize): usize {
    if (n > this.cap) {
      if (this.ptr) heap.free(this.ptr);
      let c = n < 256 ? <usize>256 : (n + 0xFFF) & ~<usize>0xFFF;
      this.ptr = heap.alloc(c);
      this.cap = c;
    }
    return this.ptr;
  }
}

/** Scratch space for strings sent to the host. */
export const hostScratch = changetype<Scratch>(memory.data(offsetof<Scratch>()));

/** Encodes `s` as UTF-8 at `dst` and returns the byte count (String.UTF8.byteLength(s) bytes). */
// @ts-ignore: decorator
@inline
export function encodeInto(s: string, dst: usize): usize {
  return String.UTF8.encodeUnsafe(changetype<usize>(s), s.length, dst);
}
