// Readers over the view encoding of events and configs (ABI.md §4).
//
// A view is a sorted table of every value in a JSON document, keyed by path.
// Every lookup here is a binary search that compares the path argument with
// the bytes in memory: nothing is parsed and nothing is allocated, except by
// str() and the other methods that return a new string or buffer.
//
// Paths: members of the root have no leading dot, a member's path is its
// parent's path, ".", and its key or decimal array index: "data.value",
// "tags.0". Keys are escaped as in JSON Pointer, with "." for "/": "~" is
// written "~0", "." is written "~1" (the key "a.b" is the path "a~1b"), and
// the empty key is "~2". The root is "".

import { compareUTF8, equalsUTF8, decodeUTF8, copyBytes } from "./utf8";
import { eventRaw, eventRawBytes } from "./host";

/**
 * `key` as one step of a path, escaped as the view writes it: "~" becomes
 * "~0", "." becomes "~1" and the empty key becomes "~2". For building paths
 * from keys that may hold a dot: `"labels." + escapeKey("app.kubernetes.io/name")`.
 */
export function escapeKey(key: string): string {
  if (key.length == 0) return "~2";
  if (!key.includes(".") && !key.includes("~")) return key;
  return key.replaceAll("~", "~0").replaceAll(".", "~1");
}

/** The key one step of a path stands for: escapeKey() undone. */
export function unescapeKey(step: string): string {
  if (step == "~2") return "";
  if (!step.includes("~")) return step;
  return step.replaceAll("~1", ".").replaceAll("~0", "~");
}

/**
 * Orders strings by code point, which is the order of their UTF-8 bytes and
 * Go's string order (UTF-16 code units are not: a surrogate pair sorts below
 * U+E000 there). Negative, zero or positive, as a comparator answers.
 */
export function compareCodePoints(a: string, b: string): i32 {
  let i = 0, j = 0;
  let n = a.length, m = b.length;
  while (i < n && j < m) {
    let x = a.codePointAt(i), y = b.codePointAt(j);
    if (x != y) return x < y ? -1 : 1;
    i += x >= 0x10000 ? 2 : 1;
    j += y >= 0x10000 ? 2 : 1;
  }
  return (n - i) - (m - j) < 0 ? -1 : ((n - i) - (m - j) > 0 ? 1 : 0);
}

/** The JSON type of a value, as kind(path) answers it. */
export enum ValueKind {
  /** No value at the path. */
  Missing = 0,
  Null = 1,
  Bool = 2,
  /** A number written without fraction or exponent that fits in i64. */
  Int = 3,
  /** Every other number. */
  Float = 4,
  String = 5,
  Object = 6,
  Array = 7,
}

// @ts-ignore: decorator
@inline const HEADER: usize = 16;
// @ts-ignore: decorator
@inline const ENTRY: usize = 16;
// 2^63 as an f64, the bound of i64.
// @ts-ignore: decorator
@inline const TWO63: f64 = 9223372036854775808.0;

/** A view over the bytes the host wrote for one call. Valid only during that call. */
export class View {
  /** @internal start of the view */
  __p: usize = 0;
  /** @internal byte length of the view */
  __n: usize = 0;
  /** @internal entry count */
  __count: u32 = 0;
  /** @internal the run's context view (an event's; 0 when none): start, length, entry count */
  __cp: usize = 0;
  __cn: usize = 0;
  __cc: u32 = 0;
  /** @internal an event's view: paths below steps., vars., states. and previous. are the context's */
  __ev: bool = false;

  /** @internal Points the view at `n` bytes at `p`; false when the header does not check. */
  __reset(p: usize, n: usize): bool {
    this.__p = p;
    this.__n = n;
    this.__count = 0;
    this.__cc = 0;
    this.__ev = false;
    if (n < HEADER) return false;
    if (load<u16>(p) != 0x5652 /* "RV" */ || load<u8>(p, 2) != 1) return false;
    let count = load<u32>(p, 4);
    if (<u64>count * ENTRY > <u64>(n - HEADER)) return false;
    this.__count = count;
    return true;
  }

