//! Native runs of a plugin (off wasm: `cargo test`, `rustc --test`): its
//! functions called in this process through the same configure and call
//! paths the host uses, with an in-memory host — kv, publishes, fires and
//! log lines kept for the test to read. Fast, and a debugger works; what
//! the sandbox adds (fuel, deadlines, memory bounds) is the scenario
//! tests' to show.
//!
//! ```ignore
//! #[test]
//! fn hot() {
//!     let mut n = ruled::native::Native::new(init);
//!     assert_eq!(n.when("hot", r#"{"above":30}"#, r#"{"data":{"value":31}}"#), Ok(true));
//! }
//! ```

use crate::{Error, STATE};
use std::cell::RefCell;
use std::collections::HashMap;

/// The in-memory host a native call sees, and what the calls left in it.
#[derive(Default, Debug)]
pub struct Native {
    /// What `ruled::now()` answers (Unix ns); also the event's time.
    pub now: i64,
    /// The call header's pass, and its attempt (an action's).
    pub pass: u32,
    pub attempt: u32,
    /// The plugin's kv store.
    pub kv: HashMap<String, Vec<u8>>,
    /// What the calls published and fired: (topic or rule, payload).
    pub published: Vec<(String, Vec<u8>)>,
    pub fired: Vec<(String, Vec<u8>)>,
    /// The log lines: (level, text).
    pub logs: Vec<(i32, String)>,
}

thread_local! {
    static HOST: RefCell<Native> = RefCell::new(Native::default());
    static EVENT: RefCell<(Vec<u8>, bool)> = RefCell::new((Vec::new(), false)); // raw JSON, a condition's call
    static INIT: RefCell<bool> = RefCell::new(false);
}

impl Native {
    /// A native host for the plugin whose registrations init makes (the
    /// function `ruled::main!` names); init runs once a thread.
    pub fn new(init: fn()) -> Native {
        if !INIT.with(|i| std::mem::replace(&mut *i.borrow_mut(), true)) {
            crate::__initialize(init);
        }
        Native::default()
    }

    /// The plugin's describe document (JSON), as the host reads it.
    pub fn describe(&self) -> String {
        String::from_utf8_lossy(&crate::describe()).into_owned()
    }

    /// Calls condition function with config and event (JSON).
    pub fn when(&mut self, function: &str, config: &str, event: &str) -> Result<bool, Error> {
        let st = self.call(function, config, event, false)?;
        Ok(st == 1)
    }

    /// Calls action function with config and event (JSON): its result.
    pub fn act(&mut self, function: &str, config: &str, event: &str) -> Result<Vec<u8>, Error> {
        self.call(function, config, event, true)?;
        Ok(STATE.with(|s| s.borrow().result.clone()))
    }

    fn call(&mut self, function: &str, config: &str, event: &str, action: bool) -> Result<i32, Error> {
        let cfg = view_of(if config.is_empty() { "{}" } else { config }, true).map_err(|e| Error::new(format!("config: {}", e)))?;
        let ev = view_of(event, false).map_err(|e| Error::new(format!("event: {}", e)))?;
        let mut input = (function.len() as u16).to_le_bytes().to_vec();
        input.extend_from_slice(function.as_bytes());
        input.extend_from_slice(&cfg);
        let packed = crate::configure(&input);
        let (status, handle) = ((packed >> 32) as i32, packed as u32);
        if status != 0 {
            return Err(Error::new(last_error()));
        }
        let topic = crate::Table::new(&ev).and_then(|t| {
            let v = crate::View { t, ctx: None, event: true };
            v.str("topic").map(str::to_string)
        });
        let call = call_input(self, topic.as_deref().unwrap_or(""), &ev);
        // The host is this Native for the call's length.
        HOST.with(|h| std::mem::swap(&mut *h.borrow_mut(), self));
        EVENT.with(|e| *e.borrow_mut() = (event.as_bytes().to_vec(), !action));
        let st = if action { crate::act(handle, Some(&call)) } else { crate::when(handle, Some(&call)) };
        HOST.with(|h| std::mem::swap(&mut *h.borrow_mut(), self));
        crate::ruled_release(handle);
        match st {
            0 | 1 => Ok(st),
            11 => Err(Error::permanent(last_error())),
            _ => Err(Error::new(last_error())),
        }
    }
}

