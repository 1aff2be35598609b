/*
 * ruled.h — the C SDK for ruled plugins (ABI 1.4, abi/ABI.md).
 *
 * A plugin is a WebAssembly reactor module built with clang for
 * wasm32-wasi (wasi-libc: malloc, and snprintf/strtod for numbers that
 * render as Go renders them). It registers its conditions and actions in
 * a constructor, which the module's _initialize runs once:
 *
 *     static int when_hot(void *state, const ruled_call *c) {
 *         double t;
 *         return ruled_float(&c->event, "data.value", &t) && t > 30;
 *     }
 *     __attribute__((constructor)) static void init(void) {
 *         ruled_plugin("thermo", "1.0.0");
 *         ruled_condition("hot", NULL, when_hot);
 *     }
 *
 * Who frees what:
 * - Every ruled_str the SDK hands out (a string in a view, a call's
 *   topic, the event's raw JSON, a kv value, an HTTP response) is
 *   borrowed: valid until the call it was given in returns. Copy what
 *   you keep.
 * - A function's state is the plugin's: its configure callback
 *   allocates it (malloc) and its release callback, if any, frees it
 *   when the host releases the handle.
 * - ruled_result and ruled_fail copy what they are given.
 *
 * Errors: a callback that fails calls ruled_fail (or ruled_fail_permanent)
 * and returns RULED_FAILED; ruled_require_* set the error text for a
 * missing or mistyped config key themselves ("<function>: config needs
 * \"<key>\""), as the Go and AssemblyScript SDKs do.
 */
#ifndef RULED_H
#define RULED_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RULED_ABI_VERSION ((1 << 16) | 4)

/* Status codes (abi/ABI.md §6). A host function answers 0 or a length,
 * or a negated status. */
enum {
    RULED_OK = 0,
    RULED_TRUE = 1,
    RULED_ERROR = 2,
    RULED_BAD_INPUT = 3,
    RULED_BAD_CONFIG = 4,
    RULED_UNKNOWN_FUNCTION = 5,
    RULED_BAD_HANDLE = 6,
    RULED_DENIED = 7,
    RULED_NOT_FOUND = 8,
    RULED_TOO_LARGE = 9,
    RULED_UNAVAILABLE = 10,
    RULED_PERMANENT = 11,
};

/* What a callback returns when it failed (after ruled_fail). */
#define RULED_FAILED (-1)

/* Log levels. */
enum { RULED_TRACE = 0, RULED_DEBUG, RULED_INFO, RULED_WARN, RULED_LEVEL_ERROR };

/* Bytes the SDK lends: p is not NUL-terminated. */
typedef struct {
    const char *p;
    uint32_t n;
} ruled_str;

/* A value's kind in a view; RULED_MISSING when the path has none. */
typedef enum {
    RULED_MISSING = 0,
    RULED_NULL = 1,
    RULED_BOOL = 2,
    RULED_INT = 3,
    RULED_FLOAT = 4,
    RULED_STRING = 5,
    RULED_OBJECT = 6,
    RULED_ARRAY = 7,
} ruled_kind;

/* A view (abi/ABI.md §4): an event, with the run's context, or a config.
 * Read it with the functions below; its fields are the SDK's. */
typedef struct {
    const uint8_t *p;
    uint32_t n, count;
    const uint8_t *cp; /* the run's context, when the call has one */
    uint32_t cn, cc;
    int event; /* an event: paths below steps., vars., states.,
                  previous. and sun. are the context's */
} ruled_view;

/* A call of a condition or an action: its event and its header. */
typedef struct {
    ruled_view event;
    uint32_t pass, attempt;
    int64_t time; /* the event's, Unix nanoseconds */
    ruled_str topic, rule, step, run, key; /* key: the idempotency key */
} ruled_call;

/* A step's config, as configure sees it. */
typedef struct {
    ruled_view view;
    const char *function; /* the function being configured */
} ruled_config;

/* Lookups: a path is keys joined by '.', a key with '.' or '~' in it
 * escaped as ~1 and ~0 (abi/ABI.md §4). Each answers 1 and sets *out
 * when the path holds a value of that kind, else 0. ruled_float takes an
 * int too; ruled_int a float holding a whole number. */
ruled_kind ruled_kind_of(const ruled_view *v, const char *path);
int ruled_float(const ruled_view *v, const char *path, double *out);
int ruled_int(const ruled_view *v, const char *path, int64_t *out);
int ruled_bool(const ruled_view *v, const char *path, int *out);
int ruled_string(const ruled_view *v, const char *path, ruled_str *out);
/* ruled_equals: the string at path is s. */
int ruled_equals(const ruled_view *v, const char *path, const char *s);
/* ruled_count: the members of the object or array at path; -1 when it
 * is not one. */
int ruled_count(const ruled_view *v, const char *path);

