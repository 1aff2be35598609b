// The first-party plugin for conditions written as expressions: the
// subset of expr-lang (https://expr-lang.org) that rule conditions use,
// evaluated in AssemblyScript. A rule's string when: is evaluated by the
// host itself (host/exprcheck/eval.go, a port of this file, held to it by
// plugins/expr_test.go); this plugin serves {do: expr.expr, with: {expr}}. The Go build of expr-lang it replaces was a
// 7 MB module that compiled for seconds and held tens of MB per instance.
//
// Condition `expr`, config:
//
//   expr: a boolean expression over the event's fields, such as
//         `battery < 20 && vehicle startsWith "s-"` (required)
//
// The subset (host/exprcheck holds rules to it at lint and load, typed as
// expr-lang's checker types it, and refuses anything else with its
// position):
//
//   literals     1  2.5  1e3  "text" 'text' `raw`  true false nil  [1, "a"]
//   fields       battery  pos.lat  tags[0]  tags[-1]  pos["lat"]  a?.b  $env.type
//   operators    ! not - (unary)   * / %   + -   == != < <= > >=
//                in, not in, contains, startsWith, endsWith (and their not …)
//                && and   || or   ??   c ? a : b
//   functions    len(x) lower(s) upper(s) trim(s)
//
// A step's condition also sees its run's context: `steps.ask.slot` is the
// output of the earlier step named ask, `vars.limit` a variable of the
// rule, `states.door.open` the state the rule reads as door, and
// `previous.open` the trigger's entity's state before it, `sun.elevation`
// the sun's (ABI 1.4). A chain of names below steps, vars, states,
// previous or sun is read from the run's context whole, nil when it
// lacks it, never from the event (abi/ABI.md §4.1); anything else is the
// event's.
//
// Values and errors are expr-lang's: an event's numbers are int64 or
// float64, a missing field is nil, `/` is always a float, `%` takes ints,
// comparing or adding mismatched types is an error, `.` on nil is an error
// (`?.` gives nil), `x in ["a","b"]` wants a string, == compares arrays
// element by element and objects as reflect.DeepEqual does (an int and a
// float inside them differ). `//` and `/* */` are comments.
// plugins/expr_test.go runs random expressions of the subset over
// random events here and through expr-lang natively and wants the same
// answers, errors included.
//
// The expression is parsed once per config into a tree; a call walks it,
// reading fields from the event's view without decoding the event.

import {
  Condition, Config, Event, View, ValueKind, compareCodePoints, condition, escapeKey, fail, plugin,
} from "../../sdk/assemblyscript/assembly";

export * from "../../sdk/assemblyscript/assembly/exports";

plugin("expr", "2.0.0");

// ---- values

const NIL: u8 = 0, BOOL: u8 = 1, INT: u8 = 2, FLOAT: u8 = 3, STR: u8 = 4;
// ARR is an array literal; VARR and VMAP are an array and an object in the
// event, named by their path in its view.
const ARR: u8 = 5, VARR: u8 = 6, VMAP: u8 = 7;

class V {
  k: u8 = NIL;
  b: bool = false;
  i: i64 = 0;
  f: f64 = 0;
  s: string = "";
  /** an int literal (Go's int) rather than an event's number (int64): DeepEqual tells them apart */
  lit: bool = false;
  /** a string's byte (s[0]): Go's uint8, which - negates modulo 256 */
  byte: bool = false;
  arr: V[] | null = null;
  path: string = "";
}

const theNil = new V();
const theTrue = boolV(true);
const theFalse = boolV(false);

function boolV(b: bool): V {
  let v = new V();
  v.k = BOOL;
  v.b = b;
  return v;
}
function intV(i: i64, lit: bool): V {
  let v = new V();
  v.k = INT;
  v.i = i;
  v.lit = lit;
  return v;
}
function floatV(f: f64): V {
  let v = new V();
  v.k = FLOAT;
  v.f = f;
  return v;
}
function strV(s: string): V {
  let v = new V();
  v.k = STR;
  v.s = s;
  return v;
}

// The value at `path` of the event's view.
function fromView(ev: View, path: string): V {
  switch (ev.kind(path)) {
    case ValueKind.Bool: return ev.bool(path) ? theTrue : theFalse;
    case ValueKind.Int: return intV(ev.int(path), false);
    case ValueKind.Float: return floatV(ev.float(path));
    case ValueKind.String: return strV(ev.str(path)!);
    case ValueKind.Object: { let v = new V(); v.k = VMAP; v.path = path; return v; }
    case ValueKind.Array: { let v = new V(); v.k = VARR; v.path = path; return v; }
  }
  return theNil;
}

function child(path: string, step: string): string {
  return path.length ? path + "." + step : step;
}

// A value's type as an error names it.
function typeName(v: V): string {
  switch (v.k) {
    case NIL: return "nil";
    case BOOL: return "a bool";
    case INT: return v.byte ? "a byte" : "an int";
    case FLOAT: return "a float";
    case STR: return "a string";
    case VMAP: return "an object";
  }
  return "an array";
}

// ---- the tree

const N_LIT: u8 = 0, N_FIELD: u8 = 1, N_ENV: u8 = 2, N_MEMBER: u8 = 3, N_UNARY: u8 = 4,
  N_BINARY: u8 = 5, N_COND: u8 = 6, N_ARRAY: u8 = 7, N_CALL: u8 = 8, N_CHAIN: u8 = 9;

class Node {
  t: u8 = N_LIT;
  op: string = "";
  val: V = theNil;
  a: Node | null = null;
  b: Node | null = null;
  c: Node | null = null;
  list: Node[] = [];
  optional: bool = false;
  /**
   * a member chain of names and literal indexes rooted at steps, vars,
   * states or previous
   * (steps.ask.slot): its whole path, looked up first as a whole, since the
   * run's context holds it (a step's output, a variable) though the event
   * has no steps or vars field to walk down from
   */
  ctx: string = "";
}

