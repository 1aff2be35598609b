//! The Rust SDK for ruled plugins: conditions and actions for
//! `wasm32-unknown-unknown`, implementing ABI 1.4 (`abi/ABI.md`) by hand,
//! with no dependency (a crates registry may be out of reach).
//!
//! ```ignore
//! use ruled::{Call, Config, Error};
//!
//! fn init() {
//!     ruled::plugin("thermo", "1.0.0");
//!     ruled::condition("hot", |cfg: &Config| {
//!         let above = cfg.require_f64("above")?;
//!         Ok(Box::new(move |c: &Call| Ok(c.event.float("data.value").map_or(false, |t| t > above))))
//!     });
//! }
//! ruled::main!(init);
//! ```
//!
//! Who owns what: a `&str` or `&[u8]` a view, a call or a config lends
//! lives as long as the call (the borrow checker holds you to it): a
//! function that keeps part of its config copies it (`to_string`). What
//! the host functions answer is yours (`Vec<u8>`, `String`).

use std::cell::RefCell;
use std::rc::Rc;

/// The ABI this SDK implements: major<<16 | minor.
pub const ABI_VERSION: i32 = 1 << 16 | 4;

// ---- host imports (module "ruled") ----

#[cfg(target_arch = "wasm32")]
#[link(wasm_import_module = "ruled")]
extern "C" {
    #[link_name = "log"]
    fn host_log(level: i32, p: *const u8, n: i32);
    #[link_name = "now"]
    fn host_now() -> i64;
    #[link_name = "event_raw"]
    fn host_event_raw(p: *mut u8, cap: i32) -> i32;
    #[link_name = "publish"]
    fn host_publish(t: *const u8, tn: i32, p: *const u8, pn: i32) -> i32;
    #[link_name = "kv_get"]
    fn host_kv_get(k: *const u8, kn: i32, b: *mut u8, cap: i32) -> i32;
    #[link_name = "kv_set"]
    fn host_kv_set(k: *const u8, kn: i32, v: *const u8, vn: i32) -> i32;
    #[link_name = "kv_delete"]
    fn host_kv_delete(k: *const u8, kn: i32) -> i32;
    #[link_name = "fire"]
    fn host_fire(r: *const u8, rn: i32, p: *const u8, pn: i32, o: *mut u8, cap: i32) -> i32;
    #[link_name = "http_request"]
    fn host_http_request(p: *const u8, n: i32) -> i32;
    #[link_name = "http_response"]
    fn host_http_response(p: *mut u8, cap: i32) -> i32;
}

// Off wasm (cargo test, rustc --test), the host is an in-memory one
// (ruled::native).
#[cfg(not(target_arch = "wasm32"))]
use native::host::*;

// ---- status and errors ----

/// A status code (abi/ABI.md §6). Host functions fail with one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status(pub i32);

impl Status {
    pub const OK: Status = Status(0);
    pub const ERROR: Status = Status(2);
    pub const DENIED: Status = Status(7);
    pub const NOT_FOUND: Status = Status(8);
    pub const TOO_LARGE: Status = Status(9);
    pub const UNAVAILABLE: Status = Status(10);
    pub const PERMANENT: Status = Status(11);
}

/// What a function failed with: its text, as the host shows it, and
/// whether an action's retry would fail the same way.
#[derive(Debug, Clone)]
pub struct Error {
    pub text: String,
    pub permanent: bool,
}

impl Error {
    pub fn new(text: impl Into<String>) -> Error {
        Error { text: text.into(), permanent: false }
    }
    /// A failure an action's `retry:` does not retry.
    pub fn permanent(text: impl Into<String>) -> Error {
        Error { text: text.into(), permanent: true }
    }
}

fn status_of(r: i32) -> Result<i32, Status> {
    if r < 0 {
        Err(Status(-r))
    } else {
        Ok(r)
    }
}

// ---- views (abi/ABI.md §4) ----

/// A value's kind in a view; Missing when the path has none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Missing,
    Null,
    Bool,
    Int,
    Float,
    String,
    Object,
    Array,
}

fn kind_of(k: u8) -> Kind {
    match k {
        1 => Kind::Null,
        2 => Kind::Bool,
        3 => Kind::Int,
        4 => Kind::Float,
        5 => Kind::String,
        6 => Kind::Object,
        7 => Kind::Array,
        _ => Kind::Missing,
    }
}

