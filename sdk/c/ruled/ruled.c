/*
 * ruled.c — the C SDK's exports (abi/ABI.md §2), views and host calls.
 * Built with the plugin: clang --target=wasm32-wasi -mexec-model=reactor.
 */
#include "ruled.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- host imports (module "ruled") ---- */

#define IMPORT(name) __attribute__((import_module("ruled"), import_name(name)))
IMPORT("log") void host_log(int32_t level, const void *p, int32_t n);
IMPORT("now") int64_t host_now(void);
IMPORT("event_raw") int32_t host_event_raw(void *p, int32_t cap);
IMPORT("publish") int32_t host_publish(const void *t, int32_t tn, const void *p, int32_t pn);
IMPORT("kv_get") int32_t host_kv_get(const void *k, int32_t kn, void *b, int32_t cap);
IMPORT("kv_set") int32_t host_kv_set(const void *k, int32_t kn, const void *v, int32_t vn);
IMPORT("kv_delete") int32_t host_kv_delete(const void *k, int32_t kn);
IMPORT("fire") int32_t host_fire(const void *r, int32_t rn, const void *p, int32_t pn, void *o, int32_t cap);
IMPORT("http_request") int32_t host_http_request(const void *p, int32_t n);
IMPORT("http_response") int32_t host_http_response(void *p, int32_t cap);

#define EXPORT(name) __attribute__((export_name(name)))

/* ---- bytes ---- */

typedef struct {
    char *p;
    size_t n, cap;
} buf;

/* buf_grow makes room for more bytes. Out of memory (the plugin's
 * memory cap) is a crash, reported as such: a truncated result or
 * rendering that says it succeeded would be worse. */
static int buf_grow(buf *b, size_t more) {
    if (b->n + more <= b->cap) return 1;
    if (more > (size_t)-1 / 4 - b->n) ruled_panic("out of memory: a buffer past the address space");
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + more) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) ruled_panic("out of memory");
    b->p = p;
    b->cap = cap;
    return 1;
}

static void buf_put(buf *b, const void *p, size_t n) {
    if (n && buf_grow(b, n)) {
        memcpy(b->p + b->n, p, n);
        b->n += n;
    }
}

static void buf_puts(buf *b, const char *s) { buf_put(b, s, strlen(s)); }

