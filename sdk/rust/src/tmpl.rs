//! Templates: `{{path}}` placeholders rendering the bytes Go's abi/tmpl
//! renders (every SDK renders the same).

use crate::{json_string, Call, Config, Error, Kind, Table, View};

enum Seg {
    Lit(Vec<u8>),
    Hole { path: Vec<u8>, typed: bool, quoted: bool },
}

/// A compiled template: compile once, in configure; render in each call.
pub struct Template {
    segs: Vec<Seg>,
}

impl Template {
    fn lit(&mut self, b: &[u8]) {
        if let Some(Seg::Lit(l)) = self.segs.last_mut() {
            l.extend_from_slice(b);
            return;
        }
        self.segs.push(Seg::Lit(b.to_vec()));
    }

    fn escaped(&mut self, b: &[u8], quoted: bool) {
        if !quoted {
            return self.lit(b);
        }
        let mut q = Vec::new();
        json_string(&mut q, b);
        self.lit(&q[1..q.len() - 1]);
    }

    /// A text template, such as "battery {{battery}}% on {{vehicle}}": each
    /// placeholder splices its value's text (a string as it is, anything
    /// else as JSON, nothing for a missing path).
    pub fn text(s: &str) -> Result<Template, Error> {
        let mut t = Template { segs: Vec::new() };
        t.compile_text(s.as_bytes(), false).map_err(|rest| unclosed(&rest))?;
        Ok(t)
    }

    /// compile_text compiles a text template; Err is what follows the
    /// last closed placeholder when a {{ is not closed (Go's error quotes it).
    fn compile_text(&mut self, mut s: &[u8], quoted: bool) -> Result<(), Vec<u8>> {
        loop {
            let open = match find2(s, b"{{") {
                None => {
                    self.escaped(s, quoted);
                    return Ok(());
                }
                Some(i) => i,
            };
            let close = match find2(&s[open..], b"}}") {
                None => return Err(s.to_vec()),
                Some(j) => open + j,
            };
            self.escaped(&s[..open], quoted);
            self.segs.push(Seg::Hole { path: trim(&s[open + 2..close]).to_vec(), typed: false, quoted });
            s = &s[close + 2..];
        }
    }

    /// A JSON template: the value at key in the config. A string that is
    /// exactly one placeholder becomes the value with its type (null when
    /// missing); placeholders in longer strings splice their text,
    /// escaped; keys in byte order, numbers as Go writes them.
    pub fn json(cfg: &Config, key: &str) -> Result<Template, Error> {
        let (e, t) = cfg.view.find(key.as_bytes());
        let e = match e {
            Some(e) => e,
            None => return Err(cfg.needs(key, "")),
        };
        let mut tp = Template { segs: Vec::new() };
        tp.compile_json(t, e, key.as_bytes(), 0).map_err(|rest| unclosed(&rest))?;
        Ok(tp)
    }

    /// compile_json compiles the value of entry e; Err names the string
    /// whose {{ is not closed.
    fn compile_json(&mut self, t: Table, e: usize, path: &[u8], depth: usize) -> Result<(), Vec<u8>> {
        if depth > MAX_DEPTH {
            self.lit(b"null");
            return Ok(());
        }
        match t.kind(e) {
            Kind::Object | Kind::Array => {
                let array = t.kind(e) == Kind::Array;
                self.lit(if array { b"[" } else { b"{" });
                for (i, m) in members(t, e, path).iter().enumerate() {
                    if i > 0 {
                        self.lit(b",");
                    }
                    if !array {
                        let mut k = Vec::new();
                        json_string(&mut k, &m.key);
                        k.push(b':');
                        self.lit(&k);
                    }
                    self.compile_json(t, m.e, &m.path, depth + 1)?;
                }
                self.lit(if array { b"]" } else { b"}" });
                Ok(())
            }
            Kind::String => {
                let s = t.string(e).unwrap_or(b"");
                if s.starts_with(b"{{") && s.ends_with(b"}}") && s.len() >= 4 && count2(s, b"{{") == 1 {
                    self.segs.push(Seg::Hole { path: trim(&s[2..s.len() - 2]).to_vec(), typed: true, quoted: false });
                    return Ok(());
                }
                self.lit(b"\"");
                self.compile_text(s, true)?;
                self.lit(b"\"");
                Ok(())
            }
            _ => {
                let mut b = Vec::new();
                json_value(&mut b, t, e, path, depth);
                self.lit(&b);
                Ok(())
            }
        }
    }

