// Writing JSON without a JSON library.

/**
 * `s` as a JSON string literal, quotes included: `"`, `\\` and control
 * characters are escaped, everything else is kept as is.
 */
export function jsonString(s: string): string {
  let out = "\"";
  let start = 0;
  let n = s.length;
  for (let i = 0; i < n; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0x20 && c != 0x22 && c != 0x5C) continue;
    out += s.substring(start, i);
    start = i + 1;
    if (c == 0x22) out += "\\\"";
    else if (c == 0x5C) out += "\\\\";
    else if (c == 0x0A) out += "\\n";
    else if (c == 0x0D) out += "\\r";
    else if (c == 0x09) out += "\\t";
    else {
      let h = c.toString(16);
      out += "\\u00" + (h.length < 2 ? "0" + h : h);
    }
  }
  return out + s.substring(start) + "\"";
}

/** A finite number as JSON; "null" for NaN and the infinities, which JSON cannot write. */
export function jsonNumber(x: f64): string {
  if (!isFinite(x)) return "null";
  if (x == Math.trunc(x) && Math.abs(x) < 9007199254740992.0) return (<i64>x).toString();
  return x.toString();
}