static void buf_u64(buf *b, uint64_t v) {
    char d[24];
    int i = sizeof d;
    do {
        d[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    buf_put(b, d + i, sizeof d - i);
}

/* buf_json_string appends s as a JSON string, escaped as Go's
 * abi.AppendJSONString does. */
static void buf_json_string(buf *b, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    buf_puts(b, "\"");
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        buf_put(b, s + start, i - start);
        start = i + 1;
        char e[6] = {'\\', (char)c, 0, 0, 0, 0};
        switch (c) {
        case '"': case '\\': buf_put(b, e, 2); break;
        case '\n': buf_put(b, "\\n", 2); break;
        case '\r': buf_put(b, "\\r", 2); break;
        case '\t': buf_put(b, "\\t", 2); break;
        default:
            e[1] = 'u'; e[2] = '0'; e[3] = '0'; e[4] = hex[c >> 4]; e[5] = hex[c & 15];
            buf_put(b, e, 6);
        }
    }
    buf_put(b, s + start, n - start);
    buf_puts(b, "\"");
}

static uint16_t ld16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t ld32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t ld64(const uint8_t *p) { return (uint64_t)ld32(p) | (uint64_t)ld32(p + 4) << 32; }

/* ---- a call's borrowed memory: freed when the call returns ---- */

static void **lent;
static size_t nlent, caplent;

static void *must(void *p) {
    if (!p) ruled_panic("out of memory");
    return p;
}

static void *lend(size_t n) {
    void *p = must(malloc(n ? n : 1));
    if (nlent == caplent) {
        size_t cap = caplent ? caplent * 2 : 8;
        void **l = realloc(lent, cap * sizeof *l);
        if (!l) {
            free(p);
            return 0;
        }
        lent = l;
        caplent = cap;
    }
    lent[nlent++] = p;
    return p;
}

static void return_lent(void) {
    for (size_t i = 0; i < nlent; i++) free(lent[i]);
    nlent = 0;
}

/* ---- views (abi/ABI.md §4) ---- */

#define HEADER 16u

static int view_reset(ruled_view *v, const uint8_t *p, uint32_t n) {
    memset(v, 0, sizeof *v);
    v->p = p;
    v->n = n;
    if (n < HEADER || p[0] != 'R' || p[1] != 'V' || p[2] != 1) return 0;
    uint32_t count = ld32(p + 4);
    if ((uint64_t)count * 16 > (uint64_t)(n - HEADER)) return 0;
    v->count = count;
    return 1;
}

static int prefixed(const char *path, size_t n, const char *pre) {
    size_t m = strlen(pre);
    return n > m && memcmp(path, pre, m) == 0;
}

static int in_context(const char *path, size_t n) {
    return prefixed(path, n, "steps.") || prefixed(path, n, "vars.") || prefixed(path, n, "states.") ||
           prefixed(path, n, "previous.") || prefixed(path, n, "sun.");
}

/* find_in: the entry of path in a view's table, or NULL. */
static const uint8_t *find_in(const uint8_t *p, uint32_t n, uint32_t count, const char *path, size_t pl) {
    uint32_t lo = 0, hi = count;
    while (lo < hi) {
        uint32_t m = (lo + hi) / 2;
        const uint8_t *e = p + HEADER + (size_t)m * 16;
        uint32_t po = ld32(e);
        uint32_t pn = ld16(e + 4);
        if ((uint64_t)po + pn > n) return 0;
        size_t k = pl < pn ? pl : pn;
        int c = memcmp(path, p + po, k);
        if (c == 0) c = pl < pn ? -1 : (pl > pn ? 1 : 0);
        if (c == 0) return e;
        if (c > 0) lo = m + 1;
        else hi = m;
    }
    return 0;
}

typedef struct {
    const uint8_t *e;   /* the entry, NULL when missing */
    const uint8_t *p;   /* the view it is in */
    uint32_t n, count;
} found;

/* find_n looks path up by the one rule (abi/ABI.md §4.1): below steps.,
 * vars., states., previous. or sun. in the run's context, else in the
 * event (or the config). */
static found find_n(const ruled_view *v, const char *path, size_t pl) {
    found f = {0, v->p, v->n, v->count};
    if (v->event && in_context(path, pl)) {
        f.p = v->cp;
        f.n = v->cn;
        f.count = v->cc;
        f.e = v->cc ? find_in(v->cp, v->cn, v->cc, path, pl) : 0;
        return f;
    }
    f.e = find_in(v->p, v->n, v->count, path, pl);
    return f;
}

static found find(const ruled_view *v, const char *path) { return find_n(v, path, strlen(path)); }

ruled_kind ruled_kind_of(const ruled_view *v, const char *path) {
    found f = find(v, path);
    return f.e ? (ruled_kind)f.e[6] : RULED_MISSING;
}

static double f64_of(uint64_t bits) {
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

int ruled_float(const ruled_view *v, const char *path, double *out) {
    found f = find(v, path);
    if (!f.e) return 0;
    if (f.e[6] == RULED_INT) {
        *out = (double)(int64_t)ld64(f.e + 8);
        return 1;
    }
    if (f.e[6] == RULED_FLOAT) {
        *out = f64_of(ld64(f.e + 8));
        return 1;
    }
    return 0;
}

#define TWO63 9223372036854775808.0

int ruled_int(const ruled_view *v, const char *path, int64_t *out) {
    found f = find(v, path);
    if (!f.e) return 0;
    if (f.e[6] == RULED_INT) {
        *out = (int64_t)ld64(f.e + 8);
        return 1;
    }
    if (f.e[6] == RULED_FLOAT) {
        double d = f64_of(ld64(f.e + 8));
        if (d == __builtin_trunc(d) && d >= -TWO63 && d < TWO63) {
            *out = (int64_t)d;
            return 1;
        }
    }
    return 0;
}

int ruled_bool(const ruled_view *v, const char *path, int *out) {
    found f = find(v, path);
    if (!f.e || f.e[6] != RULED_BOOL) return 0;
    *out = ld64(f.e + 8) != 0;
    return 1;
}

int ruled_string(const ruled_view *v, const char *path, ruled_str *out) {
    found f = find(v, path);
    if (!f.e || f.e[6] != RULED_STRING) return 0;
    uint32_t off = ld32(f.e + 8), len = ld32(f.e + 12); /* length<<32 | offset */
    if ((uint64_t)off + len > f.n) return 0;
    out->p = (const char *)f.p + off;
    out->n = len;
    return 1;
}

int ruled_equals(const ruled_view *v, const char *path, const char *s) {
    ruled_str x;
    size_t n = strlen(s);
    return ruled_string(v, path, &x) && x.n == n && memcmp(x.p, s, n) == 0;
}

int ruled_count(const ruled_view *v, const char *path) {
    found f = find(v, path);
    if (!f.e || (f.e[6] != RULED_OBJECT && f.e[6] != RULED_ARRAY)) return -1;
    return (int)ld32(f.e + 8);
}

/* ---- errors and results ---- */

static buf errtext;
static int failed, permanent;
static buf result;

int ruled_failn(const char *text, size_t n) {
    errtext.n = 0;
    buf_put(&errtext, text, n);
    failed = 1;
    return RULED_FAILED;
}

int ruled_fail(const char *text) { return ruled_failn(text, strlen(text)); }

int ruled_fail_permanent(const char *text) {
    ruled_fail(text);
    permanent = 1;
    return RULED_FAILED;
}

void ruled_result(const void *p, size_t n) {
    result.n = 0;
    buf_put(&result, p, n);
}

void ruled_panic(const char *message) {
    buf b = {0};
    buf_puts(&b, "panic: ");
    buf_puts(&b, message);
    host_log(RULED_LEVEL_ERROR, b.p, (int32_t)b.n);
    __builtin_trap();
}

/* ---- configs ---- */

ruled_str ruled_config_raw(const ruled_config *c) {
    ruled_str s = {"", 0};
    const ruled_view *v = &c->view;
    if (v->n < HEADER || (v->p[3] & 1) == 0) return s;
    uint32_t off = ld32(v->p + 8), len = ld32(v->p + 12);
    if ((uint64_t)off + len > v->n) return s;
    s.p = (const char *)v->p + off;
    s.n = len;
    return s;
}

/* needs fails configure for key, missing or not what it wants, in the
 * words every SDK uses: `<function>: config needs "<key>"`, or
 * `<function>: config "<key>" must be a number, not the string "high"`. */
static int needs(const ruled_config *c, const char *key, const char *want) {
    buf b = {0};
    buf_puts(&b, c->function);
    found f = find(&c->view, key);
    if (!f.e) {
        buf_puts(&b, ": config needs \"");
        buf_puts(&b, key);
        buf_puts(&b, "\"");
    } else {
        buf_puts(&b, ": config \"");
        buf_puts(&b, key);
        buf_puts(&b, "\" must be ");
        buf_puts(&b, want);
        buf_puts(&b, ", not ");
        ruled_str s = {"", 0};
        int64_t n = 0;
        int t = 0;
        switch (f.e[6]) {
        case RULED_STRING:
            ruled_string(&c->view, key, &s);
            if (s.n > 40) {
                buf_puts(&b, "a string of ");
                buf_u64(&b, s.n);
                buf_puts(&b, " bytes");
            } else {
                buf_puts(&b, "the string \"");
                buf_put(&b, s.p, s.n);
                buf_puts(&b, "\"");
            }
            break;
        case RULED_INT:
            ruled_int(&c->view, key, &n);
            buf_puts(&b, "the number ");
            if (n < 0) {
                buf_puts(&b, "-");
                buf_u64(&b, (uint64_t)0 - (uint64_t)n);
            } else {
                buf_u64(&b, (uint64_t)n);
            }
            break;
        case RULED_FLOAT: buf_puts(&b, "a fractional number"); break;
        case RULED_BOOL:
            ruled_bool(&c->view, key, &t);
            buf_puts(&b, t ? "true" : "false");
            break;
        case RULED_NULL: buf_puts(&b, "null"); break;
        case RULED_OBJECT: buf_puts(&b, "an object"); break;
        case RULED_ARRAY: buf_puts(&b, "an array"); break;
        default: buf_puts(&b, "a value");
        }
    }
    ruled_failn(b.p, b.n);
    free(b.p);
    return 0;
}

int ruled_require_string(const ruled_config *c, const char *key, ruled_str *out) {
    return ruled_string(&c->view, key, out) ? 1 : needs(c, key, "a string");
}

int ruled_require_float(const ruled_config *c, const char *key, double *out) {
    return ruled_float(&c->view, key, out) ? 1 : needs(c, key, "a number");
}

int ruled_require_int(const ruled_config *c, const char *key, int64_t *out) {
    return ruled_int(&c->view, key, out) ? 1 : needs(c, key, "a whole number");
}

ruled_str ruled_config_string(const ruled_config *c, const char *key, const char *otherwise) {
    ruled_str s;
    if (ruled_string(&c->view, key, &s)) return s;
    s.p = otherwise;
    s.n = (uint32_t)strlen(otherwise);
    return s;
}

/* ---- registration and describe ---- */

struct ruled_function {
    const char *name, *doc, *example, *schema;
    const char *needs[4];
    int nneeds;
    int action;
    ruled_configure_fn configure;
    ruled_when_fn when;
    ruled_act_fn act;
    ruled_release_fn release;
    ruled_function *next;
};

static const char *plugin_name = "", *plugin_version = "";
static ruled_function *functions, **last_function = &functions;
static buf describe_doc;
static int describe_dirty = 1;

void ruled_plugin(const char *name, const char *version) {
    plugin_name = name ? name : "";
    plugin_version = version ? version : "";
    describe_dirty = 1;
}

static ruled_function *reg(const char *name, int action, ruled_configure_fn configure) {
    ruled_function *f = calloc(1, sizeof *f);
    if (!f) ruled_panic("out of memory registering a function");
    f->name = name;
    f->action = action;
    f->configure = configure;
    *last_function = f;
    last_function = &f->next;
    describe_dirty = 1;
    return f;
}

ruled_function *ruled_condition(const char *name, ruled_configure_fn configure, ruled_when_fn when) {
    ruled_function *f = reg(name, 0, configure);
    f->when = when;
    return f;
}

ruled_function *ruled_action(const char *name, ruled_configure_fn configure, ruled_act_fn act) {
    ruled_function *f = reg(name, 1, configure);
    f->act = act;
    return f;
}

void ruled_needs(ruled_function *f, const char *capability) {
    if (f->nneeds < 4) f->needs[f->nneeds++] = capability;
    describe_dirty = 1;
}

void ruled_doc(ruled_function *f, const char *doc) { f->doc = doc; describe_dirty = 1; }
void ruled_example(ruled_function *f, const char *json) { f->example = json; describe_dirty = 1; }
void ruled_schema(ruled_function *f, const char *json) { f->schema = json; describe_dirty = 1; }
void ruled_on_release(ruled_function *f, ruled_release_fn release) { f->release = release; }

static uint64_t pack(const void *p, size_t n) { return (uint64_t)(uintptr_t)p << 32 | (uint64_t)n; }

static void field(buf *b, const char *key, const char *value) {
    if (!value || !*value) return;
    buf_puts(b, ",\"");
    buf_puts(b, key);
    buf_puts(b, "\":");
    buf_json_string(b, value, strlen(value));
}

EXPORT("ruled_abi_version") int32_t ruled_abi_version(void) { return RULED_ABI_VERSION; }

EXPORT("ruled_describe") uint64_t ruled_describe(void) {
    if (describe_dirty) {
        buf *b = &describe_doc;
        b->n = 0;
        buf_puts(b, "{\"abi\":");
        buf_u64(b, RULED_ABI_VERSION);
        field(b, "name", plugin_name);
        field(b, "version", plugin_version);
        buf_puts(b, ",\"functions\":[");
        for (ruled_function *f = functions; f; f = f->next) {
            if (f != functions) buf_puts(b, ",");
            buf_puts(b, "{\"name\":");
            buf_json_string(b, f->name, strlen(f->name));
            buf_puts(b, f->action ? ",\"kind\":\"action\"" : ",\"kind\":\"condition\"");
            field(b, "doc", f->doc);
            field(b, "example", f->example);
            field(b, "schema", f->schema);
            buf_puts(b, ",\"needs\":[");
            for (int i = 0; i < f->nneeds; i++) {
                if (i) buf_puts(b, ",");
                buf_json_string(b, f->needs[i], strlen(f->needs[i]));
            }
            buf_puts(b, "]}");
        }
        buf_puts(b, "]}");
        describe_dirty = 0;
    }
    return pack(describe_doc.p, describe_doc.n);
}

/* ---- the exchange buffer ---- */

static buf exchange;

EXPORT("ruled_alloc") uint32_t ruled_alloc(int32_t size) {
    if (size < 0 || size > (1 << 30) - 8192) return 0;
    size_t n = size < 16 ? 16 : (size_t)size;
    if (exchange.cap < n) {
        free(exchange.p);
        exchange.p = malloc(n);
        exchange.cap = exchange.p ? n : 0;
        if (!exchange.p) return 0;
    }
    return (uint32_t)(uintptr_t)exchange.p;
}

static int in_memory(uint32_t p, uint32_t n) {
    return (uint64_t)p + n <= (uint64_t)__builtin_wasm_memory_size(0) << 16;
}

/* ---- handles: a slot and a generation, so a released one is refused ---- */

#define SLOT_BITS 20
#define SLOT_MASK ((1u << SLOT_BITS) - 1)

typedef struct {
    ruled_function *f; /* NULL: free */
    void *state;
    uint32_t gen;
} slot;

static slot *slots;
static uint32_t nslots, capslots;

static uint32_t new_handle(ruled_function *f, void *state) {
    uint32_t i;
    for (i = 0; i < nslots; i++)
        if (!slots[i].f) break;
    if (i == nslots) {
        if (nslots >= SLOT_MASK) return 0;
        if (nslots == capslots) {
            uint32_t cap = capslots ? capslots * 2 : 16;
            slot *s = realloc(slots, cap * sizeof *s);
            if (!s) return 0;
            slots = s;
            capslots = cap;
        }
        slots[nslots++] = (slot){0, 0, 0};
    }
    slots[i].f = f;
    slots[i].state = state;
    return slots[i].gen << SLOT_BITS | (i + 1);
}

static slot *lookup(uint32_t h) {
    uint32_t i = (h & SLOT_MASK) - 1; /* handle 0 wraps past the end */
    if (i >= nslots || !slots[i].f || slots[i].gen != h >> SLOT_BITS) return 0;
    return &slots[i];
}

EXPORT("ruled_release") void ruled_release(uint32_t h) {
    slot *s = lookup(h);
    if (!s) return;
    if (s->f->release) s->f->release(s->state);
    s->f = 0;
    s->state = 0;
    s->gen = (s->gen + 1) & (0xFFFFFFFFu >> SLOT_BITS);
}

static uint64_t pack_status(uint32_t status, uint32_t handle) { return (uint64_t)status << 32 | handle; }

EXPORT("ruled_configure") uint64_t ruled_configure(uint32_t ptr, uint32_t len) {
    const uint8_t *p = (const uint8_t *)(uintptr_t)ptr;
    ruled_config c;
    if (!in_memory(ptr, len) || len < 2) {
        ruled_fail("configure: malformed input");
        return pack_status(RULED_BAD_INPUT, 0);
    }
    uint32_t nl = ld16(p);
    if (2 + nl > len || !view_reset(&c.view, p + 2 + nl, len - 2 - nl)) {
        ruled_fail("configure: malformed input");
        return pack_status(RULED_BAD_INPUT, 0);
    }
    ruled_function *f;
    for (f = functions; f; f = f->next)
        if (strlen(f->name) == nl && memcmp(f->name, p + 2, nl) == 0) break;
    if (!f) {
        buf b = {0};
        buf_puts(&b, "unknown function ");
        buf_json_string(&b, (const char *)p + 2, nl);
        ruled_failn(b.p, b.n);
        free(b.p);
        return pack_status(RULED_UNKNOWN_FUNCTION, 0);
    }
    c.function = f->name;
    void *state = 0;
    failed = 0;
    if (f->configure && (f->configure(&c, &state) != 0 || failed)) {
        if (!failed) ruled_fail("configure: refused");
        failed = 0;
        return_lent();
        return pack_status(RULED_BAD_CONFIG, 0);
    }
    return_lent();
    uint32_t h = new_handle(f, state);
    if (!h) {
        if (f->release) f->release(state);
        ruled_fail("configure: too many handles");
        return pack_status(RULED_ERROR, 0);
    }
    return pack_status(RULED_OK, h);
}

/* call_reset reads a call's header and views (abi/ABI.md §2). */
static int call_reset(ruled_call *c, const uint8_t *p, uint32_t n) {
    memset(c, 0, sizeof *c);
    if (n < 16) return 0;
    uint32_t h = ld32(p);
    if (h < 16 || h > n) return 0;
    c->pass = ld32(p + 4);
    c->time = (int64_t)ld64(p + 8);
    uint32_t o = 16;
    ruled_str *s[5] = {&c->topic, &c->rule, &c->step, &c->run, &c->key};
    for (int i = 0; i < 5; i++) {
        if ((uint64_t)o + 2 > h) return 0;
        uint32_t l = ld16(p + o);
        o += 2;
        if ((uint64_t)o + l > h) return 0;
        s[i]->p = (const char *)p + o;
        s[i]->n = l;
        o += l;
    }
    c->attempt = (uint64_t)o + 4 <= h ? ld32(p + o) : 0;
    uint32_t ctx = (uint64_t)o + 8 <= h ? ld32(p + o + 4) : 0;
    ruled_view *v = &c->event;
    if (!ctx) {
        int ok = view_reset(v, p + h, n - h);
        v->event = 1; /* no context: steps. and vars. find nothing */
        return ok;
    }
    if (ctx < h || ctx > n || !view_reset(v, p + h, ctx - h)) return 0;
    v->event = 1;
    ruled_view cv;
    if (!view_reset(&cv, p + ctx, n - ctx)) return 0;
    v->cp = cv.p;
    v->cn = cv.n;
    v->cc = cv.count;
    return 1;
}

static int32_t bad_handle(uint32_t h) {
    buf b = {0};
    buf_puts(&b, "no such handle ");
    buf_u64(&b, h);
    ruled_failn(b.p, b.n);
    free(b.p);
    return RULED_BAD_HANDLE;
}

static int32_t begin(uint32_t handle, int action, uint32_t ptr, uint32_t len, ruled_call *c, slot **s) {
    *s = lookup(handle);
    if (!*s) return bad_handle(handle);
    if ((*s)->f->action != action) {
        ruled_fail(action ? "handle is a condition, not an action" : "handle is an action, not a condition");
        return RULED_UNKNOWN_FUNCTION;
    }
    if (!in_memory(ptr, len) || !call_reset(c, (const uint8_t *)(uintptr_t)ptr, len)) {
        ruled_fail("malformed call input");
        return RULED_BAD_INPUT;
    }
    failed = permanent = 0;
    return RULED_OK;
}

EXPORT("ruled_when") int32_t ruled_when(uint32_t handle, uint32_t ptr, uint32_t len) {
    ruled_call c;
    slot *s;
    int32_t st = begin(handle, 0, ptr, len, &c, &s);
    if (st != RULED_OK) return st;
    int met = s->f->when(s->state, &c);
    return_lent();
    if (failed || met < 0) {
        if (!failed) ruled_fail("condition failed");
        failed = permanent = 0;
        return RULED_ERROR;
    }
    return met ? RULED_TRUE : RULED_OK;
}

EXPORT("ruled_act") int32_t ruled_act(uint32_t handle, uint32_t ptr, uint32_t len) {
    ruled_call c;
    slot *s;
    result.n = 0;
    int32_t st = begin(handle, 1, ptr, len, &c, &s);
    if (st != RULED_OK) return st;
    int r = s->f->act(s->state, &c);
    return_lent();
    if (failed || r < 0) {
        if (!failed) ruled_fail("action failed");
        int perm = permanent;
        failed = permanent = 0;
        result.n = 0;
        return perm ? RULED_PERMANENT : RULED_ERROR;
    }
    return RULED_OK;
}

EXPORT("ruled_result") uint64_t ruled_result_export(void) { return result.n ? pack(result.p, result.n) : 0; }

EXPORT("ruled_error") uint64_t ruled_error(void) { return pack(errtext.p, errtext.n); }

/* ---- host calls ---- */

void ruled_logn(int level, const char *message, size_t n) { host_log(level, message, (int32_t)n); }
void ruled_log(int level, const char *message) { host_log(level, message, (int32_t)strlen(message)); }
int64_t ruled_now(void) { return host_now(); }

ruled_str ruled_event_raw(void) {
    ruled_str s = {"", 0};
    int32_t n = host_event_raw(0, 0);
    for (int tries = 0; n > 0 && tries < 4; tries++) {
        char *p = lend((size_t)n);
        if (!p) return s;
        int32_t m = host_event_raw(p, n);
        if (m == n) {
            s.p = p;
            s.n = (uint32_t)n;
            return s;
        }
        n = m; /* cannot change within a call; asked again all the same */
    }
    return s;
}

int ruled_publish(const char *topic, const void *payload, size_t n) {
    return host_publish(topic, (int32_t)strlen(topic), payload, (int32_t)n);
}

int ruled_kv_get(const char *key, ruled_str *out) {
    int32_t kn = (int32_t)strlen(key);
    int32_t cap = 256;
    for (int tries = 0; tries < 4; tries++) {
        char *p = lend((size_t)cap);
        if (!p) return -RULED_TOO_LARGE;
        int32_t n = host_kv_get(key, kn, p, cap);
        if (n < 0) return n;
        if (n <= cap) {
            out->p = p;
            out->n = (uint32_t)n;
            return n;
        }
        cap = n; /* changed meanwhile by another instance: again */
    }
    return -RULED_UNAVAILABLE;
}

int ruled_kv_set(const char *key, const void *value, size_t n) {
    return host_kv_set(key, (int32_t)strlen(key), value, (int32_t)n);
}

int ruled_kv_delete(const char *key) { return host_kv_delete(key, (int32_t)strlen(key)); }

int ruled_fire(const char *rule, const void *payload, size_t n, ruled_str *id) {
    char *out = lend(128);
    if (!out) return -RULED_TOO_LARGE;
    int32_t r = host_fire(rule, (int32_t)strlen(rule), payload, (int32_t)n, out, 128);
    if (r < 0) return r;
    id->p = out;
    id->n = (uint32_t)(r < 128 ? r : 128);
    return 0;
}

static void buf_u32(buf *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    buf_put(b, x, 4);
}

static void buf_lstr(buf *b, const char *p, size_t n) {
    buf_u32(b, (uint32_t)n);
    buf_put(b, p, n);
}

int ruled_http(const char *method, const char *url, const ruled_header *headers, size_t nheaders, const void *body,
               size_t n, ruled_response *resp) {
    buf req = {0};
    method = method ? method : "";
    buf_lstr(&req, method, strlen(method));
    buf_lstr(&req, url, strlen(url));
    buf_u32(&req, (uint32_t)nheaders);
    for (size_t i = 0; i < nheaders; i++) {
        buf_lstr(&req, headers[i].name.p, headers[i].name.n);
        buf_lstr(&req, headers[i].value.p, headers[i].value.n);
    }
    buf_lstr(&req, body, n);
    int32_t len = host_http_request(req.p, (int32_t)req.n);
    free(req.p);
    if (len < 0) return len;
    uint8_t *p = lend((size_t)len);
    if (!p) return -RULED_TOO_LARGE;
    if (host_http_response(p, len) != len || len < 8) return -RULED_UNAVAILABLE;
    memset(resp, 0, sizeof *resp);
    resp->status = (int)ld32(p);
    uint32_t nh = ld32(p + 4), o = 8;
    if (nh > (uint32_t)len / 8) return -RULED_UNAVAILABLE;
    resp->headers = lend((nh ? nh : 1) * sizeof(ruled_header));
    if (!resp->headers) return -RULED_TOO_LARGE;
    for (uint32_t i = 0; i < nh; i++) {
        ruled_str *s[2] = {&resp->headers[i].name, &resp->headers[i].value};
        for (int j = 0; j < 2; j++) {
            if ((uint64_t)o + 4 > (uint32_t)len) return -RULED_UNAVAILABLE;
            uint32_t l = ld32(p + o);
            o += 4;
            if ((uint64_t)o + l > (uint32_t)len) return -RULED_UNAVAILABLE;
            s[j]->p = (const char *)p + o;
            s[j]->n = l;
            o += l;
        }
    }
    resp->nheaders = nh;
    resp->body.p = (const char *)p + o;
    resp->body.n = (uint32_t)len - o;
    return 0;
}

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

ruled_str ruled_response_header(const ruled_response *r, const char *name) {
    ruled_str none = {"", 0};
    size_t n = strlen(name);
    for (uint32_t i = 0; i < r->nheaders; i++) {
        const ruled_str *h = &r->headers[i].name;
        if (h->n != n) continue;
        size_t k = 0;
        while (k < n && lower((unsigned char)h->p[k]) == lower((unsigned char)name[k])) k++;
        if (k == n) return r->headers[i].value;
    }
    return none;
}

/* ---- templates (abi/tmpl: the same bytes Go renders) ---- */

/* go_float appends x as Go's tmpl.AppendJSON does: null for NaN and the
 * infinities; a whole number under 1e15 in full (strconv 'f', -1);
 * anything else as strconv 'g', -1: the shortest digits that read back
 * as x, in %e form when the exponent is under -4 or at least 6 (Go's
 * rule for the shortest 'g'), with at least two exponent digits. */
static void go_float(buf *b, double x) {
    if (x != x || x > 1.7976931348623157e308 || x < -1.7976931348623157e308) {
        buf_puts(b, "null");
        return;
    }
    int neg = __builtin_signbit(x) != 0;
    if (x == 0) {
        buf_puts(b, neg ? "-0" : "0");
        return;
    }
    char s[40], digits[24];
    int nd = 0, exp10 = 0;
    for (int p = 1; p <= 17; p++) {
        snprintf(s, sizeof s, "%.*e", p - 1, x);
        if (strtod(s, 0) == x || p == 17) break;
    }
    /* s is [-]d[.ddd]e±XX */
    const char *c = s + (s[0] == '-');
    for (; *c && *c != 'e'; c++)
        if (*c != '.') digits[nd++] = *c;
    if (*c == 'e') exp10 = atoi(c + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    int dp = exp10 + 1; /* the decimal point after dp digits */
    int whole = x == __builtin_trunc(x) && (x < 1e15 && x > -1e15);
    if (neg) buf_puts(b, "-");
    if (!whole && (exp10 < -4 || exp10 >= 6)) {
        buf_put(b, digits, 1);
        if (nd > 1) {
            buf_puts(b, ".");
            buf_put(b, digits + 1, nd - 1);
        }
        char e[8];
        int a = exp10 < 0 ? -exp10 : exp10;
        snprintf(e, sizeof e, "e%c%02d", exp10 < 0 ? '-' : '+', a);
        buf_puts(b, e);
        return;
    }
    if (dp > 0) {
        for (int i = 0; i < dp; i++) buf_put(b, i < nd ? &digits[i] : "0", 1);
    } else {
        buf_puts(b, "0");
    }
    int frac = nd - dp > 0 ? nd - dp : 0;
    if (frac > 0) {
        buf_puts(b, ".");
        for (int i = 0; i < frac; i++) {
            int j = dp + i;
            buf_put(b, j >= 0 && j < nd ? &digits[j] : "0", 1);
        }
    }
}

typedef struct {
    const char *key; /* unescaped, lent */
    size_t kn;
    long index;
    const uint8_t *e;
    const char *path; /* the member's path in the view */
    size_t pn;
} member;

static int by_key(const void *a, const void *b) {
    const member *x = a, *y = b;
    size_t k = x->kn < y->kn ? x->kn : y->kn;
    int c = memcmp(x->key, y->key, k);
    return c ? c : (x->kn < y->kn ? -1 : x->kn > y->kn);
}

static int by_index(const void *a, const void *b) {
    const member *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* lower_in: the first entry whose path is not below prefix. */
static uint32_t lower_in(const uint8_t *p, uint32_t n, uint32_t count, const char *prefix, size_t pl) {
    uint32_t lo = 0, hi = count;
    while (lo < hi) {
        uint32_t m = (lo + hi) / 2;
        const uint8_t *e = p + HEADER + (size_t)m * 16;
        uint32_t po = ld32(e), pn = ld16(e + 4);
        if ((uint64_t)po + pn > n) return count;
        size_t k = pl < pn ? pl : pn;
        int c = memcmp(prefix, p + po, k);
        if (c == 0) c = pl < pn ? -1 : (pl > pn ? 1 : 0);
        if (c > 0) lo = m + 1;
        else hi = m;
    }
    return lo;
}

/* members_of are the members of the object or array at path (entry e)
 * of a view's table, in Go's order: by unescaped key bytes (~2 "", ~1
 * ".", ~0 "~"), or by index; *nm says how many. A count past the view's
 * entries is not believed. Free with members_free. */
static member *members_of(const uint8_t *p, uint32_t n, uint32_t count, const uint8_t *e, const char *path, size_t pl,
                          uint32_t *nm) {
    int array = e[6] == RULED_ARRAY;
    char *prefix = must(malloc(pl + 2));
    memcpy(prefix, path, pl);
    size_t xl = pl;
    if (pl) prefix[xl++] = '.';
    uint32_t want = ld32(e + 8);
    if (want > count) want = count;
    member *ms = must(malloc((want ? want : 1) * sizeof *ms));
    *nm = 0;
    for (uint32_t i = lower_in(p, n, count, prefix, xl); i < count && *nm < want; i++) {
        const uint8_t *x = p + HEADER + (size_t)i * 16;
        uint32_t po = ld32(x), pn = ld16(x + 4);
        if ((uint64_t)po + pn > n || pn < xl || memcmp(p + po, prefix, xl) != 0) break;
        const char *rest = (const char *)p + po + xl;
        size_t rl = pn - xl;
        if (rl == 0 || memchr(rest, '.', rl)) continue;
        member *m = &ms[(*nm)++];
        *m = (member){.e = x, .path = (const char *)p + po, .pn = pn};
        if (array) {
            for (size_t k = 0; k < rl; k++) m->index = m->index * 10 + (rest[k] - '0');
            continue;
        }
        char *key = must(malloc(rl + 1));
        size_t kn = 0;
        if (!(rl == 2 && rest[0] == '~' && rest[1] == '2')) {
            for (size_t k = 0; k < rl; k++) {
                if (rest[k] == '~' && k + 1 < rl && (rest[k + 1] == '0' || rest[k + 1] == '1')) {
                    key[kn++] = rest[k + 1] == '0' ? '~' : '.';
                    k++;
                } else {
                    key[kn++] = rest[k];
                }
            }
        }
        m->key = key;
        m->kn = kn;
    }
    free(prefix);
    qsort(ms, *nm, sizeof *ms, array ? by_index : by_key);
    return ms;
}

static void members_free(member *ms, uint32_t nm) {
    for (uint32_t i = 0; i < nm; i++) free((void *)ms[i].key);
    free(ms);
}

static void json_value(buf *b, const uint8_t *p, uint32_t n, uint32_t count, const uint8_t *e, const char *path, size_t pl,
                       int depth);

/* maxDepth bounds a value's nesting, as the host's decoder does: a view
 * made to recurse deeper is not followed past it. */
#define MAX_DEPTH 256

/* json_container appends the object or array at path (entry e) as Go's
 * tmpl.AppendJSON appends what Decode gives: keys in byte order. */
static void json_container(buf *b, const uint8_t *p, uint32_t n, uint32_t count, const uint8_t *e, const char *path,
                           size_t pl, int depth) {
    int array = e[6] == RULED_ARRAY;
    if (depth > MAX_DEPTH) {
        buf_puts(b, "null");
        return;
    }
    uint32_t nm;
    member *ms = members_of(p, n, count, e, path, pl, &nm);
    buf_puts(b, array ? "[" : "{");
    for (uint32_t i = 0; i < nm; i++) {
        if (i) buf_puts(b, ",");
        if (!array) {
            buf_json_string(b, ms[i].key, ms[i].kn);
            buf_puts(b, ":");
        }
        json_value(b, p, n, count, ms[i].e, ms[i].path, ms[i].pn, depth + 1);
    }
    buf_puts(b, array ? "]" : "}");
    members_free(ms, nm);
}

/* json_value appends the value of entry e (at path) as JSON. */
static void json_value(buf *b, const uint8_t *p, uint32_t n, uint32_t count, const uint8_t *e, const char *path, size_t pl,
                       int depth) {
    uint64_t x = ld64(e + 8);
    switch (e[6]) {
    case RULED_BOOL: buf_puts(b, x ? "true" : "false"); break;
    case RULED_INT: {
        int64_t v = (int64_t)x;
        if (v < 0) {
            buf_puts(b, "-");
            buf_u64(b, (uint64_t)0 - (uint64_t)v);
        } else {
            buf_u64(b, (uint64_t)v);
        }
        break;
    }
    case RULED_FLOAT: go_float(b, f64_of(x)); break;
    case RULED_STRING: {
        uint32_t off = (uint32_t)x, len = (uint32_t)(x >> 32);
        if ((uint64_t)off + len > n) {
            buf_puts(b, "null");
            break;
        }
        buf_json_string(b, (const char *)p + off, len);
        break;
    }
    case RULED_OBJECT:
    case RULED_ARRAY: json_container(b, p, n, count, e, path, pl, depth); break;
    default: buf_puts(b, "null");
    }
}

typedef struct {
    char *lit; /* a literal, or a hole's path */
    size_t n;
    int hole, typed, quoted;
} segment;

struct ruled_template {
    segment *segs;
    size_t nsegs, cap;
};

static int seg_add(ruled_template *t, const char *p, size_t n, int hole, int typed, int quoted) {
    if (!hole && t->nsegs && !t->segs[t->nsegs - 1].hole) { /* a literal after a literal: one */
        segment *s = &t->segs[t->nsegs - 1];
        char *q = must(realloc(s->lit, s->n + n + 1));
        memcpy(q + s->n, p, n);
        s->lit = q;
        s->n += n;
        return 1;
    }
    if (t->nsegs == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 8;
        segment *s = must(realloc(t->segs, cap * sizeof *s));
        t->segs = s;
        t->cap = cap;
    }
    segment *s = &t->segs[t->nsegs++];
    s->lit = must(malloc(n + 1));
    memcpy(s->lit, p, n);
    s->n = n;
    s->hole = hole;
    s->typed = typed;
    s->quoted = quoted;
    return 1;
}

static int lit(ruled_template *t, const char *p) { return seg_add(t, p, strlen(p), 0, 0, 0); }

/* escaped adds p as a literal, JSON-escaped inside a string when quoted. */
static int escaped(ruled_template *t, const char *p, size_t n, int quoted) {
    if (!quoted) return seg_add(t, p, n, 0, 0, 0);
    buf b = {0};
    buf_json_string(&b, p, n);
    int ok = seg_add(t, b.p + 1, b.n - 2, 0, 0, 0);
    free(b.p);
    return ok;
}

/* space reports the length of the white space (Go's unicode.IsSpace) at
 * p, or 0. */
static size_t space_at(const unsigned char *p, size_t n) {
    if (n == 0) return 0;
    unsigned c = p[0];
    if (c == ' ' || (c >= '\t' && c <= '\r')) return 1;
    if (n >= 2 && c == 0xC2 && (p[1] == 0x85 || p[1] == 0xA0)) return 2;
    if (n >= 3 && c == 0xE1 && p[1] == 0x9A && p[2] == 0x80) return 3; /* U+1680 */
    if (n >= 3 && c == 0xE2 && p[1] == 0x80 && ((p[2] >= 0x80 && p[2] <= 0x8A) || p[2] == 0xA8 || p[2] == 0xA9 || p[2] == 0xAF))
        return 3;
    if (n >= 3 && c == 0xE2 && p[1] == 0x81 && p[2] == 0x9F) return 3; /* U+205F */
    if (n >= 3 && c == 0xE3 && p[1] == 0x80 && p[2] == 0x80) return 3; /* U+3000 */
    return 0;
}

/* trim is strings.TrimSpace. */
static void trim(const char **p, size_t *n) {
    size_t k;
    while ((k = space_at((const unsigned char *)*p, *n))) {
        *p += k;
        *n -= k;
    }
    for (;;) { /* from the end: try each length a space has */
        size_t cut = 0;
        for (size_t l = 1; l <= 3 && l <= *n; l++)
            if (space_at((const unsigned char *)*p + *n - l, l) == l) cut = l;
        if (!cut) return;
        *n -= cut;
    }
}

static const char *find_str(const char *s, size_t n, const char *what) {
    for (size_t i = 0; i + 1 < n; i++)
        if (s[i] == what[0] && s[i + 1] == what[1]) return s + i;
    return 0;
}

/* unclosed_at is what follows the last closed placeholder of a template
 * whose {{ is not closed: Go's error quotes it. */
static const char *unclosed_at;
static size_t unclosed_n;

/* text compiles a text template into t: quoted, its literals are
 * escaped for the inside of a JSON string. 0 when a {{ is not closed. */
static int text(ruled_template *t, const char *s, size_t n, int quoted) {
    for (;;) {
        const char *open = find_str(s, n, "{{");
        if (!open) return escaped(t, s, n, quoted);
        const char *close = find_str(open, n - (size_t)(open - s), "}}");
        if (!close) {
            unclosed_at = s;
            unclosed_n = n;
            return 0;
        }
        if (!escaped(t, s, (size_t)(open - s), quoted)) return 0;
        const char *path = open + 2;
        size_t pl = (size_t)(close - path);
        trim(&path, &pl);
        if (!seg_add(t, path, pl, 1, 0, quoted)) return 0;
        n -= (size_t)(close + 2 - s);
        s = close + 2;
    }
}

void ruled_template_free(ruled_template *t) {
    if (!t) return;
    for (size_t i = 0; i < t->nsegs; i++) free(t->segs[i].lit);
    free(t->segs);
    free(t);
}

static ruled_template *unclosed(ruled_template *t, const char *s, size_t n) {
    buf b = {0};
    buf_puts(&b, "unclosed {{ in ");
    buf_json_string(&b, s, n);
    ruled_failn(b.p, b.n);
    free(b.p);
    ruled_template_free(t);
    return 0;
}

ruled_template *ruled_text_template(const char *s, size_t n) {
    ruled_template *t = must(calloc(1, sizeof *t));
    if (!text(t, s, n, 0)) return unclosed(t, unclosed_at, unclosed_n);
    return t;
}

static int count_open(const char *s, size_t n) {
    int c = 0;
    for (const char *p = s; (p = find_str(p, n - (size_t)(p - s), "{{")); p += 2) c++;
    return c;
}

/* json compiles the value of entry e (at path, in the config's view). */
static int json(ruled_template *t, const ruled_view *v, const uint8_t *e, const char *path, size_t pl, int depth) {
    if (depth > MAX_DEPTH) return lit(t, "null");
    switch (e[6]) {
    case RULED_OBJECT:
    case RULED_ARRAY: {
        int array = e[6] == RULED_ARRAY;
        uint32_t nm;
        member *ms = members_of(v->p, v->n, v->count, e, path, pl, &nm);
        int ok = lit(t, array ? "[" : "{");
        for (uint32_t i = 0; ok && i < nm; i++) {
            if (i) ok = lit(t, ",");
            if (ok && !array) {
                buf b = {0};
                buf_json_string(&b, ms[i].key, ms[i].kn);
                buf_puts(&b, ":");
                ok = seg_add(t, b.p, b.n, 0, 0, 0);
                free(b.p);
            }
            if (ok) ok = json(t, v, ms[i].e, ms[i].path, ms[i].pn, depth + 1);
        }
        if (ok) ok = lit(t, array ? "]" : "}");
        members_free(ms, nm);
        return ok;
    }
    case RULED_STRING: {
        uint64_t x = ld64(e + 8);
        uint32_t off = (uint32_t)x, len = (uint32_t)(x >> 32);
        if ((uint64_t)off + len > v->n) return 0;
        const char *s = (const char *)v->p + off;
        if (len >= 4 && s[0] == '{' && s[1] == '{' && s[len - 2] == '}' && s[len - 1] == '}' && count_open(s, len) == 1) {
            const char *path2 = s + 2;
            size_t l2 = len - 4;
            trim(&path2, &l2);
            return seg_add(t, path2, l2, 1, 1, 0);
        }
        if (!lit(t, "\"")) return 0;
        if (!text(t, s, len, 1)) return 0; /* unclosed_at says where */
        return lit(t, "\"");
    }
    default: {
        buf b = {0};
        json_value(&b, v->p, v->n, v->count, e, path, pl, depth);
        int ok = seg_add(t, b.p ? b.p : "", b.n, 0, 0, 0);
        free(b.p);
        return ok;
    }
    }
}

ruled_template *ruled_json_template(const ruled_config *c, const char *key) {
    found f = find(&c->view, key);
    if (!f.e) {
        needs(c, key, "");
        return 0;
    }
    ruled_template *t = must(calloc(1, sizeof *t));
    unclosed_at = 0;
    if (!json(t, &c->view, f.e, key, strlen(key), 0)) {
        if (unclosed_at) return unclosed(t, unclosed_at, unclosed_n);
        ruled_fail("a template's config does not decode");
        ruled_template_free(t);
        return 0;
    }
    return t;
}

ruled_str ruled_render(const ruled_template *t, const ruled_call *c) {
    buf b = {0};
    for (size_t i = 0; i < t->nsegs; i++) {
        const segment *s = &t->segs[i];
        if (!s->hole) {
            buf_put(&b, s->lit, s->n);
            continue;
        }
        found f = find_n(&c->event, s->lit, s->n);
        if (s->typed && !f.e) {
            buf_puts(&b, "null");
        } else if (s->typed) {
            json_value(&b, f.p, f.n, f.count, f.e, s->lit, s->n, 0);
        } else if (!f.e) {
        } else if (f.e[6] == RULED_STRING && !s->quoted) {
            uint64_t x = ld64(f.e + 8);
            uint32_t off = (uint32_t)x, len = (uint32_t)(x >> 32);
            if ((uint64_t)off + len <= f.n) buf_put(&b, f.p + off, len);
        } else {
            buf v = {0};
            if (f.e[6] == RULED_STRING) { /* quoted: its JSON, inside the string */
                uint64_t x = ld64(f.e + 8);
                uint32_t off = (uint32_t)x, len = (uint32_t)(x >> 32);
                if ((uint64_t)off + len <= f.n) buf_json_string(&v, (const char *)f.p + off, len);
                if (v.n >= 2) buf_put(&b, v.p + 1, v.n - 2);
            } else {
                json_value(&v, f.p, f.n, f.count, f.e, s->lit, s->n, 0);
                if (s->quoted) {
                    buf q = {0};
                    buf_json_string(&q, v.p ? v.p : "", v.n);
                    buf_put(&b, q.p + 1, q.n - 2);
                    free(q.p);
                } else {
                    buf_put(&b, v.p, v.n);
                }
            }
            free(v.p);
        }
    }
    ruled_str out = {"", 0};
    char *p = lend(b.n);
    if (p) {
        memcpy(p, b.p ? b.p : "", b.n);
        out.p = p;
        out.n = (uint32_t)b.n;
    }
    free(b.p);
    return out;
}