    /// Renders the template from the call's event and the run's context.
    pub fn render(&self, call: &Call) -> Vec<u8> {
        let mut b = Vec::new();
        for s in &self.segs {
            match s {
                Seg::Lit(l) => b.extend_from_slice(l),
                Seg::Hole { path, typed, quoted } => render_hole(&mut b, &call.event, path, *typed, *quoted),
            }
        }
        b
    }
}

fn render_hole(b: &mut Vec<u8>, v: &View, path: &[u8], typed: bool, quoted: bool) {
    let (e, t) = v.find(path);
    let e = match e {
        None => {
            if typed {
                b.extend_from_slice(b"null");
            }
            return;
        }
        Some(e) => e,
    };
    if typed {
        return json_value(b, t, e, path, 0);
    }
    if t.kind(e) == Kind::String {
        let s = t.string(e).unwrap_or(b"");
        if quoted {
            let mut q = Vec::new();
            json_string(&mut q, s);
            b.extend_from_slice(&q[1..q.len() - 1]);
        } else {
            b.extend_from_slice(s);
        }
        return;
    }
    let mut x = Vec::new();
    json_value(&mut x, t, e, path, 0);
    if quoted {
        let mut q = Vec::new();
        json_string(&mut q, &x);
        b.extend_from_slice(&q[1..q.len() - 1]);
    } else {
        b.extend_from_slice(&x);
    }
}

fn unclosed(rest: &[u8]) -> Error {
    let mut q = Vec::new();
    json_string(&mut q, rest);
    Error::new(format!("unclosed {{{{ in {}", String::from_utf8_lossy(&q)))
}

fn find2(s: &[u8], w: &[u8]) -> Option<usize> {
    s.windows(2).position(|x| x == w)
}

fn count2(s: &[u8], w: &[u8]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i + 1 < s.len() {
        if &s[i..i + 2] == w {
            n += 1;
            i += 2;
        } else {
            i += 1;
        }
    }
    n
}

/// trim is Go's strings.TrimSpace (unicode.IsSpace).
fn trim(s: &[u8]) -> &[u8] {
    match std::str::from_utf8(s) {
        Ok(x) => x.trim_matches(|c: char| is_space(c)).as_bytes(),
        Err(_) => {
            let mut a = 0;
            let mut z = s.len();
            while a < z && matches!(s[a], b' ' | b'\t'..=b'\r') {
                a += 1;
            }
            while z > a && matches!(s[z - 1], b' ' | b'\t'..=b'\r') {
                z -= 1;
            }
            &s[a..z]
        }
    }
}

fn is_space(c: char) -> bool {
    matches!(c, '\t'..='\r' | ' ' | '\u{85}' | '\u{A0}' | '\u{1680}' | '\u{2000}'..='\u{200A}' | '\u{2028}' | '\u{2029}'
        | '\u{202F}' | '\u{205F}' | '\u{3000}')
}

struct Member {
    key: Vec<u8>, // unescaped
    index: u64,
    e: usize,
    path: Vec<u8>,
}

/// MAX_DEPTH bounds a value's nesting, as the host's decoder does: a view
/// made to recurse deeper is not followed past it.
const MAX_DEPTH: usize = 256;

