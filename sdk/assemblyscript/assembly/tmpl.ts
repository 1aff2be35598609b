// Templates: `{{path}}` placeholders in a step's config filled from the
// event, with the rules the first-party publish, log and fire plugins have
// always had, so that a rule reads the same whichever plugin it configures.
//
//   - In text (a topic, a message) a placeholder is replaced by the value's
//     text: a string as it is, anything else as its JSON. A missing path
//     leaves nothing.
//   - In a JSON template (a payload object) a string that is exactly one
//     placeholder, "{{battery}}", takes the value with its type (12.5, not
//     "12.5"; an object stays an object; missing is null). Placeholders in
//     longer strings splice text in, escaped for JSON.
//   - Object keys come out sorted, numbers as Go's strconv writes them, so the
//     output is byte for byte what the Go SDK's templates render.
//
// A template is compiled once, in configure(), and rendered per call: the
// segments are literal text and holes, and rendering looks each hole up in
// the event's view.

import { View, ValueKind, escapeKey } from "./view";
import { jsonString } from "./json";

class Segment {
  lit: string = "";
  path: string = "";
  hole: bool = false;
  /** a payload field that is exactly one placeholder: the value as JSON, with its type */
  typed: bool = false;
  /** the text lands inside a JSON string: escape it */
  quoted: bool = false;
}

/** A compiled template; see textTemplate() and jsonTemplate(). */
export class Template {
  segs: Segment[] = [];

  /** Renders the template with values from `ev` (an Event, or any view). */
  render(ev: View): string {
    let out = "";
    for (let i = 0, n = this.segs.length; i < n; i++) {
      let s = unchecked(this.segs[i]);
      if (!s.hole) {
        out += s.lit;
        continue;
      }
      let k = ev.kind(s.path);
      if (s.typed) {
        out += k == ValueKind.Missing ? "null" : valueJSON(ev, s.path, k);
        continue;
      }
      if (k == ValueKind.Missing) continue;
      let text = k == ValueKind.String ? ev.str(s.path)! : valueJSON(ev, s.path, k);
      out += s.quoted ? inner(text) : text;
    }
    return out;
  }

  /** Whether the template has no placeholder: render() always gives the same text. */
  get constant(): bool {
    for (let i = 0, n = this.segs.length; i < n; i++) {
      if (unchecked(this.segs[i]).hole) return false;
    }
    return true;
  }

  /** @internal */
  __lit(s: string): void {
    let n = this.segs.length;
    if (n > 0 && !this.segs[n - 1].hole) {
      this.segs[n - 1].lit += s;
      return;
    }
    let seg = new Segment();
    seg.lit = s;
    this.segs.push(seg);
  }

  /** @internal */
  __hole(path: string, typed: bool, quoted: bool): void {
    let seg = new Segment();
    seg.path = path.trim();
    seg.hole = true;
    seg.typed = typed;
    seg.quoted = quoted;
    this.segs.push(seg);
  }

  /** @internal Adds text with placeholders; the error's text, or null. */
  __text(s: string, quoted: bool): string | null {
    while (true) {
      let i = s.indexOf("{{");
      if (i < 0) {
        this.__lit(quoted ? inner(s) : s);
        return null;
      }
      let j = s.indexOf("}}", i);
      if (j < 0) return "unclosed {{ in " + jsonString(s);
      this.__lit(quoted ? inner(s.substring(0, i)) : s.substring(0, i));
      this.__hole(s.substring(i + 2, j), false, quoted);
      s = s.substring(j + 2);
    }
  }

  /** @internal Adds the JSON value at `path` of `v` (a config) as a template. */
  __json(v: View, path: string): string | null {
    let k = v.kind(path);
    let prefix = path.length ? path + "." : "";
    if (k == ValueKind.Object) {
      let keys = v.keys(path);
      this.__lit("{");
      for (let i = 0, n = keys.length; i < n; i++) {
        if (i) this.__lit(",");
        this.__lit(jsonString(keys[i]) + ":");
        let err = this.__json(v, prefix + escapeKey(keys[i]));
        if (err !== null) return err;
      }
      this.__lit("}");
      return null;
    }
    if (k == ValueKind.Array) {
      let n = v.count(path);
      this.__lit("[");
      for (let i = 0; i < n; i++) {
        if (i) this.__lit(",");
        let err = this.__json(v, prefix + i.toString());
        if (err !== null) return err;
      }
      this.__lit("]");
      return null;
    }
    if (k == ValueKind.String) {
      let x = v.str(path)!;
      if (x.startsWith("{{") && x.endsWith("}}") && x.indexOf("{{", 2) < 0 && x.length >= 4) {
        this.__hole(x.substring(2, x.length - 2), true, false);
        return null;
      }
      this.__lit("\"");
      let err = this.__text(x, true);
      if (err !== null) return err;
      this.__lit("\"");
      return null;
    }
    this.__lit(valueJSON(v, path, k));
    return null;
  }
}

/** The reason the last textTemplate() or jsonTemplate() answered null. */
export let templateError: string = "";

/**
 * Compiles text such as "battery {{battery}}% on {{vehicle}}"; null when it
 * does not compile (an unclosed "{{"), with the reason in templateError.
 */
export function textTemplate(s: string): Template | null {
  let t = new Template();
  let err = t.__text(s, false);
  if (err !== null) {
    templateError = err;
    return null;
  }
  return t;
}