// The context path of member `key` of `base`, or "".
function ctxPath(base: Node, key: string): string {
  if (base.t == N_FIELD && (base.op == "steps" || base.op == "vars" || base.op == "states" || base.op == "previous" || base.op == "sun")) {
    return base.op + "." + key;
  }
  if (base.t == N_MEMBER && base.ctx.length) return base.ctx + "." + key;
  return "";
}

function node(t: u8, op: string, a: Node | null, b: Node | null): Node {
  let n = new Node();
  n.t = t;
  n.op = op;
  n.a = a;
  n.b = b;
  return n;
}

// ---- lexer

const T_EOF: u8 = 0, T_NUM: u8 = 1, T_STR: u8 = 2, T_IDENT: u8 = 3, T_OP: u8 = 4;

class Token {
  t: u8 = T_EOF;
  s: string = "";
  pos: i32 = 0;
}

const wordOps = ["and", "or", "not", "in", "contains", "startsWith", "endsWith", "matches", "let", "if", "else"];
const ops3 = ["..."];
const ops2 = ["==", "!=", "<=", ">=", "&&", "||", "??", "?.", "**", "..", "::"];
const ops1 = "!<>+-*/%?:.,()[]{}|#^=;";

function isDigit(c: i32): bool { return c >= 0x30 && c <= 0x39; }
function isIdentStart(c: i32): bool {
  return (c >= 0x61 && c <= 0x7A) || (c >= 0x41 && c <= 0x5A) || c == 0x5F || c == 0x24 || c >= 0x80;
}
function isIdent(c: i32): bool { return isIdentStart(c) || isDigit(c); }

let lexError: string = "";

function lex(src: string): Token[] | null {
  let out = new Array<Token>();
  let i = 0, n = src.length;
  while (i < n) {
    let c = src.charCodeAt(i);
    if (c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D) { i++; continue; }
    if (c == 0x2F && i + 1 < n && src.charCodeAt(i + 1) == 0x2F) { // a // comment, to the line's end
      while (i < n && src.charCodeAt(i) != 0x0A) i++;
      continue;
    }
    if (c == 0x2F && i + 1 < n && src.charCodeAt(i + 1) == 0x2A) { // a /* comment */
      let j = src.indexOf("*/", i + 2);
      if (j < 0) { lexError = "unclosed comment"; return null; }
      i = j + 2;
      continue;
    }
    let tok = new Token();
    tok.pos = i;
    if (isDigit(c) || (c == 0x2E && i + 1 < n && isDigit(src.charCodeAt(i + 1)))) {
      let j = i;
      while (j < n && (isDigit(src.charCodeAt(j)) || src.charCodeAt(j) == 0x5F)) j++;
      if (j + 1 < n && src.charCodeAt(j) == 0x2E && isDigit(src.charCodeAt(j + 1))) {
        j++;
        while (j < n && (isDigit(src.charCodeAt(j)) || src.charCodeAt(j) == 0x5F)) j++;
      } else if (j < n && src.charCodeAt(j) == 0x2E && !(j + 1 < n && src.charCodeAt(j + 1) == 0x2E)) {
        j++; // "1." is a float
      }
      if (j < n && (src.charCodeAt(j) | 0x20) == 0x65) { // e
        let k = j + 1;
        if (k < n && (src.charCodeAt(k) == 0x2B || src.charCodeAt(k) == 0x2D)) k++;
        if (k < n && isDigit(src.charCodeAt(k))) {
          j = k;
          while (j < n && isDigit(src.charCodeAt(j))) j++;
        }
      }
      if (j < n && isIdent(src.charCodeAt(j))) {
        lexError = "a number in this form is outside the subset (decimal only)";
        return null;
      }
      tok.t = T_NUM;
      tok.s = src.substring(i, j);
      i = j;
    } else if (c == 0x22 || c == 0x27) {
      let r = unquote(src, i);
      if (r === null) return null;
      tok.t = T_STR;
      tok.s = r;
      i = unquoteEnd;
    } else if (c == 0x60) {
      let j = src.indexOf("`", i + 1);
      if (j < 0) { lexError = "literal not terminated"; return null; }
      tok.t = T_STR;
      tok.s = src.substring(i + 1, j);
      i = j + 1;
    } else if (isIdentStart(c)) {
      let j = i + 1;
      while (j < n && isIdent(src.charCodeAt(j))) j++;
      tok.s = src.substring(i, j);
      tok.t = wordOps.includes(tok.s) ? T_OP : T_IDENT;
      i = j;
    } else {
      tok.t = T_OP;
      let three = src.substring(i, i + 3), two = src.substring(i, i + 2);
      if (ops3.includes(three)) tok.s = three;
      else if (ops2.includes(two)) tok.s = two;
      else if (ops1.includes(String.fromCharCode(c))) tok.s = String.fromCharCode(c);
      else { lexError = "unrecognized character " + String.fromCharCode(c); return null; }
      i += tok.s.length;
    }
    out.push(tok);
  }
  let eof = new Token();
  eof.pos = n;
  out.push(eof);
  return out;
}

let unquoteEnd: i32 = 0;

function hexDigit(c: i32): i32 {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  c |= 0x20;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  return -1;
}