const HEADER: usize = 16;

fn ld16(b: &[u8], o: usize) -> u32 {
    u16::from_le_bytes([b[o], b[o + 1]]) as u32
}
fn ld32(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
fn ld64(b: &[u8], o: usize) -> u64 {
    ld32(b, o) as u64 | (ld32(b, o + 4) as u64) << 32
}

/// One table of a view: its bytes and its entry count.
#[derive(Clone, Copy)]
struct Table<'a> {
    b: &'a [u8],
    count: u32,
}

impl<'a> Table<'a> {
    fn new(b: &'a [u8]) -> Option<Table<'a>> {
        if b.len() < HEADER || &b[0..2] != b"RV" || b[2] != 1 {
            return None;
        }
        let count = ld32(b, 4);
        if count as u64 * 16 > (b.len() - HEADER) as u64 {
            return None;
        }
        Some(Table { b, count })
    }

    fn path(&self, i: u32) -> Option<&'a [u8]> {
        let e = HEADER + i as usize * 16;
        let (po, pn) = (ld32(self.b, e) as usize, ld16(self.b, e + 4) as usize);
        self.b.get(po..po + pn)
    }

    fn find(&self, path: &[u8]) -> Option<usize> {
        let (mut lo, mut hi) = (0u32, self.count);
        while lo < hi {
            let m = (lo + hi) / 2;
            match path.cmp(self.path(m)?) {
                std::cmp::Ordering::Equal => return Some(HEADER + m as usize * 16),
                std::cmp::Ordering::Greater => lo = m + 1,
                std::cmp::Ordering::Less => hi = m,
            }
        }
        None
    }

    /// lower: the first entry whose path is not below prefix.
    fn lower(&self, prefix: &[u8]) -> u32 {
        let (mut lo, mut hi) = (0u32, self.count);
        while lo < hi {
            let m = (lo + hi) / 2;
            match self.path(m) {
                Some(p) if prefix > p => lo = m + 1,
                Some(_) => hi = m,
                None => return self.count,
            }
        }
        lo
    }

    fn kind(&self, e: usize) -> Kind {
        kind_of(self.b[e + 6])
    }

    fn bits(&self, e: usize) -> u64 {
        ld64(self.b, e + 8)
    }

    fn string(&self, e: usize) -> Option<&'a [u8]> {
        let x = self.bits(e);
        let (off, len) = ((x & 0xffff_ffff) as usize, (x >> 32) as usize);
        self.b.get(off..off + len)
    }
}

/// A view: an event (with the run's context) or a config. Paths are keys
/// joined by '.'; a key with '.' or '~' in it is escaped as ~1 and ~0.
#[derive(Clone, Copy)]
pub struct View<'a> {
    t: Table<'a>,
    ctx: Option<Table<'a>>,
    event: bool,
}

fn in_context(path: &[u8]) -> bool {
    ["steps.", "vars.", "states.", "previous.", "sun."]
        .iter()
        .any(|p| path.len() > p.len() && path.starts_with(p.as_bytes()))
}

impl<'a> View<'a> {
    /// find looks path up by the one rule (abi/ABI.md §4.1): below steps.,
    /// vars., states., previous. or sun. in the run's context, else in
    /// the event.
    fn find(&self, path: &[u8]) -> (Option<usize>, Table<'a>) {
        if self.event && in_context(path) {
            return match self.ctx {
                Some(c) => (c.find(path), c),
                None => (None, self.t),
            };
        }
        (self.t.find(path), self.t)
    }

    pub fn kind(&self, path: &str) -> Kind {
        match self.find(path.as_bytes()) {
            (Some(e), t) => t.kind(e),
            _ => Kind::Missing,
        }
    }

    /// The number at path: an int or a float.
    pub fn float(&self, path: &str) -> Option<f64> {
        let (e, t) = self.find(path.as_bytes());
        let e = e?;
        match t.kind(e) {
            Kind::Int => Some(t.bits(e) as i64 as f64),
            Kind::Float => Some(f64::from_bits(t.bits(e))),
            _ => None,
        }
    }