  /**
   * @internal The address of the entry at `path`, or 0. An event's view
   * looks in the run's context first for a path below "steps." or "vars."
   * (see Event).
   */
  __find(path: string): usize {
    // An event's view (__ev) sends steps., vars., states. and previous. to the run's context
    // only, never to the event: a trigger cannot pass off a field of its
    // own as a step's output.
    if (this.__ev && inContext(path)) return findIn(this.__cp, this.__cn, this.__cc, path);
    return findIn(this.__p, this.__n, this.__count, path);
  }

  /** @internal The string at entry `e` as pointer (high) and length (low), or -1 when `e` holds no valid string. */
  __span(e: usize): u64 {
    if (!e || load<u8>(e, 6) != ValueKind.String) return -1;
    let off = load<u32>(e, 8);
    let len = load<u32>(e, 12);
    let p = this.__p, n = this.__n;
    if (this.__cc && e >= this.__cp && e < this.__cp + HEADER + (<usize>this.__cc << 4)) {
      p = this.__cp; // an entry of the run's context
      n = this.__cn;
    }
    if (<u64>off + <u64>len > <u64>n) return -1;
    return <u64>(p + off) << 32 | <u64>len;
  }

  /** The number of entries: every value in the document, containers and the root included. */
  get size(): i32 {
    return <i32>this.__count;
  }

  /** Whether there is a value (possibly null) at `path`. */
  has(path: string): bool {
    return this.__find(path) != 0;
  }

  /** The kind of the value at `path`; ValueKind.Missing when there is none. */
  kind(path: string): ValueKind {
    let e = this.__find(path);
    return e ? <ValueKind>load<u8>(e, 6) : ValueKind.Missing;
  }

  /** Whether the value at `path` is a number (int or float). */
  isNumber(path: string): bool {
    let k = this.kind(path);
    return k == ValueKind.Int || k == ValueKind.Float;
  }

  /** Whether int(path) would answer the value: an int, or a float that holds a whole number in i64's range. */
  isInt(path: string): bool {
    let e = this.__find(path);
    if (e) {
      let k = load<u8>(e, 6);
      if (k == ValueKind.Int) return true;
      if (k == ValueKind.Float) {
        let f = load<f64>(e, 8);
        return f == Math.trunc(f) && f >= -TWO63 && f < TWO63;
      }
    }
    return false;
  }

  /** Whether the value at `path` is a string. */
  isString(path: string): bool {
    return this.kind(path) == ValueKind.String;
  }

  /** The number (int or float) at `path` as f64; `otherwise` (NaN unless given) when it is missing or not a number. */
  float(path: string, otherwise: f64 = NaN): f64 {
    let e = this.__find(path);
    if (e) {
      let k = load<u8>(e, 6);
      if (k == ValueKind.Int) return <f64>load<i64>(e, 8);
      if (k == ValueKind.Float) return load<f64>(e, 8);
    }
    return otherwise;
  }

  /**
   * The int at `path`, or a float there that holds a whole number in i64's
   * range; `otherwise` (0 unless given) for anything else.
   */
  int(path: string, otherwise: i64 = 0): i64 {
    let e = this.__find(path);
    if (e) {
      let k = load<u8>(e, 6);
      if (k == ValueKind.Int) return load<i64>(e, 8);
      if (k == ValueKind.Float) {
        let f = load<f64>(e, 8);
        if (f == Math.trunc(f) && f >= -TWO63 && f < TWO63) return <i64>f;
      }
    }
    return otherwise;
  }

  /** The bool at `path`; `otherwise` (false unless given) when it is missing or not a bool. */
  bool(path: string, otherwise: bool = false): bool {
    let e = this.__find(path);
    if (e && load<u8>(e, 6) == ValueKind.Bool) return load<u64>(e, 8) != 0;
    return otherwise;
  }

  /** The string at `path` (a new string), or null when it is missing or not a string. */
  str(path: string): string | null {
    let s = this.__span(this.__find(path));
    if (s == -1) return null;
    return decodeUTF8(<usize>(s >>> 32), <usize>(s & 0xFFFFFFFF));
  }

  /** The string at `path`, or `otherwise` when it is missing or not a string. */
  strOr(path: string, otherwise: string): string {
    let s = this.__span(this.__find(path));
    if (s == -1) return otherwise;
    return decodeUTF8(<usize>(s >>> 32), <usize>(s & 0xFFFFFFFF));
  }