// Go's escapes, as expr-lang's lexer takes them.
function unquote(src: string, start: i32): string | null {
  let q = src.charCodeAt(start);
  let out = "";
  let i = start + 1, n = src.length;
  while (i < n) {
    let c = src.charCodeAt(i);
    if (c == q) { unquoteEnd = i + 1; return out; }
    if (c == 0x0A) break;
    if (c != 0x5C) { out += String.fromCharCode(c); i++; continue; }
    i++;
    if (i >= n) break;
    let e = src.charCodeAt(i);
    i++;
    switch (e) {
      case 0x61: out += "\x07"; break; // a
      case 0x62: out += "\x08"; break; // b
      case 0x66: out += "\x0C"; break; // f
      case 0x6E: out += "\n"; break;
      case 0x72: out += "\r"; break;
      case 0x74: out += "\t"; break;
      case 0x76: out += "\x0B"; break;
      case 0x5C: out += "\\"; break;
      case 0x22: case 0x27:
        if (e != q) { lexError = "invalid char escape"; return null; } // Go's rule
        out += String.fromCharCode(e);
        break;
      case 0x78: case 0x75: case 0x55: { // x, u, U
        let len = e == 0x78 ? 2 : (e == 0x75 ? 4 : 8);
        let cp = 0;
        for (let k = 0; k < len; k++) {
          let d = i + k < n ? hexDigit(src.charCodeAt(i + k)) : -1;
          if (d < 0) { lexError = "invalid char escape"; return null; }
          cp = cp * 16 + d;
        }
        i += len;
        if (e == 0x78) {
          // \xHH is a byte; outside ASCII it would make invalid UTF-8.
          if (cp >= 0x80) { lexError = "a \\x escape above 7f is outside the subset"; return null; }
          out += String.fromCharCode(cp);
        } else {
          if (cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) { lexError = "invalid char escape"; return null; }
          out += String.fromCodePoint(cp);
        }
        break;
      }
      default:
        if (e >= 0x30 && e <= 0x37) { // \ooo
          let cp = e - 0x30;
          for (let k = 0; k < 2; k++) {
            let d = i < n ? src.charCodeAt(i) - 0x30 : -1;
            if (d < 0 || d > 7) { lexError = "invalid char escape"; return null; }
            cp = cp * 8 + d;
            i++;
          }
          if (cp >= 0x80) { lexError = "an octal escape above 177 is outside the subset"; return null; }
          out += String.fromCharCode(cp);
          break;
        }
        lexError = "invalid char escape";
        return null;
    }
  }
  lexError = "literal not terminated";
  return null;
}

// ---- parser: expr-lang's precedence climbing, for the subset

class Parser {
  toks: Token[] = [];
  i: i32 = 0;
  err: string = "";
  /** how deeply expression() recurses: parentheses, unary operators, arrays, calls, ternaries */
  nesting: i32 = 0;

  get cur(): Token { return unchecked(this.toks[this.i]); }
  next(): void { if (this.i < this.toks.length - 1) this.i++; }
  is(t: u8, s: string): bool { let c = this.cur; return c.t == t && c.s == s; }

  fail(msg: string): Node {
    if (this.err.length == 0) this.err = msg + " (at " + (this.cur.pos + 1).toString() + ")";
    return new Node();
  }

  expect(t: u8, s: string): void {
    if (this.is(t, s)) this.next();
    else this.fail("unexpected token " + this.describe() + ", want " + s);
  }

  describe(): string {
    let c = this.cur;
    return c.t == T_EOF ? "end of expression" : "\"" + c.s + "\"";
  }

  expression(prec: i32): Node {
    if (this.err.length) return new Node();
    if (this.nesting >= 64) return this.fail("the expression nests deeper than 64");
    this.nesting++;
    let n = this.expression_(prec);
    this.nesting--;
    return n;
  }

  expression_(prec: i32): Node {
    let left = this.primary();
    let prevOp = "";
    while (this.cur.t == T_OP && this.err.length == 0) {
      let opTok = this.cur;
      let negate = false;
      if (opTok.s == "not") {
        let save = this.i;
        this.next();
        let s = this.cur.s;
        if (this.cur.t == T_OP && (s == "in" || s == "contains" || s == "startsWith" || s == "endsWith" || s == "matches")) {
          if (binaryPrec(s) >= prec) {
            negate = true;
            opTok = this.cur;
          } else {
            this.i = save;
            break;
          }
        } else {
          return this.fail("unexpected token " + this.describe());
        }
      }
      let p = binaryPrec(opTok.s);
      if (p < 0 || p < prec) break;
      this.next();
      if (prevOp == "??" && opTok.s != "??") {
        return this.fail("operator (" + opTok.s + ") and coalesce expressions (??) cannot be mixed");
      }
      if (opTok.s == "matches" || opTok.s == "..") return this.fail("\"" + opTok.s + "\" is outside the subset");
      if (opTok.s == "<" || opTok.s == ">" || opTok.s == "<=" || opTok.s == ">=") {
        left = this.comparison(left, opTok.s, p);
      } else {
        let right = this.expression(p + 1);
        left = node(N_BINARY, opTok.s, left, right);
        if (negate) left = node(N_UNARY, "!", left, null);
      }
      prevOp = opTok.s;
    }
    if (prec == 0) left = this.conditional(left);
    return left;
  }

  // a < b < c is (a < b) && (b < c), as expr-lang parses it.
  comparison(left: Node, op: string, prec: i32): Node {
    let root: Node | null = null;
    while (true) {
      let right = this.expression(prec + 1);
      let cmp = node(N_BINARY, op, left, right);
      root = root === null ? cmp : node(N_BINARY, "&&", root, cmp);
      left = right;
      let c = this.cur;
      if (!(c.t == T_OP && (c.s == "<" || c.s == ">" || c.s == "<=" || c.s == ">=") && this.err.length == 0)) break;
      op = c.s;
      this.next();
    }
    return root!;
  }

  conditional(n: Node): Node {
    while (this.is(T_OP, "?")) {
      this.next();
      if (this.is(T_OP, ":")) return this.fail("the ?: shorthand is outside the subset");
      let a = this.expression(0);
      this.expect(T_OP, ":");
      let b = this.expression(0);
      let c = node(N_COND, "", a, b);
      c.c = n;
      n = c;
    }
    return n;
  }

  primary(): Node {
    let t = this.cur;
    if (t.t == T_OP && (t.s == "!" || t.s == "not" || t.s == "-" || t.s == "+")) {
      this.next();
      let inner = this.expression(t.s == "-" || t.s == "+" ? 90 : 50);
      return this.postfix(node(N_UNARY, t.s == "not" ? "!" : t.s, inner, null));
    }
    if (this.is(T_OP, "(")) {
      this.next();
      let e = this.expression(0);
      this.expect(T_OP, ")");
      return this.postfix(e);
    }
    return this.secondary();
  }