    /// The int at path, or a float holding a whole number.
    pub fn int(&self, path: &str) -> Option<i64> {
        let (e, t) = self.find(path.as_bytes());
        let e = e?;
        match t.kind(e) {
            Kind::Int => Some(t.bits(e) as i64),
            Kind::Float => {
                let f = f64::from_bits(t.bits(e));
                if f == f.trunc() && f >= -9223372036854775808.0 && f < 9223372036854775808.0 {
                    Some(f as i64)
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    pub fn bool(&self, path: &str) -> Option<bool> {
        let (e, t) = self.find(path.as_bytes());
        let e = e?;
        if t.kind(e) == Kind::Bool {
            Some(t.bits(e) != 0)
        } else {
            None
        }
    }

    /// The string at path (the host hands valid UTF-8).
    pub fn str(&self, path: &str) -> Option<&'a str> {
        let (e, t) = self.find(path.as_bytes());
        let e = e?;
        if t.kind(e) != Kind::String {
            return None;
        }
        std::str::from_utf8(t.string(e)?).ok()
    }

    /// Whether the string at path is s.
    pub fn equals(&self, path: &str, s: &str) -> bool {
        self.str(path) == Some(s)
    }

    /// The members of the object or array at path.
    pub fn count(&self, path: &str) -> Option<u32> {
        let (e, t) = self.find(path.as_bytes());
        let e = e?;
        match t.kind(e) {
            Kind::Object | Kind::Array => Some(t.bits(e) as u32),
            _ => None,
        }
    }
}

/// A call of a condition or an action: its event and its header.
pub struct Call<'a> {
    pub event: View<'a>,
    pub pass: u32,
    /// The step's try, from 1 (0 for a condition).
    pub attempt: u32,
    /// The event's time, Unix nanoseconds.
    pub time: i64,
    header: [&'a [u8]; 5],
}

impl<'a> Call<'a> {
    // The header's strings are checked as UTF-8 when read, not at each
    // call: most conditions read none of them.
    fn text(&self, i: usize) -> &'a str {
        std::str::from_utf8(self.header[i]).unwrap_or("")
    }
    pub fn topic(&self) -> &'a str {
        self.text(0)
    }
    pub fn rule(&self) -> &'a str {
        self.text(1)
    }
    pub fn step(&self) -> &'a str {
        self.text(2)
    }
    pub fn run(&self) -> &'a str {
        self.text(3)
    }
    /// The idempotency key: the same for each repeat of one step of one pass.
    pub fn key(&self) -> &'a str {
        self.text(4)
    }
}

fn parse_call(b: &[u8]) -> Option<Call<'_>> {
    if b.len() < 16 {
        return None;
    }
    let h = ld32(b, 0) as usize;
    if h < 16 || h > b.len() {
        return None;
    }
    let mut o = 16usize;
    let mut s: [&[u8]; 5] = [b""; 5];
    for x in s.iter_mut() {
        if o + 2 > h {
            return None;
        }
        let l = ld16(b, o) as usize;
        o += 2;
        if o + l > h {
            return None;
        }
        *x = &b[o..o + l];
        o += l;
    }
    let attempt = if o + 4 <= h { ld32(b, o) } else { 0 };
    let ctx = if o + 8 <= h { ld32(b, o + 4) as usize } else { 0 };
    let (t, c) = if ctx == 0 {
        (Table::new(&b[h..])?, None)
    } else {
        if ctx < h || ctx > b.len() {
            return None;
        }
        (Table::new(&b[h..ctx])?, Some(Table::new(&b[ctx..])?))
    };
    Some(Call {
        event: View { t, ctx: c, event: true },
        pass: ld32(b, 4),
        attempt,
        time: ld64(b, 8) as i64,
        header: s,
    })
}

/// A step's config, as configure sees it.
pub struct Config<'a> {
    pub view: View<'a>,
    /// The function being configured.
    pub function: &'a str,
}