  /** The string at `path` as its UTF-8 bytes (a copy), or null when it is missing or not a string. */
  bytes(path: string): ArrayBuffer | null {
    let s = this.__span(this.__find(path));
    if (s == -1) return null;
    return copyBytes(<usize>(s >>> 32), <usize>(s & 0xFFFFFFFF));
  }

  /** Whether the value at `path` is a string equal to `s`. Allocates nothing. */
  equals(path: string, s: string): bool {
    let sp = this.__span(this.__find(path));
    if (sp == -1) return false;
    return equalsUTF8(s, <usize>(sp >>> 32), <usize>(sp & 0xFFFFFFFF));
  }

  /** The member count of the object or the length of the array at `path`; -1 when it is not a container. */
  count(path: string): i32 {
    let e = this.__find(path);
    if (e) {
      let k = load<u8>(e, 6);
      if (k == ValueKind.Object || k == ValueKind.Array) return <i32>load<u32>(e, 8);
    }
    return -1;
  }

  /**
   * The keys of the object at `path`, unescaped, in the order of their UTF-8
   * bytes (the order Go's sort.Strings gives them); for an array, its
   * indices as decimal strings in order. Empty for anything else. Allocates
   * one string per member.
   */
  keys(path: string): string[] {
    let out = new Array<string>();
    let k = this.kind(path);
    if (k != ValueKind.Object && k != ValueKind.Array) return out;
    let prefix = path.length ? path + "." : "";
    let vp = this.__p, vn = this.__n, vc = this.__count;
    if (this.__ev && inContext(path)) {
      vp = this.__cp; // the context's members
      vn = this.__cn;
      vc = this.__cc;
    }
    for (let i = lowerIn(vp, vn, vc, prefix); i < vc; i++) {
      let p = pathIn(vp, vn, vc, i);
      if (p === null || !p.startsWith(prefix)) break;
      let rest = p.substring(prefix.length);
      if (rest.length == 0 || rest.includes(".")) continue;
      out.push(rest);
    }
    if (k == ValueKind.Array) {
      out.sort((a: string, b: string): i32 => I32.parseInt(a) - I32.parseInt(b));
      return out;
    }
    for (let i = 0, n = out.length; i < n; i++) out[i] = unescapeKey(out[i]);
    out.sort(compareCodePoints);
    return out;
  }

  /** The path of entry `i` (0 <= i < size, in path order), or null when out of range. */
  pathAt(i: i32): string | null {
    return pathIn(this.__p, this.__n, this.__count, <u32>i);
  }

  /**
   * @internal The view `path` is found in, with no context of its own: so
   * that what is below a container is read from the document the container
   * is in (the event's steps field stays the event's all the way down).
   */
  __home(path: string): View {
    if (!this.__ev) return this;
    let h = new View();
    if (inContext(path)) {
      h.__p = this.__cp;
      h.__n = this.__cn;
      h.__count = this.__cc;
    } else {
      h.__p = this.__p;
      h.__n = this.__n;
      h.__count = this.__count;
    }
    return h;
  }
}

/**
 * Whether `path` is one a run's context may hold: below "steps.", "vars.",
 * or (ABI 1.4) "states.", "previous." or "sun.".
 */
function inContext(path: string): bool {
  return path.length > 6 && path.startsWith("steps.") || path.length > 5 && path.startsWith("vars.") ||
    path.length > 7 && path.startsWith("states.") || path.length > 9 && path.startsWith("previous.") ||
    path.length > 4 && path.startsWith("sun.");
}

// The entry at `path` of the view of `n` bytes at `p` with `count`
// entries, or 0.
function findIn(p: usize, n: usize, count: u32, path: string): usize {
  let lo: u32 = 0;
  let hi = count;
  while (lo < hi) {
    let m = (lo + hi) >>> 1;
    let e = p + HEADER + (<usize>m << 4);
    let po = load<u32>(e);
    let pn = <usize>load<u16>(e, 4);
    // A corrupt entry costs this lookup, never a trap.
    if (<u64>po + <u64>pn > <u64>n) return 0;
    let c = compareUTF8(path, p + po, pn);
    if (c == 0) return e;
    if (c > 0) lo = m + 1;
    else hi = m;
  }
  return 0;
}