  secondary(): Node {
    let t = this.cur;
    let n: Node;
    if (t.t == T_IDENT) {
      this.next();
      if (t.s == "true" || t.s == "false") {
        n = new Node();
        n.val = t.s == "true" ? theTrue : theFalse;
        return n;
      }
      if (t.s == "nil") return new Node();
      if (this.is(T_OP, "(")) {
        n = this.call(t.s);
      } else if (t.s == "$env") {
        n = node(N_ENV, "", null, null);
      } else if (builtins.includes(t.s)) {
        return this.fail(t.s + " is a function of expr-lang: write $env." + t.s + " for a field of that name");
      } else {
        n = node(N_FIELD, t.s, null, null);
        n.val = strV(t.s);
      }
    } else if (t.t == T_NUM) {
      this.next();
      n = new Node();
      let s = t.s.replaceAll("_", "");
      if (s.includes(".") || s.includes("e") || s.includes("E")) {
        n.val = floatV(parseFloat(s));
      } else {
        if (s.length > 19 || (s.length == 19 && s > "9223372036854775807")) return this.fail("invalid integer literal: value out of range");
        n.val = intV(I64.parseInt(s), true);
      }
    } else if (t.t == T_STR) {
      this.next();
      n = new Node();
      n.val = strV(t.s);
    } else if (this.is(T_OP, "[")) {
      this.next();
      n = node(N_ARRAY, "", null, null);
      while (!this.is(T_OP, "]") && this.err.length == 0) {
        if (n.list.length) {
          this.expect(T_OP, ",");
          if (this.is(T_OP, "]")) break;
        }
        n.list.push(this.expression(0));
      }
      this.expect(T_OP, "]");
    } else {
      return this.fail("unexpected token " + this.describe());
    }
    return this.postfix(n);
  }

  call(name: string): Node {
    if (!(name == "len" || name == "lower" || name == "upper" || name == "trim")) {
      return this.fail(name + "() is outside the subset (len, lower, upper, trim)");
    }
    this.expect(T_OP, "(");
    let n = node(N_CALL, name, null, null);
    while (!this.is(T_OP, ")") && this.err.length == 0) {
      if (n.list.length) this.expect(T_OP, ",");
      n.list.push(this.expression(0));
    }
    this.expect(T_OP, ")");
    if (n.list.length != 1) return this.fail(name + "() takes one argument");
    return n;
  }

  // Postfix members and indexes, chained as expr-lang chains them: a `.b`
  // after a chain (anything after a `?.`) continues it, so `a?.b.c` is nil
  // when a is; an index ends it, so `a?.b[0]` fetches 0 from nil.
  postfix(n: Node): Node {
    while (this.cur.t == T_OP && this.err.length == 0) {
      let s = this.cur.s;
      if (s == "." || s == "?.") {
        let optional = s == "?.";
        this.next();
        if (optional && this.is(T_OP, "[")) return this.fail("?.[ is outside the subset");
        let p = this.cur;
        if (p.t != T_IDENT && !(p.t == T_OP && isWord(p.s))) return this.fail("expected name");
        this.next();
        if (this.is(T_OP, "(")) return this.fail("methods are outside the subset");
        let isChain = n.t == N_CHAIN;
        let m = node(N_MEMBER, "", isChain ? n.a : n, null);
        m.val = strV(p.s);
        m.optional = optional;
        m.ctx = ctxPath(m.a!, escapeKey(p.s));
        n = isChain || optional ? node(N_CHAIN, "", m, null) : m;
      } else if (s == "[") {
        this.next();
        let idx = this.expression(0);
        this.expect(T_OP, "]");
        if (!(idx.t == N_LIT && (idx.val.k == STR || idx.val.k == INT)) && !isNegInt(idx)) {
          return this.fail("an index other than a string or an integer literal is outside the subset");
        }
        let m = node(N_MEMBER, "", n, idx);
        m.val = idx.t == N_LIT ? idx.val : intV(-idx.a!.val.i, true);
        if (m.val.k == STR) m.ctx = ctxPath(n, escapeKey(m.val.s));
        else if (m.val.i >= 0) m.ctx = ctxPath(n, m.val.i.toString());
        n = m;
      } else {
        break;
      }
    }
    return n;
  }
}

function isNegInt(n: Node): bool {
  return n.t == N_UNARY && n.op == "-" && n.a!.t == N_LIT && n.a!.val.k == INT;
}

function isWord(s: string): bool {
  if (s.length == 0 || !isIdentStart(s.charCodeAt(0))) return false;
  for (let i = 1; i < s.length; i++) if (!isIdent(s.charCodeAt(i))) return false;
  return true;
}

// expr-lang's builtin functions (v1.17.8): as a bare name each is the
// function, not a field, so the subset refuses it as a field name.
const builtins = [
  "all", "none", "any", "one", "filter", "map", "find", "findIndex", "findLast", "findLastIndex", "count",
  "sum", "groupBy", "sortBy", "reduce", "len", "type", "abs", "ceil", "floor", "round", "int", "float",
  "string", "trim", "trimPrefix", "trimSuffix", "upper", "lower", "split", "splitAfter", "replace",
  "repeat", "join", "indexOf", "lastIndexOf", "hasPrefix", "hasSuffix", "max", "min", "mean", "median",
  "toJSON", "fromJSON", "toBase64", "fromBase64", "now", "duration", "date", "timezone", "first", "last",
  "get", "take", "keys", "values", "toPairs", "fromPairs", "reverse", "uniq", "concat", "flatten", "sort",
  "bitand", "bitor", "bitxor", "bitnand", "bitshl", "bitshr", "bitushr", "bitnot",
];

function binaryPrec(op: string): i32 {
  if (op == "or" || op == "||") return 10;
  if (op == "and" || op == "&&") return 15;
  if (op == "==" || op == "!=" || op == "<" || op == ">" || op == "<=" || op == ">=" || op == "in" ||
    op == "matches" || op == "contains" || op == "startsWith" || op == "endsWith") return 20;
  if (op == "..") return 25;
  if (op == "+" || op == "-") return 30;
  if (op == "*" || op == "/" || op == "%") return 60;
  if (op == "??") return 500;
  return -1;
}