fn last_error() -> String {
    STATE.with(|s| String::from_utf8_lossy(&s.borrow().error).into_owned())
}

/// call_input is the call header (abi/ABI.md §2) and the event's view.
fn call_input(n: &Native, topic: &str, ev: &[u8]) -> Vec<u8> {
    let strs = [topic, "test-rule", "test-step", "test-run", "test-run/test-step/0"];
    let h = 16 + strs.iter().map(|s| 2 + s.len()).sum::<usize>() + 8;
    let mut b = Vec::with_capacity(h + ev.len());
    b.extend_from_slice(&(h as u32).to_le_bytes());
    b.extend_from_slice(&n.pass.to_le_bytes());
    b.extend_from_slice(&n.now.to_le_bytes());
    for s in strs {
        b.extend_from_slice(&(s.len() as u16).to_le_bytes());
        b.extend_from_slice(s.as_bytes());
    }
    b.extend_from_slice(&n.attempt.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes()); // no run context
    b.extend_from_slice(ev);
    b
}

/// The in-memory host functions, with the wasm imports' signatures.
#[allow(clippy::missing_safety_doc)]
pub(crate) mod host {
    use super::{Native, EVENT, HOST};

    unsafe fn bytes<'a>(p: *const u8, n: i32) -> &'a [u8] {
        if n <= 0 {
            return &[];
        }
        std::slice::from_raw_parts(p, n as usize)
    }

    unsafe fn text(p: *const u8, n: i32) -> String {
        String::from_utf8_lossy(bytes(p, n)).into_owned()
    }

    unsafe fn copy(b: &[u8], p: *mut u8, cap: i32) -> i32 {
        if b.len() <= cap.max(0) as usize {
            std::ptr::copy_nonoverlapping(b.as_ptr(), p, b.len());
        }
        b.len() as i32
    }

    fn with<T>(f: impl FnOnce(&mut Native) -> T) -> T {
        HOST.with(|h| f(&mut h.borrow_mut()))
    }

    fn condition() -> bool {
        EVENT.with(|e| e.borrow().1)
    }

    pub unsafe fn host_log(level: i32, p: *const u8, n: i32) {
        let t = text(p, n);
        with(|h| h.logs.push((level, t)));
    }
    pub unsafe fn host_now() -> i64 {
        with(|h| h.now)
    }
    pub unsafe fn host_event_raw(p: *mut u8, cap: i32) -> i32 {
        let raw = EVENT.with(|e| e.borrow().0.clone());
        copy(&raw, p, cap)
    }
    pub unsafe fn host_publish(t: *const u8, tn: i32, p: *const u8, pn: i32) -> i32 {
        let topic = text(t, tn);
        if condition() || topic.starts_with("ruled.") {
            return -7;
        }
        let payload = bytes(p, pn).to_vec();
        with(|h| h.published.push((topic, payload)));
        0
    }
    pub unsafe fn host_kv_get(k: *const u8, kn: i32, b: *mut u8, cap: i32) -> i32 {
        if condition() {
            return -7;
        }
        let key = text(k, kn);
        match with(|h| h.kv.get(&key).cloned()) {
            Some(v) => copy(&v, b, cap),
            None => -8,
        }
    }
    pub unsafe fn host_kv_set(k: *const u8, kn: i32, v: *const u8, vn: i32) -> i32 {
        if condition() {
            return -7;
        }
        let (key, value) = (text(k, kn), bytes(v, vn).to_vec());
        with(|h| h.kv.insert(key, value));
        0
    }
    pub unsafe fn host_kv_delete(k: *const u8, kn: i32) -> i32 {
        if condition() {
            return -7;
        }
        let key = text(k, kn);
        with(|h| h.kv.remove(&key));
        0
    }
    pub unsafe fn host_fire(r: *const u8, rn: i32, p: *const u8, pn: i32, o: *mut u8, cap: i32) -> i32 {
        if condition() {
            return -7;
        }
        let (rule, payload) = (text(r, rn), bytes(p, pn).to_vec());
        let id = with(|h| {
            h.fired.push((rule, payload));
            format!("native-run-{}", h.fired.len())
        });
        let n = id.len().min(cap.max(0) as usize);
        std::ptr::copy_nonoverlapping(id.as_ptr(), o, n);
        n as i32
    }
    pub unsafe fn host_http_request(_: *const u8, _: i32) -> i32 {
        if condition() {
            -7
        } else {
            -10 // natively no request is sent: unavailable
        }
    }
    pub unsafe fn host_http_response(_: *mut u8, _: i32) -> i32 {
        -8
    }
}