impl<'a> Config<'a> {
    /// The config's raw JSON, byte for byte.
    pub fn raw(&self) -> &'a [u8] {
        let b = self.view.t.b;
        if b[3] & 1 == 0 {
            return b"";
        }
        let (off, len) = (ld32(b, 8) as usize, ld32(b, 12) as usize);
        b.get(off..off + len).unwrap_or(b"")
    }

    /// The error every SDK gives for a missing or mistyped key.
    fn needs(&self, key: &str, want: &str) -> Error {
        let (e, t) = self.view.find(key.as_bytes());
        let e = match e {
            None => return Error::new(format!("{}: config needs \"{}\"", self.function, key)),
            Some(e) => e,
        };
        let got = match t.kind(e) {
            Kind::String => {
                let s = t.string(e).unwrap_or(b"");
                if s.len() > 40 {
                    format!("a string of {} bytes", s.len())
                } else {
                    format!("the string \"{}\"", String::from_utf8_lossy(s))
                }
            }
            Kind::Int => format!("the number {}", t.bits(e) as i64),
            Kind::Float => "a fractional number".to_string(),
            Kind::Bool => (if t.bits(e) != 0 { "true" } else { "false" }).to_string(),
            Kind::Null => "null".to_string(),
            Kind::Object => "an object".to_string(),
            Kind::Array => "an array".to_string(),
            Kind::Missing => "a value".to_string(),
        };
        Error::new(format!("{}: config \"{}\" must be {}, not {}", self.function, key, want, got))
    }

    pub fn require_str(&self, key: &str) -> Result<&'a str, Error> {
        self.view.str(key).ok_or_else(|| self.needs(key, "a string"))
    }

    pub fn require_f64(&self, key: &str) -> Result<f64, Error> {
        self.view.float(key).ok_or_else(|| self.needs(key, "a number"))
    }

    pub fn require_i64(&self, key: &str) -> Result<i64, Error> {
        self.view.int(key).ok_or_else(|| self.needs(key, "a whole number"))
    }

    /// The string at key, or otherwise.
    pub fn str_or(&self, key: &str, otherwise: &'a str) -> &'a str {
        self.view.str(key).unwrap_or(otherwise)
    }
}

// ---- registration ----

/// A condition's answer for one call.
pub type When = Box<dyn Fn(&Call) -> Result<bool, Error>>;
/// An action's result for one call (JSON, or text; empty for none).
pub type Act = Box<dyn Fn(&Call) -> Result<Vec<u8>, Error>>;

enum Factory {
    Condition(Box<dyn Fn(&Config) -> Result<When, Error>>),
    Action(Box<dyn Fn(&Config) -> Result<Act, Error>>),
}

struct Func {
    name: String,
    doc: String,
    example: String,
    schema: String,
    needs: Vec<String>,
    factory: Rc<Factory>,
}

/// A registered function: say what it needs and show an example.
#[derive(Clone, Copy)]
pub struct Function(usize);

impl Function {
    fn with(self, f: impl FnOnce(&mut Func)) -> Function {
        STATE.with(|s| f(&mut s.borrow_mut().functions[self.0]));
        self
    }
    /// A capability it needs: "publish", "kv", "fire" or "http".
    pub fn needs(self, capability: &str) -> Function {
        self.with(|f| f.needs.push(capability.to_string()))
    }
    pub fn doc(self, doc: &str) -> Function {
        self.with(|f| f.doc = doc.to_string())
    }
    pub fn example(self, json: &str) -> Function {
        self.with(|f| f.example = json.to_string())
    }
    pub fn schema(self, json: &str) -> Function {
        self.with(|f| f.schema = json.to_string())
    }
}

enum Handler {
    When(When),
    Act(Act),
}

struct Slot {
    // Rc: a call holds its handler while slots may grow (a handler that
    // configures another function, a native test calling in).
    h: Option<Rc<Handler>>,
    gen: u32,
}

#[derive(Default)]
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // the exports' buffers
struct State {
    name: String,
    version: String,
    functions: Vec<Func>,
    describe: Vec<u8>,
    exchange: Vec<u8>,
    error: Vec<u8>,
    result: Vec<u8>,
    slots: Vec<Slot>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// Names the plugin (its describe document's name and version).
pub fn plugin(name: &str, version: &str) {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.name = name.to_string();
        s.version = version.to_string();
    });
}

fn register(name: &str, factory: Factory) -> Function {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.functions.push(Func {
            name: name.to_string(),
            doc: String::new(),
            example: String::new(),
            schema: String::new(),
            needs: Vec::new(),
            factory: Rc::new(factory),
        });
        Function(s.functions.len() - 1)
    })
}

/// Registers a condition: configure turns a config into what answers
/// each call, once.
pub fn condition<F>(name: &str, configure: F) -> Function
where
    F: Fn(&Config) -> Result<When, Error> + 'static,
{
    register(name, Factory::Condition(Box::new(configure)))
}