// ---- evaluation

// The first error of a call; evaluation stops at it.
let evalError: string = "";

function err(msg: string): V {
  if (evalError.length == 0) evalError = msg;
  return theNil;
}

function isNum(v: V): bool { return v.k == INT || v.k == FLOAT; }
function num(v: V): f64 { return v.k == INT ? <f64>v.i : v.f; }

class Eval {
  ev: View;
  constructor(ev: View) { this.ev = ev; }

  run(n: Node): V {
    if (evalError.length) return theNil;
    switch (n.t) {
      case N_LIT: return n.val;
      case N_FIELD: return fromView(this.ev, escapeKey(n.op));
      case N_ENV: { let v = new V(); v.k = VMAP; v.path = ""; return v; }
      case N_CHAIN: {
        let v = this.run(n.a!);
        if (chainNil) { chainNil = false; return theNil; }
        return v;
      }
      case N_MEMBER: return this.member(n);
      case N_UNARY: return this.unary(n);
      case N_BINARY: return this.binary(n);
      case N_COND: {
        let c = this.run(n.c!);
        if (c.k != BOOL) return err("the condition of ?: is " + typeName(c) + ", not a bool");
        return c.b ? this.run(n.a!) : this.run(n.b!);
      }
      case N_ARRAY: {
        let v = new V();
        v.k = ARR;
        let a = new Array<V>();
        for (let i = 0; i < n.list.length; i++) a.push(this.run(n.list[i]));
        v.arr = a;
        return v;
      }
      case N_CALL: return this.call(n.op, this.run(n.list[0]));
    }
    return err("unknown node");
  }

  member(n: Node): V {
    // steps.x.y, vars.x, states.x.y and previous.y are the run's
    // context's, whole, or nil: never walked down from an event's own field.
    if (n.ctx.length) return fromView(this.ev, n.ctx);
    let from = this.run(n.a!);
    if (evalError.length || chainNil) return theNil;
    let key = n.val;
    if (from.k == NIL) {
      if (n.optional) { chainNil = true; return theNil; }
      return err("cannot read " + (key.k == STR ? "." + key.s : "[" + key.i.toString() + "]") + " of nil (a?.b reads nil as nil)");
    }
    if (from.k == VMAP) {
      if (key.k != STR) return err("an object's member is named by a string, not an int");
      return fromView(this.ev, child(from.path, escapeKey(key.s)));
    }
    if (from.k == VARR || from.k == ARR || from.k == STR) {
      if (key.k != INT) return err("cannot read ." + key.s + " of " + typeName(from) + " (an index is an int)");
      let l: i64 = from.k == VARR ? <i64>this.ev.count(from.path) :
        (from.k == ARR ? <i64>from.arr!.length : <i64>String.UTF8.byteLength(from.s));
      let i = key.i;
      if (i < 0) i += l;
      if (i < 0 || i >= l) return err("index out of range: " + i.toString() + " (array length is " + l.toString() + ")");
      if (from.k == VARR) return fromView(this.ev, child(from.path, i.toString()));
      if (from.k == ARR) return from.arr![<i32>i];
      let bytes = Uint8Array.wrap(String.UTF8.encode(from.s));
      let b = intV(bytes[<i32>i], false);
      b.byte = true;
      return b;
    }
    return err("cannot read " + (key.k == STR ? "." + key.s : "[" + key.i.toString() + "]") + " of " + typeName(from));
  }

  unary(n: Node): V {
    let v = this.run(n.a!);
    if (evalError.length) return theNil;
    if (n.op == "+") return v; // expr-lang compiles unary + to nothing
    if (n.op == "!") {
      if (v.k != BOOL) return err("! wants a bool, not " + typeName(v));
      return v.b ? theFalse : theTrue;
    }
    if (v.k == INT && v.byte) {
      let b = intV((-v.i) & 0xFF, false);
      b.byte = true;
      return b;
    }
    if (v.k == INT) return n.op == "-" ? intV(-v.i, v.lit) : v;
    if (v.k == FLOAT) return n.op == "-" ? floatV(-v.f) : v;
    return err("- wants a number, not " + typeName(v));
  }

  binary(n: Node): V {
    let op = n.op;
    if (op == "&&" || op == "and" || op == "||" || op == "or") {
      // ((a && b) && c): a, then each right operand while the value so far
      // is true (&&) or false (||); the last one's value is the result.
      let and = op == "&&" || op == "and";
      let sp = spine(n, and);
      let v = this.run(sp[sp.length - 1].a!);
      for (let i = sp.length - 1; i >= 0; i--) {
        if (evalError.length) return theNil;
        if (v.k != BOOL) return err(sp[i].op + " wants bools, not " + typeName(v));
        if (and != v.b) return v;
        v = this.run(sp[i].b!);
      }
      return v;
    }
    if (op == "??") {
      let l = this.run(n.a!);
      if (evalError.length) return theNil;
      return l.k != NIL ? l : this.run(n.b!);
    }
    let l = this.run(n.a!);
    let r = this.run(n.b!);
    if (evalError.length) return theNil;
    if (op == "==") return equal(this.ev, l, r) ? theTrue : theFalse;
    if (op == "!=") return equal(this.ev, l, r) ? theFalse : theTrue;
    if (op == "<" || op == ">" || op == "<=" || op == ">=") {
      let c: i32 = 0;
      if (isNum(l) && isNum(r)) {
        if (l.k == INT && r.k == INT) c = l.i < r.i ? -1 : (l.i > r.i ? 1 : 0);
        else {
          let x = num(l), y = num(r);
          if (x != x || y != y) return theFalse;
          c = x < y ? -1 : (x > y ? 1 : 0);
        }
      } else if (l.k == STR && r.k == STR) {
        c = compareCodePoints(l.s, r.s); // Go's order: UTF-8 bytes
      } else {
        return err("cannot compare " + typeName(l) + " " + op + " " + typeName(r));
      }
      let b = op == "<" ? c < 0 : (op == ">" ? c > 0 : (op == "<=" ? c <= 0 : c >= 0));
      return b ? theTrue : theFalse;
    }
    if (op == "+" && l.k == STR && r.k == STR) return strV(l.s + r.s);
    if (op == "+" || op == "-" || op == "*") {
      if (!isNum(l) || !isNum(r)) return err("cannot apply " + op + " to " + typeName(l) + " and " + typeName(r));
      if (l.k == INT && r.k == INT) {
        let x = l.i, y = r.i;
        return intV(op == "+" ? x + y : (op == "-" ? x - y : x * y), l.lit && r.lit);
      }
      let x = num(l), y = num(r);
      return floatV(op == "+" ? x + y : (op == "-" ? x - y : x * y));
    }
    if (op == "/") {
      if (!isNum(l) || !isNum(r)) return err("cannot apply / to " + typeName(l) + " and " + typeName(r));
      return floatV(num(l) / num(r));
    }
    if (op == "%") {
      if (l.k != INT || r.k != INT) return err("% wants two ints, not " + typeName(l) + " and " + typeName(r));
      if (r.i == 0) return err("% by zero");
      if (r.i == -1) return intV(0, true);
      return intV(l.i % r.i, true);
    }
    if (op == "in") return this.in_(n, l, r);
    if (op == "contains" || op == "startsWith" || op == "endsWith") {
      if (l.k == NIL || r.k == NIL) return theFalse;
      if (l.k != STR || r.k != STR) return err(op + " wants strings, not " + typeName(l) + " and " + typeName(r));
      let b = op == "contains" ? contains(l.s, r.s) : (op == "startsWith" ? l.s.startsWith(r.s) : l.s.endsWith(r.s));
      return b ? theTrue : theFalse;
    }
    return err("operator " + op + " is outside the subset");
  }