/* A config's raw JSON, byte for byte. */
ruled_str ruled_config_raw(const ruled_config *c);
/* Required keys: 1 and *out set, or 0 with the error text set
 * ("<function>: config needs \"<key>\"", or "... must be a string, not
 * the number 1"): return RULED_FAILED. */
int ruled_require_string(const ruled_config *c, const char *key, ruled_str *out);
int ruled_require_float(const ruled_config *c, const char *key, double *out);
int ruled_require_int(const ruled_config *c, const char *key, int64_t *out);
/* ruled_config_string: the string at key, or otherwise. */
ruled_str ruled_config_string(const ruled_config *c, const char *key, const char *otherwise);

/* Callbacks. configure may leave *state NULL; it returns 0, or
 * RULED_FAILED after ruled_fail (the host gets StatusBadConfig). when
 * returns 1 (met), 0 (not met) or RULED_FAILED; act 0 or RULED_FAILED. */
typedef int (*ruled_configure_fn)(const ruled_config *c, void **state);
typedef int (*ruled_when_fn)(void *state, const ruled_call *c);
typedef int (*ruled_act_fn)(void *state, const ruled_call *c);
typedef void (*ruled_release_fn)(void *state);

typedef struct ruled_function ruled_function;

/* Registration, from a constructor. configure may be NULL (no config). */
void ruled_plugin(const char *name, const char *version);
ruled_function *ruled_condition(const char *name, ruled_configure_fn configure, ruled_when_fn when);
ruled_function *ruled_action(const char *name, ruled_configure_fn configure, ruled_act_fn act);
/* Describe: a need ("publish", "kv", "fire", "http"), a doc line, an
 * example config (JSON), a JSON Schema; a release callback for state. */
void ruled_needs(ruled_function *f, const char *capability);
void ruled_doc(ruled_function *f, const char *doc);
void ruled_example(ruled_function *f, const char *json);
void ruled_schema(ruled_function *f, const char *json);
void ruled_on_release(ruled_function *f, ruled_release_fn release);

/* Failing: the text (copied) is what the host reports. A permanent
 * failure (an action's) is not retried. Both return RULED_FAILED. */
int ruled_fail(const char *text);
int ruled_failn(const char *text, size_t n);
int ruled_fail_permanent(const char *text);
/* An action's result (copied); JSON, or text. */
void ruled_result(const void *p, size_t n);
/* Crash as a C plugin does: logs "panic: <message>" at error, then traps.
 * The host fails the call with the message and replaces the instance. */
__attribute__((noreturn)) void ruled_panic(const char *message);

/* Host functions (abi/ABI.md §3). Each answers 0 (or a length) or a
 * negated status: -RULED_DENIED when the capability is not granted or a
 * condition may not call it. */
void ruled_log(int level, const char *message);
void ruled_logn(int level, const char *message, size_t n);
int64_t ruled_now(void);
/* The event's JSON, borrowed until the call returns. */
ruled_str ruled_event_raw(void);
int ruled_publish(const char *topic, const void *payload, size_t n);
/* kv_get: the value's length and *out (borrowed), or -RULED_NOT_FOUND. */
int ruled_kv_get(const char *key, ruled_str *out);
int ruled_kv_set(const char *key, const void *value, size_t n);
int ruled_kv_delete(const char *key);
/* fire: the new run's id (borrowed) in *id. */
int ruled_fire(const char *rule, const void *payload, size_t n, ruled_str *id);

typedef struct {
    ruled_str name, value;
} ruled_header;

typedef struct {
    int status;
    ruled_header *headers; /* borrowed */
    uint32_t nheaders;
    ruled_str body; /* borrowed */
} ruled_response;

/* One outbound request (method NULL or "" is GET); 0 and *resp set, or a
 * negated status. */
int ruled_http(const char *method, const char *url, const ruled_header *headers, size_t nheaders, const void *body,
               size_t n, ruled_response *resp);
/* The response's first header of that name, compared without case; an
 * empty string when none. */
ruled_str ruled_response_header(const ruled_response *r, const char *name);

/* Templates (the bytes Go's abi/tmpl renders): {{path}} placeholders,
 * looked up by the lookup rule (steps., vars., states., previous. and
 * sun. in the run's context). A text template splices each value's text
 * (a string as it is, anything else as JSON; nothing for a missing
 * path). A JSON template is a config value: a string that is exactly
 * one placeholder becomes the value with its type (null when missing);
 * placeholders in longer strings splice their text, escaped; keys in
 * byte order, numbers as Go writes them. Compile once, in configure
 * (NULL, with the error set, for an unclosed {{); free with
 * ruled_template_free in the release callback. A rendering is borrowed
 * until the call returns. */
typedef struct ruled_template ruled_template;
ruled_template *ruled_text_template(const char *s, size_t n);
ruled_template *ruled_json_template(const ruled_config *c, const char *key);
ruled_str ruled_render(const ruled_template *t, const ruled_call *c);
void ruled_template_free(ruled_template *t);

#ifdef __cplusplus
}
#endif
#endif