/// Registers an action.
pub fn action<F>(name: &str, configure: F) -> Function
where
    F: Fn(&Config) -> Result<Act, Error> + 'static,
{
    register(name, Factory::Action(Box::new(configure)))
}

/// Runs the plugin's init once, from the module's `_initialize`: use
/// `ruled::main!(init)` rather than calling it.
#[doc(hidden)]
pub fn __initialize(init: fn()) {
    // Natively (tests) the default hook prints too: a test's own failed
    // assertion must still say why.
    #[cfg(not(target_arch = "wasm32"))]
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        #[cfg(not(target_arch = "wasm32"))]
        prev(info);
        // A panic is the plugin's crash: its message is what the host
        // reports, on one line, then the call traps (panic=abort).
        let msg = if let Some(s) = info.payload().downcast_ref::<&str>() {
            s.to_string()
        } else if let Some(s) = info.payload().downcast_ref::<String>() {
            s.clone()
        } else {
            "(no message)".to_string()
        };
        let line = format!("panic: {}", msg.replace('\n', " "));
        unsafe { host_log(4, line.as_ptr(), line.len() as i32) };
    }));
    init();
}

/// `ruled::main!(init)` exports the module's `_initialize`, which runs
/// init (where the plugin registers its functions) once.
#[macro_export]
macro_rules! main {
    ($init:path) => {
        #[no_mangle]
        pub extern "C" fn _initialize() {
            $crate::__initialize($init)
        }
    };
}

// ---- exports (abi/ABI.md §2) ----

#[cfg(target_arch = "wasm32")]
fn pack(p: *const u8, n: usize) -> u64 {
    (p as usize as u64) << 32 | n as u64
}

fn json_string(b: &mut Vec<u8>, s: &[u8]) {
    const HEX: &[u8] = b"0123456789abcdef";
    b.push(b'"');
    for &c in s {
        match c {
            b'"' | b'\\' => b.extend_from_slice(&[b'\\', c]),
            b'\n' => b.extend_from_slice(b"\\n"),
            b'\r' => b.extend_from_slice(b"\\r"),
            b'\t' => b.extend_from_slice(b"\\t"),
            c if c < 0x20 => b.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[(c >> 4) as usize], HEX[(c & 15) as usize]]),
            c => b.push(c),
        }
    }
    b.push(b'"');
}

#[cfg(target_arch = "wasm32")]
#[no_mangle]
pub extern "C" fn ruled_abi_version() -> i32 {
    ABI_VERSION
}

#[cfg(target_arch = "wasm32")]
#[no_mangle]
pub extern "C" fn ruled_alloc(size: i32) -> *mut u8 {
    if size < 0 || size > (1 << 30) - 8192 {
        return std::ptr::null_mut();
    }
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        let n = (size as usize).max(16);
        if s.exchange.len() < n {
            s.exchange = vec![0; n];
        }
        s.exchange.as_mut_ptr()
    })
}

#[cfg(target_arch = "wasm32")]
#[no_mangle]
pub extern "C" fn ruled_describe() -> u64 {
    let b = describe();
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.describe = b;
        pack(s.describe.as_ptr(), s.describe.len())
    })
}

/// describe is the describe document (abi/ABI.md §5).
fn describe() -> Vec<u8> {
    STATE.with(|s| {
        let s = s.borrow();
        let mut b = Vec::new();
        b.extend_from_slice(format!("{{\"abi\":{}", ABI_VERSION).as_bytes());
        for (k, v) in [("name", &s.name), ("version", &s.version)] {
            if !v.is_empty() {
                b.extend_from_slice(format!(",\"{}\":", k).as_bytes());
                json_string(&mut b, v.as_bytes());
            }
        }
        b.extend_from_slice(b",\"functions\":[");
        for (i, f) in s.functions.iter().enumerate() {
            if i > 0 {
                b.push(b',');
            }
            b.extend_from_slice(b"{\"name\":");
            json_string(&mut b, f.name.as_bytes());
            b.extend_from_slice(match *f.factory {
                Factory::Condition(_) => b",\"kind\":\"condition\"",
                Factory::Action(_) => b",\"kind\":\"action\"",
            });
            for (k, v) in [("doc", &f.doc), ("example", &f.example), ("schema", &f.schema)] {
                if !v.is_empty() {
                    b.extend_from_slice(format!(",\"{}\":", k).as_bytes());
                    json_string(&mut b, v.as_bytes());
                }
            }
            b.extend_from_slice(b",\"needs\":[");
            for (j, n) in f.needs.iter().enumerate() {
                if j > 0 {
                    b.push(b',');
                }
                json_string(&mut b, n.as_bytes());
            }
            b.extend_from_slice(b"]}");
        }
        b.extend_from_slice(b"]}");
        b
    })
}