  in_(n: Node, l: V, r: V): V {
    // expr-lang's optimizer turns `x in ["a", "b"]` into a lookup in a set
    // of strings: x must then be a string, and nil looks up "".
    if (n.b!.t == N_ARRAY && n.b!.list.length > 0 && allStrings(n.b!)) {
      if (l.k != STR && l.k != NIL) return err("in [\"…\"] wants a string, not " + typeName(l));
      let s = l.k == NIL ? "" : l.s;
      let a = r.arr!;
      for (let i = 0; i < a.length; i++) if (a[i].s == s) return theTrue;
      return theFalse;
    }
    if (r.k == NIL) return theFalse;
    if (r.k == ARR) {
      let a = r.arr!;
      for (let i = 0; i < a.length; i++) if (equal(this.ev, a[i], l)) return theTrue;
      return theFalse;
    }
    if (r.k == VARR) {
      let m = this.ev.count(r.path);
      for (let i = 0; i < m; i++) {
        if (equal(this.ev, fromView(this.ev, child(r.path, i.toString())), l)) return theTrue;
      }
      return theFalse;
    }
    if (r.k == VMAP) {
      if (l.k == NIL) return this.ev.has(child(r.path, "~2")) ? theTrue : theFalse;
      if (l.k != STR) return err("in an object wants a string (a member's name), not " + typeName(l));
      return this.ev.has(child(r.path, escapeKey(l.s))) ? theTrue : theFalse;
    }
    return err("in wants an array or an object on its right, not " + typeName(r));
  }

  call(name: string, v: V): V {
    if (evalError.length) return theNil;
    if (name == "len") {
      if (v.k == STR) return intV(codePoints(v.s), true);
      if (v.k == ARR) return intV(v.arr!.length, true);
      if (v.k == VARR || v.k == VMAP) return intV(this.ev.count(v.path), true);
      return err("len() wants a string, an array or an object, not " + typeName(v));
    }
    if (v.k != STR) return err(name + "() wants a string, not " + typeName(v));
    if (name == "lower") return strV(mapCase(v.s, false));
    if (name == "upper") return strV(mapCase(v.s, true));
    return strV(trimSpace(v.s));
  }
}

// Set by a `?.` on nil: the rest of its chain is nil.
let chainNil: bool = false;

// Whether s contains sub: Knuth–Morris–Pratt, linear in both lengths. The
// runtime's includes() compares naively, and 64 KB of "a" against 32 KB
// of "a…ab" took over a second.
function contains(s: string, sub: string): bool {
  let m = sub.length, n = s.length;
  if (m == 0) return true;
  if (m > n) return false;
  if (m < 8) return s.includes(sub);
  let fail = new Int32Array(m);
  for (let i = 1, k = 0; i < m; i++) {
    while (k > 0 && sub.charCodeAt(i) != sub.charCodeAt(k)) k = fail[k - 1];
    if (sub.charCodeAt(i) == sub.charCodeAt(k)) k++;
    fail[i] = k;
  }
  for (let i = 0, k = 0; i < n; i++) {
    while (k > 0 && s.charCodeAt(i) != sub.charCodeAt(k)) k = fail[k - 1];
    if (s.charCodeAt(i) == sub.charCodeAt(k)) k++;
    if (k == m) return true;
  }
  return false;
}

// Go's strings.ToLower/ToUpper map each code point on its own (Unicode's
// simple case mapping): ß stays ß, a final Σ becomes σ. The runtime's
// toLowerCase/toUpperCase use full, contextual mapping, so each code point
// is mapped alone and kept when that would make more than one.
function mapCase(s: string, upper: bool): string {
  let out = "";
  let plain = true;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) >= 0x80) { plain = false; break; }
  if (plain) return upper ? s.toUpperCase() : s.toLowerCase();
  for (let i = 0; i < s.length;) {
    let cp = s.codePointAt(i);
    let n = cp >= 0x10000 ? 2 : 1;
    let one = s.substring(i, i + n);
    let m = upper ? one.toUpperCase() : one.toLowerCase();
    let single = m.length == 1 || (m.length == 2 && m.codePointAt(0) >= 0x10000);
    if (!single) m = !upper && cp == 0x130 ? "i" : one; // İ lowers to i in Go's simple mapping
    out += m;
    i += n;
  }
  return out;
}