// The index of the first entry of the view at `p` whose path is not below
// `prefix` in byte order.
function lowerIn(p: usize, n: usize, count: u32, prefix: string): u32 {
  let lo: u32 = 0;
  let hi = count;
  while (lo < hi) {
    let m = (lo + hi) >>> 1;
    let e = p + HEADER + (<usize>m << 4);
    let po = load<u32>(e);
    let pn = <usize>load<u16>(e, 4);
    if (<u64>po + <u64>pn > <u64>n) return count;
    if (compareUTF8(prefix, p + po, pn) > 0) lo = m + 1;
    else hi = m;
  }
  return lo;
}

// The path of entry `i` of the view at `p`, or null.
function pathIn(p: usize, n: usize, count: u32, i: u32): string | null {
  if (i >= count) return null;
  let e = p + HEADER + (<usize>i << 4);
  let po = load<u32>(e);
  let pn = <usize>load<u16>(e, 4);
  if (<u64>po + <u64>pn > <u64>n) return null;
  return decodeUTF8(p + po, pn);
}

/** A step's config, as ruled_configure receives it. Valid only during configure: keep what you need. */
export class Config extends View {
  /** @internal */
  __fn: string = "";

  /** The name of the function being configured. */
  get functionName(): string {
    return this.__fn;
  }

  /** @internal The raw JSON section as pointer (high) and length (low), or 0. */
  __raw(): u64 {
    let p = this.__p;
    if (this.__n < HEADER || (load<u8>(p, 3) & 1) == 0) return 0;
    let off = load<u32>(p, 8);
    let len = load<u32>(p, 12);
    if (<u64>off + <u64>len > <u64>this.__n) return 0;
    return <u64>(p + off) << 32 | <u64>len;
  }

  /** The config's JSON as the rule wrote it; "" when the host sent none. */
  raw(): string {
    let r = this.__raw();
    return decodeUTF8(<usize>(r >>> 32), <usize>(r & 0xFFFFFFFF));
  }

  /** raw() as its UTF-8 bytes, byte for byte (a copy). */
  rawBytes(): ArrayBuffer {
    let r = this.__raw();
    return copyBytes(<usize>(r >>> 32), <usize>(r & 0xFFFFFFFF));
  }

  /**
   * The conventional error text for a required key that is missing,
   * `<function>: config needs "<key>"`, or there with another type than
   * `want` (say "a number"): `<function>: config "<key>" must be a number,
   * not a string` — so an author who wrote `above: thirty` is told what is
   * wrong with it, not that it is missing. Return it from configure().
   */
  missing(key: string, want: string = ""): string {
    let k = this.kind(key);
    if (k == ValueKind.Missing) return this.__fn + ": config needs \"" + key + "\"";
    if (want == "") want = "of another type";
    return this.__fn + ": config \"" + key + "\" must be " + want + ", not " + this.__valueText(key, k);
  }

  /** @internal The value at `key` as an error names it, as the Go SDK does: `the string "x"`, `the number 3`. */
  __valueText(key: string, k: ValueKind): string {
    switch (k) {
      case ValueKind.String: {
        let s = this.str(key)!;
        let n = String.UTF8.byteLength(s);
        if (n > 40) return "a string of " + n.toString() + " bytes";
        return "the string \"" + s + "\"";
      }
      case ValueKind.Int: return "the number " + this.int(key).toString();
      case ValueKind.Float: return "a fractional number";
      case ValueKind.Bool: return this.bool(key) ? "true" : "false";
      case ValueKind.Null: return "null";
      case ValueKind.Object: return "an object";
      case ValueKind.Array: return "an array";
    }
    return "a value";
  }
}

/**
 * The event a condition or an action is called with, and the call's header:
 * which topic, rule, step and run it serves, the rule's repeat pass, the
 * event's time and the action's idempotency key.
 *
 * It also reads the run's context (ABI 1.3): `steps.<name>.<path>` is the
 * output of the earlier step called name, `vars.<name>` the rule's
 * variable; and since 1.4 `states.<name>.<path>` the entity's state the
 * rule reads as name, `previous.<path>` the trigger's entity's state before
 * it, `sun.elevation` the sun's. A path below "steps.", "vars.",
 * "states.", "previous." or "sun." is the
 * context's (missing when it lacks it, never the event's); every other
 * path, the bare "steps" included, is the event's.
 * Templates see them the same way.
 *
 * The object is reused from call to call: read what you need during the call.
 * The header's strings are decoded when first read (one allocation each).
 */