fn set_error(text: &str) {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.error.clear();
        s.error.extend_from_slice(text.as_bytes());
    });
}

const SLOT_BITS: u32 = 20;
const SLOT_MASK: u32 = (1 << SLOT_BITS) - 1;

/// input is the exchange buffer's bytes the host wrote: ptr must be the
/// buffer ruled_alloc handed out, len within it.
#[cfg(target_arch = "wasm32")]
fn input<'a>(ptr: *const u8, len: u32) -> Option<&'a [u8]> {
    STATE.with(|s| {
        let s = s.borrow();
        let base = s.exchange.as_ptr() as usize;
        let p = ptr as usize;
        match p.checked_add(len as usize) {
            Some(end) if p >= base && end <= base + s.exchange.len() => {}
            _ => return None,
        }
        // The host's input lives until the next ruled_alloc, which comes
        // only after this call returns.
        Some(unsafe { std::slice::from_raw_parts(ptr, len as usize) })
    })
}

fn pack_status(status: u32, handle: u32) -> u64 {
    (status as u64) << 32 | handle as u64
}

#[cfg(target_arch = "wasm32")]
#[no_mangle]
pub extern "C" fn ruled_configure(ptr: *const u8, len: u32) -> u64 {
    match input(ptr, len) {
        Some(b) => configure(b),
        None => {
            set_error("configure: malformed input");
            pack_status(3, 0)
        }
    }
}

fn configure(b: &[u8]) -> u64 {
    if b.len() < 2 {
        set_error("configure: malformed input");
        return pack_status(3, 0);
    }
    let nl = ld16(b, 0) as usize;
    let view = if 2 + nl <= b.len() { Table::new(&b[2 + nl..]) } else { None };
    let (name, t) = match (std::str::from_utf8(b.get(2..2 + nl).unwrap_or(b"")), view) {
        (Ok(n), Some(t)) => (n, t),
        _ => {
            set_error("configure: malformed input");
            return pack_status(3, 0);
        }
    };
    // The factory runs outside the state's borrow: it may log or fail.
    let f: Option<Rc<Factory>> = STATE.with(|s| s.borrow().functions.iter().find(|f| f.name == name).map(|f| f.factory.clone()));
    let f = match f {
        Some(f) => f,
        None => {
            let mut e = b"unknown function ".to_vec();
            json_string(&mut e, name.as_bytes());
            set_error(&String::from_utf8_lossy(&e));
            return pack_status(5, 0);
        }
    };
    let cfg = Config { view: View { t, ctx: None, event: false }, function: name };
    let h = match &*f {
        Factory::Condition(c) => c(&cfg).map(Handler::When),
        Factory::Action(a) => a(&cfg).map(Handler::Act),
    };
    match h {
        Err(e) => {
            set_error(&e.text);
            pack_status(4, 0)
        }
        Ok(h) => STATE.with(|s| {
            let mut s = s.borrow_mut();
            let i = match s.slots.iter().position(|x| x.h.is_none()) {
                Some(i) => i,
                None => {
                    if s.slots.len() as u32 >= SLOT_MASK {
                        s.error = b"configure: too many handles".to_vec();
                        return pack_status(2, 0);
                    }
                    s.slots.push(Slot { h: None, gen: 0 });
                    s.slots.len() - 1
                }
            };
            s.slots[i].h = Some(Rc::new(h));
            pack_status(0, s.slots[i].gen << SLOT_BITS | (i as u32 + 1))
        }),
    }
}

fn slot_of(s: &State, handle: u32) -> Option<usize> {
    let i = (handle & SLOT_MASK).wrapping_sub(1) as usize;
    match s.slots.get(i) {
        Some(x) if x.h.is_some() && x.gen == handle >> SLOT_BITS => Some(i),
        _ => None,
    }
}