function allStrings(a: Node): bool {
  for (let i = 0; i < a.list.length; i++) {
    let e = a.list[i];
    if (e.t != N_LIT || e.val.k != STR) return false;
  }
  return true;
}

function codePoints(s: string): i64 {
  let n: i64 = 0;
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0xD800 && c < 0xDC00 && i + 1 < s.length) {
      let d = s.charCodeAt(i + 1);
      if (d >= 0xDC00 && d < 0xE000) i++;
    }
    n++;
  }
  return n;
}

// Go's strings.TrimSpace: Unicode white space at both ends.
function isSpace(c: i32): bool {
  return c == 0x20 || (c >= 0x09 && c <= 0x0D) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
    (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}
function trimSpace(s: string): string {
  let i = 0, j = s.length;
  while (i < j && isSpace(s.charCodeAt(i))) i++;
  while (j > i && isSpace(s.charCodeAt(j - 1))) j--;
  return s.substring(i, j);
}


// expr-lang's runtime.Equal: numbers by value whatever their types,
// strings, bools, nil == nil, arrays element by element by these rules;
// objects by reflect.DeepEqual (so [1] and [1.0] differ inside them).
function equal(ev: View, a: V, b: V): bool {
  if (isNum(a) && isNum(b)) {
    if (a.k == INT && b.k == INT) return a.i == b.i;
    return num(a) == num(b);
  }
  if (a.k == STR && b.k == STR) return a.s == b.s;
  if (a.k == BOOL && b.k == BOOL) return a.b == b.b;
  if (a.k == NIL && b.k == NIL) return true;
  let arrA = a.k == ARR || a.k == VARR, arrB = b.k == ARR || b.k == VARR;
  if (arrA && arrB) { // element by element, with these rules
    let n = a.k == ARR ? a.arr!.length : ev.count(a.path);
    let m = b.k == ARR ? b.arr!.length : ev.count(b.path);
    if (n != m) return false;
    for (let i = 0; i < n; i++) {
      let x = a.k == ARR ? a.arr![i] : fromView(ev, child(a.path, i.toString()));
      let y = b.k == ARR ? b.arr![i] : fromView(ev, child(b.path, i.toString()));
      if (!equal(ev, x, y)) return false;
    }
    return true;
  }
  return deepEqual(ev, a, b);
}

// reflect.DeepEqual over what an event's objects hold: the same Go types
// (an int64 is not a float64) and the same contents.
function deepEqual(ev: View, a: V, b: V): bool {
  let ka = a.k, kb = b.k;
  let arrA = ka == ARR || ka == VARR, arrB = kb == ARR || kb == VARR;
  if (arrA && arrB) {
    let n = ka == ARR ? a.arr!.length : ev.count(a.path);
    let m = kb == ARR ? b.arr!.length : ev.count(b.path);
    if (n != m) return false;
    for (let i = 0; i < n; i++) {
      let x = ka == ARR ? a.arr![i] : fromView(ev, child(a.path, i.toString()));
      let y = kb == ARR ? b.arr![i] : fromView(ev, child(b.path, i.toString()));
      if (!deepEqual(ev, x, y)) return false;
    }
    return true;
  }
  if (ka != kb) return false;
  switch (ka) {
    case NIL: return true;
    case BOOL: return a.b == b.b;
    case INT: return a.lit == b.lit && a.i == b.i;
    case FLOAT: return a.f == b.f;
    case STR: return a.s == b.s;
    case VMAP: {
      if (a.path == b.path) return true;
      let ks = ev.keys(a.path);
      if (ks.length != ev.count(b.path)) return false;
      for (let i = 0; i < ks.length; i++) {
        let p = child(b.path, escapeKey(ks[i]));
        if (!ev.has(p)) return false;
        if (!deepEqual(ev, fromView(ev, child(a.path, escapeKey(ks[i]))), fromView(ev, p))) return false;
      }
      return true;
    }
  }
  return false;
}

// expr-lang's optimizer folds literals before anything runs, and some
// folds change what a condition does: `x || true` is true without reading
// x (which might have failed), `x && true` is x. So the guest folds as it
// does (optimizer/fold.go), children first: arithmetic on number literals,
// + on strings, == on ints, strings or bools, ! on a bool, and the boolean
// operators with a literal side.
// Whether n is a && (and = true) or || (false) node. A chain of one of
// them, a || b || c, is a tree as deep as it is long ((a || b) || c), so
// fold, depthOf and the evaluation walk its left spine in a loop rather
// than recursing down it: a chain costs one level of the guest's stack.
function isLogic(n: Node, and: bool): bool {
  if (n.t != N_BINARY) return false;
  return and ? (n.op == "&&" || n.op == "and") : (n.op == "||" || n.op == "or");
}

// The chain's nodes from the top down; the leftmost operand is the last
// one's a.
function spine(n: Node, and: bool): Node[] {
  let out = new Array<Node>();
  let cur = n;
  while (isLogic(cur, and)) {
    out.push(cur);
    cur = cur.a!;
  }
  return out;
}

function fold(n: Node): Node {
  if (isLogic(n, true) || isLogic(n, false)) {
    let and = isLogic(n, true);
    let sp = spine(n, and);
    let acc = fold(sp[sp.length - 1].a!);
    for (let i = sp.length - 1; i >= 0; i--) {
      let s = sp[i];
      s.a = acc;
      s.b = fold(s.b!);
      acc = foldLogic(s, and);
    }
    return acc;
  }
  if (n.a !== null) n.a = fold(n.a!);
  if (n.b !== null && n.t != N_MEMBER) n.b = fold(n.b!);
  if (n.c !== null) n.c = fold(n.c!);
  for (let i = 0; i < n.list.length; i++) n.list[i] = fold(n.list[i]);
  if (n.t == N_UNARY) {
    let a = n.a!;
    if (a.t != N_LIT) return n;
    if (n.op == "!" && a.val.k == BOOL) return lit(a.val.b ? theFalse : theTrue);
    if ((n.op == "-" || n.op == "+") && a.val.k == INT) return lit(intV(n.op == "-" ? -a.val.i : a.val.i, true));
    if ((n.op == "-" || n.op == "+") && a.val.k == FLOAT) return lit(floatV(n.op == "-" ? -a.val.f : a.val.f));
    return n;
  }
  if (n.t != N_BINARY) return n;
  let op = n.op;
  let a = n.a!, b = n.b!;
  let la = a.t == N_LIT, lb = b.t == N_LIT;
  if (!la || !lb) return n;
  let x = a.val, y = b.val;
  let nums = isNum(x) && isNum(y), ints = x.k == INT && y.k == INT;
  if (op == "+" && x.k == STR && y.k == STR) return lit(strV(x.s + y.s));
  if ((op == "+" || op == "-" || op == "*") && nums) {
    if (ints) return lit(intV(op == "+" ? x.i + y.i : (op == "-" ? x.i - y.i : x.i * y.i), true));
    let p = num(x), q = num(y);
    return lit(floatV(op == "+" ? p + q : (op == "-" ? p - q : p * q)));
  }
  if (op == "/" && nums) return lit(floatV(num(x) / num(y)));
  if (op == "%" && ints && y.i != 0) return lit(intV(y.i == -1 ? 0 : x.i % y.i, true));
  if (op == "==" && (ints || (x.k == STR && y.k == STR) || (x.k == BOOL && y.k == BOOL))) {
    let eq = ints ? x.i == y.i : (x.k == STR ? x.s == y.s : x.b == y.b);
    return lit(eq ? theTrue : theFalse);
  }
  return n;
}

// foldLogic is fold's rule for a && or || whose operands are folded.
function foldLogic(n: Node, and: bool): Node {
  let a = n.a!, b = n.b!;
  let ab = a.t == N_LIT && a.val.k == BOOL, bb = b.t == N_LIT && b.val.k == BOOL;
  if (ab && a.val.b == and) return b;   // true and x, false or x
  if (bb && b.val.b == and) return a;   // x and true, x or false
  if (ab || bb) return lit(and ? theFalse : theTrue);
  return n;
}

function depthOf(n: Node): i32 {
  if (isLogic(n, true) || isLogic(n, false)) { // a chain is one level
    let sp = spine(n, isLogic(n, true));
    let d = depthOf(sp[sp.length - 1].a!);
    for (let i = 0; i < sp.length; i++) d = max(d, depthOf(sp[i].b!));
    return d + 1;
  }
  let d = 0;
  if (n.a !== null) d = max(d, depthOf(n.a!));
  if (n.b !== null) d = max(d, depthOf(n.b!));
  if (n.c !== null) d = max(d, depthOf(n.c!));
  for (let i = 0; i < n.list.length; i++) d = max(d, depthOf(n.list[i]));
  return d + 1;
}

function lit(v: V): Node {
  let n = new Node();
  n.val = v;
  return n;
}

// The kind an expression always has, from its literals, or -1 when it
// depends on the event: enough to refuse `1 + 1` as a condition when it is
// configured, as expr-lang's checker does.
function staticKind(n: Node): i32 {
  switch (n.t) {
    case N_LIT: return n.val.k;
    case N_ARRAY: return ARR;
    case N_CALL: return n.op == "len" ? INT : STR;
    case N_UNARY: return n.op == "!" ? BOOL : staticKind(n.a!);
    case N_BINARY: {
      let op = n.op;
      if (op == "+" || op == "-" || op == "*") {
        let a = staticKind(n.a!), b = staticKind(n.b!);
        if (a == STR && b == STR && op == "+") return STR;
        if ((a == INT || a == FLOAT) && (b == INT || b == FLOAT)) return a == INT && b == INT ? INT : FLOAT;
        return -1;
      }
      if (op == "/") return FLOAT;
      if (op == "%") return INT;
      if (op == "??") return -1;
      return BOOL;
    }
    case N_COND: {
      let a = staticKind(n.a!), b = staticKind(n.b!);
      return a == b ? a : -1;
    }
  }
  return -1;
}

function kindName(k: u8): string {
  switch (k) {
    case NIL: return "nil";
    case BOOL: return "bool";
    case INT: return "int";
    case FLOAT: return "float64";
    case STR: return "string";
  }
  return "[]interface {}";
}

// ---- the condition

class Expr extends Condition {
  tree: Node = new Node();

  configure(cfg: Config): string | null {
    let src = cfg.str("expr");
    if (src === null) return cfg.missing("expr", "a string");
    let keys = cfg.keys("");
    for (let i = 0; i < keys.length; i++) {
      if (keys[i] != "expr") return "expr: unknown config key \"" + keys[i] + "\"; it takes only expr";
    }
    // host/exprcheck's bounds: the tree is walked recursively.
    if (String.UTF8.byteLength(src) > 4096) return "expr: the expression is longer than 4096 bytes";
    let toks = lex(src);
    if (toks === null) return "expr: " + lexError;
    let p = new Parser();
    p.toks = toks;
    let t = p.expression(0);
    if (p.err.length == 0 && p.cur.t != T_EOF) p.fail("unexpected token " + p.describe());
    if (p.err.length) return "expr: " + p.err;
    if (depthOf(t) > 64) return "expr: the expression nests deeper than 64";
    t = fold(t);
    let k = staticKind(t);
    if (k >= 0 && k != BOOL) return "expr: expected bool, but got " + kindName(<u8>k);
    this.tree = t;
    return null;
  }

  when(ev: Event): bool {
    evalError = "";
    chainNil = false;
    let v = new Eval(ev).run(this.tree);
    if (evalError.length) return fail(evalError);
    if (v.k == NIL) return false; // expr.AsBool takes nil as false
    if (v.k != BOOL) return fail("the condition is " + typeName(v) + ", not a bool");
    return v.b;
  }
}

condition("expr", (): Condition => new Expr(), {
  doc: "a boolean expression over the event's fields (the expr-lang subset of plugins/expr)",
  example: `{"expr":"battery < 20 && !charging"}`,
  schema: `{"type":"object","required":["expr"],"properties":{"expr":{"type":"string"}}}`,
});