// ---- JSON to a view (abi/ABI.md §4), as the host makes one ----

enum Val {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Vec<u8>),
    Obj(u32),
    Arr(u32),
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    out: Vec<(Vec<u8>, Val)>,
}

/// view_of is the view of a JSON document: every value an entry by path,
/// sorted, with the raw JSON section when raw.
pub(crate) fn view_of(json: &str, raw: bool) -> Result<Vec<u8>, String> {
    let mut p = Parser { b: json.as_bytes(), i: 0, out: Vec::new() };
    p.value(Vec::new())?;
    p.ws();
    if p.i != p.b.len() {
        return Err(format!("unexpected {:?} at {}", p.b[p.i] as char, p.i));
    }
    let mut entries = p.out;
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for w in entries.windows(2) {
        if w[0].0 == w[1].0 {
            return Err(format!("a duplicate key at {}", String::from_utf8_lossy(&w[0].0)));
        }
    }
    let n = entries.len();
    let mut pool = Vec::new();
    let base = 16 + 16 * n;
    let mut table = Vec::with_capacity(16 * n);
    for (path, v) in &entries {
        let po = (base + pool.len()) as u32;
        pool.extend_from_slice(path);
        let (kind, bits): (u8, u64) = match v {
            Val::Null => (1, 0),
            Val::Bool(b) => (2, *b as u64),
            Val::Int(i) => (3, *i as u64),
            Val::Float(f) => (4, f.to_bits()),
            Val::Str(s) => {
                let off = (base + pool.len()) as u64;
                pool.extend_from_slice(s);
                (5, (s.len() as u64) << 32 | off)
            }
            Val::Obj(c) => (6, *c as u64),
            Val::Arr(c) => (7, *c as u64),
        };
        table.extend_from_slice(&po.to_le_bytes());
        table.extend_from_slice(&(path.len() as u16).to_le_bytes());
        table.push(kind);
        table.push(0);
        table.extend_from_slice(&bits.to_le_bytes());
    }
    let (raw_off, raw_len) = if raw {
        let off = (base + pool.len()) as u32;
        pool.extend_from_slice(json.as_bytes());
        (off, json.len() as u32)
    } else {
        (0, 0)
    };
    let mut b = b"RV\x01".to_vec();
    b.push(raw as u8);
    b.extend_from_slice(&(n as u32).to_le_bytes());
    b.extend_from_slice(&raw_off.to_le_bytes());
    b.extend_from_slice(&raw_len.to_le_bytes());
    b.extend_from_slice(&table);
    b.extend_from_slice(&pool);
    Ok(b)
}

fn escape_key(k: &[u8]) -> Vec<u8> {
    if k.is_empty() {
        return b"~2".to_vec();
    }
    let mut out = Vec::with_capacity(k.len());
    for &c in k {
        match c {
            b'~' => out.extend_from_slice(b"~0"),
            b'.' => out.extend_from_slice(b"~1"),
            c => out.push(c),
        }
    }
    out
}