#[no_mangle]
pub extern "C" fn ruled_release(handle: u32) {
    // Dropped outside the borrow: a closure's Drop may call back in.
    let gone = STATE.with(|s| {
        let mut s = s.borrow_mut();
        let i = slot_of(&s, handle)?;
        let h = s.slots[i].h.take();
        s.slots[i].gen = (s.slots[i].gen + 1) & (u32::MAX >> SLOT_BITS);
        h
    });
    drop(gone);
}

/// begin finds the handler of a call, shared so that the call runs
/// outside the state's borrow.
fn begin(handle: u32, action: bool) -> Result<Rc<Handler>, i32> {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        let i = match slot_of(&s, handle) {
            Some(i) => i,
            None => {
                s.error = format!("no such handle {}", handle).into_bytes();
                return Err(6);
            }
        };
        let is_action = matches!(s.slots[i].h.as_deref(), Some(Handler::Act(_)));
        if is_action != action {
            s.error = (if action { "handle is a condition, not an action" } else { "handle is an action, not a condition" })
                .as_bytes()
                .to_vec();
            return Err(5);
        }
        Ok(s.slots[i].h.clone().unwrap())
    })
}

#[cfg(target_arch = "wasm32")]
#[no_mangle]
pub extern "C" fn ruled_when(handle: u32, ptr: *const u8, len: u32) -> i32 {
    when(handle, input(ptr, len))
}

fn when(handle: u32, input: Option<&[u8]>) -> i32 {
    dispatch(handle, input, false)
}

#[cfg(target_arch = "wasm32")]
#[no_mangle]
pub extern "C" fn ruled_act(handle: u32, ptr: *const u8, len: u32) -> i32 {
    act(handle, input(ptr, len))
}

fn act(handle: u32, input: Option<&[u8]>) -> i32 {
    dispatch(handle, input, true)
}

/// dispatch runs a call of the handler under handle — a condition's or
/// an action's, as action says — and answers its status: the handle and
/// the input checked, the closure called outside the state's borrow, its
/// error or result kept for ruled_error and ruled_result.
fn dispatch(handle: u32, input: Option<&[u8]>, action: bool) -> i32 {
    if action {
        STATE.with(|s| s.borrow_mut().result.clear());
    }
    let h = match begin(handle, action) {
        Ok(x) => x,
        Err(st) => return st,
    };
    let call = match input.and_then(parse_call) {
        Some(c) => c,
        None => {
            set_error("malformed call input");
            return 3;
        }
    };
    let r = match &*h {
        Handler::When(w) => w(&call).map(|met| (met as i32, None)),
        Handler::Act(a) => a(&call).map(|out| (0, Some(out))),
    };
    match r {
        Ok((st, out)) => {
            if let Some(out) = out {
                STATE.with(|s| s.borrow_mut().result = out);
            }
            st
        }
        Err(e) => {
            set_error(&e.text);
            if e.permanent && action {
                11
            } else {
                2
            }
        }
    }
}

#[cfg(target_arch = "wasm32")]
#[no_mangle]
pub extern "C" fn ruled_result() -> u64 {
    STATE.with(|s| {
        let s = s.borrow();
        if s.result.is_empty() {
            0
        } else {
            pack(s.result.as_ptr(), s.result.len())
        }
    })
}

#[cfg(target_arch = "wasm32")]
#[no_mangle]
pub extern "C" fn ruled_error() -> u64 {
    STATE.with(|s| {
        let s = s.borrow();
        pack(s.error.as_ptr(), s.error.len())
    })
}

// ---- host functions (abi/ABI.md §3) ----

/// Log levels.
pub const TRACE: i32 = 0;
pub const DEBUG: i32 = 1;
pub const INFO: i32 = 2;
pub const WARN: i32 = 3;
pub const ERROR: i32 = 4;

pub fn log(level: i32, message: &str) {
    unsafe { host_log(level, message.as_ptr(), message.len() as i32) }
}

/// Unix nanoseconds: the event's time in a condition, the host's clock in an action.
pub fn now() -> i64 {
    unsafe { host_now() }
}