export class Event extends View {
  /** @internal start of the call input */
  __in: usize = 0;
  // @internal offsets (from __in) and lengths of topic, rule, step, run, key
  __to: u32 = 0; __tn: u32 = 0;
  __ro: u32 = 0; __rn: u32 = 0;
  __so: u32 = 0; __sn: u32 = 0;
  __uo: u32 = 0; __un: u32 = 0;
  __ko: u32 = 0; __kn: u32 = 0;

  /** The rule's repeat pass, from 0. */
  pass: u32 = 0;
  /**
   * This step's try, from 1: a step whose rule says `retry:` is called again
   * after a failure with the same `key` and the next attempt. 0 for a
   * condition, and from a host older than ABI 1.2.
   */
  attempt: u32 = 0;
  /** The event's time, unix nanoseconds. */
  time: i64 = 0;

  /** @internal Decodes the call input at `p`, `n` bytes; false when it does not decode. */
  __call(p: usize, n: usize): bool {
    this.__in = p;
    this.__count = 0;
    if (n < 16) return false;
    let h = <usize>load<u32>(p);
    if (h < 16 || h > n) return false;
    this.pass = load<u32>(p, 4);
    this.time = load<i64>(p, 8);
    let o: usize = 16;
    // five strings, each u16 length + bytes, all before h
    for (let i = 0; i < 5; i++) {
      if (<u64>o + 2 > <u64>h) return false;
      let l = <usize>load<u16>(p + o);
      o += 2;
      if (<u64>o + <u64>l > <u64>h) return false;
      let so = <u32>o, sl = <u32>l;
      if (i == 0) { this.__to = so; this.__tn = sl; }
      else if (i == 1) { this.__ro = so; this.__rn = sl; }
      else if (i == 2) { this.__so = so; this.__sn = sl; }
      else if (i == 3) { this.__uo = so; this.__un = sl; }
      else { this.__ko = so; this.__kn = sl; }
      o += l;
    }
    this.attempt = <u64>o + 4 <= <u64>h ? load<u32>(p + o) : 0;
    let ctx: usize = <u64>o + 8 <= <u64>h ? <usize>load<u32>(p + o + 4) : 0;
    if (!ctx) {
      let ok = this.__reset(p + h, n - h);
      this.__ev = true; // no context: steps. and vars. find nothing
      return ok;
    }
    if (ctx < h || ctx > n || !this.__reset(p + h, ctx - h)) return false;
    this.__ev = true;
    // The run's context (ABI 1.3): its own view after the event's.
    let cn = n - ctx;
    let cp = p + ctx;
    if (cn < HEADER || load<u16>(cp) != 0x5652 || load<u8>(cp, 2) != 1) return false;
    let count = load<u32>(cp, 4);
    if (<u64>count * ENTRY > <u64>(cn - HEADER)) return false;
    this.__cp = cp;
    this.__cn = cn;
    this.__cc = count;
    return true;
  }

  /** The event's topic. */
  get topic(): string { return decodeUTF8(this.__in + this.__to, this.__tn); }
  /** The rule's id. */
  get rule(): string { return decodeUTF8(this.__in + this.__ro, this.__rn); }
  /** The step's name ("" for a rule-level condition). */
  get step(): string { return decodeUTF8(this.__in + this.__so, this.__sn); }
  /** The run's execution id. */
  get run(): string { return decodeUTF8(this.__in + this.__uo, this.__un); }
  /**
   * The idempotency key of an action call: the same every time one step of
   * one pass of one run is delivered, different otherwise. Actions run at
   * least once; one with an effect outside ruled uses it to make a repeat
   * harmless.
   */
  get key(): string { return decodeUTF8(this.__in + this.__ko, this.__kn); }

  /** Whether the event's topic is `s`. Allocates nothing. */
  topicIs(s: string): bool {
    return equalsUTF8(s, this.__in + this.__to, this.__tn);
  }

  /**
   * The event's JSON, from the host (event_raw): events arrive as a view
   * only, so this is a host call and a copy. "" when the host refused.
   */
  raw(): string {
    return eventRaw();
  }

  /** raw() as bytes, exactly as the host has them; null when the host refused. */
  rawBytes(): ArrayBuffer | null {
    return eventRawBytes();
  }
}