/// members are the members of the container at path (entry e), in Go's
/// order: by key bytes, or by index.
fn members(t: Table, e: usize, path: &[u8]) -> Vec<Member> {
    let array = t.kind(e) == Kind::Array;
    let want = (t.bits(e) as usize).min(t.count as usize); // a count past the entries is not believed
    let mut prefix = path.to_vec();
    if !path.is_empty() {
        prefix.push(b'.');
    }
    let mut out = Vec::new();
    let mut i = t.lower(&prefix);
    while i < t.count && out.len() < want {
        let p = match t.path(i) {
            Some(p) if p.starts_with(&prefix) => p,
            _ => break,
        };
        i += 1;
        let rest = &p[prefix.len()..];
        if rest.is_empty() || rest.contains(&b'.') {
            continue;
        }
        let mut m = Member { key: Vec::new(), index: 0, e: crate::HEADER + (i as usize - 1) * 16, path: p.to_vec() };
        if array {
            m.index = rest.iter().fold(0u64, |n, d| n * 10 + (d - b'0') as u64);
        } else if rest != b"~2" {
            let mut k = 0;
            while k < rest.len() {
                if rest[k] == b'~' && k + 1 < rest.len() && (rest[k + 1] == b'0' || rest[k + 1] == b'1') {
                    m.key.push(if rest[k + 1] == b'0' { b'~' } else { b'.' });
                    k += 2;
                } else {
                    m.key.push(rest[k]);
                    k += 1;
                }
            }
        }
        out.push(m);
    }
    if array {
        out.sort_by_key(|m| m.index);
    } else {
        out.sort_by(|a, b| a.key.cmp(&b.key));
    }
    out
}

/// json_value appends the value of entry e (at path) as Go's
/// tmpl.AppendJSON appends what Decode gives.
fn json_value(b: &mut Vec<u8>, t: Table, e: usize, path: &[u8], depth: usize) {
    if depth > MAX_DEPTH {
        return b.extend_from_slice(b"null");
    }
    match t.kind(e) {
        Kind::Bool => b.extend_from_slice(if t.bits(e) != 0 { b"true" } else { b"false" }),
        Kind::Int => b.extend_from_slice((t.bits(e) as i64).to_string().as_bytes()),
        Kind::Float => go_float(b, f64::from_bits(t.bits(e))),
        Kind::String => match t.string(e) {
            Some(s) => json_string(b, s),
            None => b.extend_from_slice(b"null"),
        },
        Kind::Object | Kind::Array => {
            let array = t.kind(e) == Kind::Array;
            b.push(if array { b'[' } else { b'{' });
            for (i, m) in members(t, e, path).iter().enumerate() {
                if i > 0 {
                    b.push(b',');
                }
                if !array {
                    json_string(b, &m.key);
                    b.push(b':');
                }
                json_value(b, t, m.e, &m.path, depth + 1);
            }
            b.push(if array { b']' } else { b'}' });
        }
        _ => b.extend_from_slice(b"null"),
    }
}

/// go_float appends x as Go's tmpl.AppendJSON does: null for NaN and the
/// infinities; a whole number under 1e15 in full (strconv 'f', -1);
/// anything else as strconv 'g', -1 — the shortest digits that read back
/// (Rust's `{:e}` gives them), in %e form when the exponent is under -4
/// or at least 6, with at least two exponent digits.
pub(crate) fn go_float(b: &mut Vec<u8>, x: f64) {
    if !x.is_finite() {
        return b.extend_from_slice(b"null");
    }
    if x == 0.0 {
        return b.extend_from_slice(if x.is_sign_negative() { b"-0" } else { b"0" });
    }
    let e = format!("{:e}", x.abs()); // d[.ddd]e[-]X
    let (mant, exp) = e.split_at(e.find('e').unwrap());
    let exp10: i32 = exp[1..].parse().unwrap_or(0);
    let digits: Vec<u8> = mant.bytes().filter(|&c| c != b'.').collect();
    let nd = digits.len() as i32;
    let dp = exp10 + 1;
    let whole = x == x.trunc() && x.abs() < 1e15;
    if x < 0.0 {
        b.push(b'-');
    }
    if !whole && !(-4..6).contains(&exp10) {
        b.push(digits[0]);
        if nd > 1 {
            b.push(b'.');
            b.extend_from_slice(&digits[1..]);
        }
        b.extend_from_slice(format!("e{}{:02}", if exp10 < 0 { '-' } else { '+' }, exp10.abs()).as_bytes());
        return;
    }
    if dp > 0 {
        for i in 0..dp {
            b.push(if i < nd { digits[i as usize] } else { b'0' });
        }
    } else {
        b.push(b'0');
    }
    let frac = (nd - dp).max(0);
    if frac > 0 {
        b.push(b'.');
        for i in 0..frac {
            let j = dp + i;
            b.push(if j >= 0 && j < nd { digits[j as usize] } else { b'0' });
        }
    }
}