/// The event's JSON.
pub fn event_raw() -> Vec<u8> {
    let mut n = unsafe { host_event_raw(std::ptr::null_mut(), 0) };
    for _ in 0..4 {
        if n <= 0 {
            break;
        }
        let mut b = vec![0u8; n as usize];
        let m = unsafe { host_event_raw(b.as_mut_ptr(), n) };
        if m == n {
            return b;
        }
        n = m;
    }
    Vec::new()
}

pub fn publish(topic: &str, payload: &[u8]) -> Result<(), Status> {
    status_of(unsafe { host_publish(topic.as_ptr(), topic.len() as i32, payload.as_ptr(), payload.len() as i32) }).map(|_| ())
}

/// The value of key, or None when there is none.
pub fn kv_get(key: &str) -> Result<Option<Vec<u8>>, Status> {
    let mut cap = 256usize;
    for _ in 0..4 {
        let mut b = vec![0u8; cap];
        let n = unsafe { host_kv_get(key.as_ptr(), key.len() as i32, b.as_mut_ptr(), cap as i32) };
        if n == -8 {
            return Ok(None);
        }
        let n = status_of(n)? as usize;
        if n <= cap {
            b.truncate(n);
            return Ok(Some(b));
        }
        cap = n; // changed meanwhile by another instance: again
    }
    Err(Status::UNAVAILABLE)
}

pub fn kv_set(key: &str, value: &[u8]) -> Result<(), Status> {
    status_of(unsafe { host_kv_set(key.as_ptr(), key.len() as i32, value.as_ptr(), value.len() as i32) }).map(|_| ())
}

pub fn kv_delete(key: &str) -> Result<(), Status> {
    status_of(unsafe { host_kv_delete(key.as_ptr(), key.len() as i32) }).map(|_| ())
}

/// Starts a run of rule with payload as its event; the run's id.
pub fn fire(rule: &str, payload: &[u8]) -> Result<String, Status> {
    let mut out = vec![0u8; 128];
    let n = status_of(unsafe {
        host_fire(rule.as_ptr(), rule.len() as i32, payload.as_ptr(), payload.len() as i32, out.as_mut_ptr(), 128)
    })? as usize;
    out.truncate(n.min(128));
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// An outbound request (method "" is GET).
pub struct Request<'a> {
    pub method: &'a str,
    pub url: &'a str,
    pub headers: &'a [(&'a str, &'a str)],
    pub body: &'a [u8],
}

pub struct Response {
    pub status: u32,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The first header of that name, compared without case; "" when none.
    pub fn header(&self, name: &str) -> &str {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map_or("", |(_, v)| v.as_str())
    }
}

pub fn http(r: &Request) -> Result<Response, Status> {
    let mut req = Vec::new();
    let put = |b: &[u8], req: &mut Vec<u8>| {
        req.extend_from_slice(&(b.len() as u32).to_le_bytes());
        req.extend_from_slice(b);
    };
    put(r.method.as_bytes(), &mut req);
    put(r.url.as_bytes(), &mut req);
    req.extend_from_slice(&(r.headers.len() as u32).to_le_bytes());
    for (k, v) in r.headers {
        put(k.as_bytes(), &mut req);
        put(v.as_bytes(), &mut req);
    }
    put(r.body, &mut req);
    let n = status_of(unsafe { host_http_request(req.as_ptr(), req.len() as i32) })? as usize;
    let mut b = vec![0u8; n];
    if unsafe { host_http_response(b.as_mut_ptr(), n as i32) } != n as i32 || n < 8 {
        return Err(Status::UNAVAILABLE);
    }
    let nh = ld32(&b, 4) as usize;
    let mut o = 8;
    let mut headers = Vec::new();
    for _ in 0..nh {
        let mut kv = [String::new(), String::new()];
        for x in kv.iter_mut() {
            if o + 4 > n {
                return Err(Status::UNAVAILABLE);
            }
            let l = ld32(&b, o) as usize;
            o += 4;
            if o + l > n {
                return Err(Status::UNAVAILABLE);
            }
            *x = String::from_utf8_lossy(&b[o..o + l]).into_owned();
            o += l;
        }
        let [k, v] = kv;
        headers.push((k, v));
    }
    Ok(Response { status: ld32(&b, 0), headers, body: b.split_off(o) })
}

mod tmpl;
pub use tmpl::Template;

#[cfg(not(target_arch = "wasm32"))]
pub mod native;