/**
 * Compiles the JSON value at `path` of a config (the step's `with:`) into a
 * template that renders JSON; null when a string in it does not compile,
 * with the reason in templateError.
 */
export function jsonTemplate(cfg: View, path: string): Template | null {
  let t = new Template();
  let err = t.__json(cfg, path);
  if (err !== null) {
    templateError = err;
    return null;
  }
  return t;
}

// `s` escaped for the inside of a JSON string (jsonString without its quotes).
function inner(s: string): string {
  let q = jsonString(s);
  return q.substring(1, q.length - 1);
}

/** The value at `path` of `v` as JSON: objects with sorted keys, numbers as Go writes them. */
export function valueJSON(v: View, path: string, k: ValueKind): string {
  switch (k) {
    case ValueKind.Null: return "null";
    case ValueKind.Bool: return v.bool(path) ? "true" : "false";
    case ValueKind.Int: return v.int(path).toString();
    case ValueKind.Float: return goFloat(v.float(path));
    case ValueKind.String: return jsonString(v.str(path)!);
    case ValueKind.Object: {
      v = v.__home(path);
      let keys = v.keys(path);
      let prefix = path.length ? path + "." : "";
      let out = "{";
      for (let i = 0, n = keys.length; i < n; i++) {
        if (i) out += ",";
        let p = prefix + escapeKey(keys[i]);
        out += jsonString(keys[i]) + ":" + valueJSON(v, p, v.kind(p));
      }
      return out + "}";
    }
    case ValueKind.Array: {
      v = v.__home(path);
      let n = v.count(path);
      let prefix = path.length ? path + "." : "";
      let out = "[";
      for (let i = 0; i < n; i++) {
        if (i) out += ",";
        let p = prefix + i.toString();
        out += valueJSON(v, p, v.kind(p));
      }
      return out + "]";
    }
  }
  return "null";
}

// The shortest digits of a finite, non-zero |x| (no leading or trailing
// zeros) and the position of the decimal point: x = 0.DIGITS × 10^dp.
class Decimal {
  digits: string = "";
  dp: i32 = 0;
  neg: bool = false;
}

function decimal(x: f64): Decimal {
  let d = new Decimal();
  // The runtime's own formatting (Grisu2): digits that read back as x.
  let s = x.toString();
  d.neg = s.startsWith("-");
  if (d.neg) s = s.substring(1);
  let e = s.indexOf("e");
  let exp10 = 0;
  let mant = s;
  if (e >= 0) {
    exp10 = I32.parseInt(s.substring(e + 1));
    mant = s.substring(0, e);
  }
  let dot = mant.indexOf(".");
  let digits = dot < 0 ? mant : mant.substring(0, dot) + mant.substring(dot + 1);
  let dp = (dot < 0 ? mant.length : dot) + exp10;
  let z = 0; // leading zeros (0.00012) move the point
  while (z < digits.length - 1 && digits.charCodeAt(z) == 0x30) z++;
  digits = digits.substring(z);
  dp -= z;
  let t = digits.length; // trailing zeros carry no digit
  while (t > 1 && digits.charCodeAt(t - 1) == 0x30) t--;
  d.digits = digits.substring(0, t);
  d.dp = dp;
  return d;
}

function fixed(d: Decimal): string {
  let out = d.neg ? "-" : "";
  let digits = d.digits, dp = d.dp;
  if (dp <= 0) return out + "0." + "0".repeat(-dp) + digits;
  if (dp >= digits.length) return out + digits + "0".repeat(dp - digits.length);
  return out + digits.substring(0, dp) + "." + digits.substring(dp);
}

/**
 * A float as the Go SDK's templates write it: a whole number below 1e15 in
 * plain digits, anything else as strconv.FormatFloat(x, 'g', -1, 64) does
 * (an exponent of two digits or more when the decimal exponent is below -4
 * or at least 6: 1.2345675e+06, 1e-05); NaN and the infinities, which JSON
 * cannot write, as null. The digits are the runtime's (Grisu2): they read
 * back as the same float, and in rare cases their last digit is not the one
 * Go's shortest formatting picks.
 */
export function goFloat(x: f64): string {
  if (!isFinite(x)) return "null";
  if (x == Math.trunc(x) && Math.abs(x) < 1e15) {
    if (x == 0) return "0";
    return (<i64>x).toString();
  }
  let d = decimal(x);
  let x10 = d.dp - 1;
  if (x10 >= -4 && x10 < 6) return fixed(d);
  let out = d.neg ? "-" : "";
  out += d.digits.substring(0, 1);
  if (d.digits.length > 1) out += "." + d.digits.substring(1);
  out += x10 < 0 ? "e-" : "e+";
  let a = x10 < 0 ? -x10 : x10;
  return out + (a < 10 ? "0" + a.toString() : a.toString());
}

/**
 * A float in plain digits, never an exponent, as Go's
 * strconv.FormatFloat(x, 'f', -1, 64) writes it: 12, 12.5, 0.0001,
 * 1000000000000000000000. "NaN", "+Inf" and "-Inf" as Go writes them.
 */
export function floatText(x: f64): string {
  if (isNaN(x)) return "NaN";
  if (!isFinite(x)) return x > 0 ? "+Inf" : "-Inf";
  if (x == 0) return (1 / x) < 0 ? "-0" : "0";
  if (x == Math.trunc(x) && Math.abs(x) < 1e15) return (<i64>x).toString();
  return fixed(decimal(x));
}