fn member(parent: &[u8], key: &[u8]) -> Vec<u8> {
    let mut p = parent.to_vec();
    if !p.is_empty() {
        p.push(b'.');
    }
    p.extend_from_slice(key);
    p
}

impl<'a> Parser<'a> {
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Result<(), String> {
        self.ws();
        if self.i < self.b.len() && self.b[self.i] == c {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("want {:?} at {}", c as char, self.i))
        }
    }

    fn value(&mut self, path: Vec<u8>) -> Result<(), String> {
        self.ws();
        let c = *self.b.get(self.i).ok_or("unexpected end")?;
        let v = match c {
            b'{' => {
                self.i += 1;
                let mut n = 0;
                self.ws();
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                } else {
                    loop {
                        self.ws();
                        let k = self.string()?;
                        self.eat(b':')?;
                        self.value(member(&path, &escape_key(&k)))?;
                        n += 1;
                        self.ws();
                        match self.b.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(b'}') => {
                                self.i += 1;
                                break;
                            }
                            _ => return Err(format!("want , or }} at {}", self.i)),
                        }
                    }
                }
                Val::Obj(n)
            }
            b'[' => {
                self.i += 1;
                let mut n = 0u32;
                self.ws();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                } else {
                    loop {
                        self.value(member(&path, n.to_string().as_bytes()))?;
                        n += 1;
                        self.ws();
                        match self.b.get(self.i) {
                            Some(b',') => self.i += 1,
                            Some(b']') => {
                                self.i += 1;
                                break;
                            }
                            _ => return Err(format!("want , or ] at {}", self.i)),
                        }
                    }
                }
                Val::Arr(n)
            }
            b'"' => Val::Str(self.string()?),
            b't' | b'f' | b'n' => {
                for (w, v) in [(&b"true"[..], Val::Bool(true)), (&b"false"[..], Val::Bool(false)), (&b"null"[..], Val::Null)] {
                    if self.b[self.i..].starts_with(w) {
                        self.i += w.len();
                        self.out.push((path, v));
                        return Ok(());
                    }
                }
                return Err(format!("unexpected {:?} at {}", c as char, self.i));
            }
            _ => {
                let start = self.i;
                while self.i < self.b.len() && matches!(self.b[self.i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    self.i += 1;
                }
                let s = std::str::from_utf8(&self.b[start..self.i]).unwrap_or("");
                if s.is_empty() {
                    return Err(format!("unexpected {:?} at {}", c as char, start));
                }
                match s.parse::<i64>() {
                    Ok(n) if !s.contains(['.', 'e', 'E']) => Val::Int(n),
                    _ => Val::Float(s.parse::<f64>().map_err(|_| format!("a bad number {} at {}", s, start))?),
                }
            }
        };
        self.out.push((path, v));
        Ok(())
    }

    fn string(&mut self) -> Result<Vec<u8>, String> {
        self.eat(b'"')?;
        let mut out = Vec::new();
        loop {
            let c = *self.b.get(self.i).ok_or("an unterminated string")?;
            self.i += 1;
            match c {
                b'"' => return Ok(out),
                b'\\' => {
                    let e = *self.b.get(self.i).ok_or("an unterminated escape")?;
                    self.i += 1;
                    match e {
                        b'"' | b'\\' | b'/' => out.push(e),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xD800..0xDC00).contains(&cp) && self.b[self.i..].starts_with(b"\\u") {
                                self.i += 2;
                                let lo = self.hex4()?;
                                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo.wrapping_sub(0xDC00) & 0x3ff);
                            }
                            let ch = char::from_u32(cp).unwrap_or('\u{FFFD}');
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => return Err(format!("a bad escape at {}", self.i)),
                    }
                }
                c => out.push(c),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let s = self.b.get(self.i..self.i + 4).ok_or("a short \\u escape")?;
        self.i += 4;
        u32::from_str_radix(std::str::from_utf8(s).unwrap_or("x"), 16).map_err(|_| "a bad \\u escape".to_string())
    }
}
