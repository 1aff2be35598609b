/*
 * The C SDK's build of the conformance plugin
 * (host/wasm/testdata/conformance/SPEC.md). Build: sdk/c/ruled/build.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ruled/ruled.h"

/* dup copies a borrowed string into the function's state. */
static char *dup(ruled_str s) {
    char *p = malloc(s.n + 1);
    if (!p) ruled_panic("out of memory");
    memcpy(p, s.p, s.n);
    p[s.n] = 0;
    return p;
}

static void release_free(void *state) { free(state); }

/* failf fails with a formatted text. */
static int failf(const char *fmt, const char *s, long n) {
    char b[512];
    if (s) snprintf(b, sizeof b, fmt, s);
    else snprintf(b, sizeof b, fmt, n);
    return ruled_fail(b);
}

static int when_noop(void *st, const ruled_call *c) { return 0; }

static int when_temp_high(void *st, const ruled_call *c) {
    double v;
    return ruled_float(&c->event, "data.value", &v) && v > 20 && ruled_equals(&c->event, "type", "temperature");
}

typedef struct {
    char *path, *value;
    double above;
} pathcfg;

static void release_pathcfg(void *state) {
    pathcfg *p = state;
    free(p->path);
    free(p->value);
    free(p);
}

static int conf_field_equals(const ruled_config *c, void **state) {
    ruled_str path, value;
    if (!ruled_require_string(c, "path", &path) || !ruled_require_string(c, "value", &value)) return RULED_FAILED;
    pathcfg *p = calloc(1, sizeof *p);
    p->path = dup(path);
    p->value = dup(value);
    *state = p;
    return 0;
}

static int when_field_equals(void *st, const ruled_call *c) {
    pathcfg *p = st;
    return ruled_equals(&c->event, p->path, p->value);
}

static int conf_number_above(const ruled_config *c, void **state) {
    ruled_str path;
    double above;
    if (!ruled_require_string(c, "path", &path) || !ruled_require_float(c, "above", &above)) return RULED_FAILED;
    pathcfg *p = calloc(1, sizeof *p);
    p->path = dup(path);
    p->above = above;
    *state = p;
    return 0;
}

static int when_number_above(void *st, const ruled_call *c) {
    pathcfg *p = st;
    double v;
    if (!ruled_float(&c->event, p->path, &v)) return failf("number_above: %s is not a number", p->path, 0);
    return v > p->above;
}

static int when_now_is_event_time(void *st, const ruled_call *c) {
    char b[64];
    int64_t now = ruled_now();
    snprintf(b, sizeof b, "now %lld", (long long)now);
    ruled_log(RULED_INFO, b);
    return now == c->time;
}

static int when_try_publish(void *st, const ruled_call *c) {
    int r = ruled_publish("conformance.denied", "{}", 2);
    if (r == -RULED_DENIED) return 1;
    return failf("publish returned %ld", 0, r);
}

static int when_try_http(void *st, const ruled_call *c) {
    ruled_response resp;
    int r = ruled_http(NULL, "http://conformance.test/", NULL, 0, NULL, 0, &resp);
    if (r == -RULED_DENIED) return 1;
    return failf("http returned %ld", 0, r);
}

static int conf_message(const ruled_config *c, void **state) {
    ruled_str m;
    if (!ruled_require_string(c, "message", &m)) return RULED_FAILED;
    *state = dup(m);
    return 0;
}

static int fail_message(void *st, const ruled_call *c) { return ruled_fail(st); }

static int conf_echo(const ruled_config *c, void **state) {
    *state = dup(ruled_config_string(c, "prefix", ""));
    return 0;
}

static int act_echo(void *st, const ruled_call *c) {
    char *b = malloc(strlen(st) + c->topic.n + c->rule.n + c->step.n + c->run.n + c->key.n + 128);
    int n = sprintf(b, "%stopic=%.*s rule=%.*s step=%.*s run=%.*s key=%.*s pass=%u time=%lld", (char *)st,
                    (int)c->topic.n, c->topic.p, (int)c->rule.n, c->rule.p, (int)c->step.n, c->step.p, (int)c->run.n,
                    c->run.p, (int)c->key.n, c->key.p, c->pass, (long long)c->time);
    ruled_result(b, (size_t)n);
    free(b);
    return 0;
}

static int act_echo_raw(void *st, const ruled_call *c) {
    ruled_str raw = ruled_event_raw();
    ruled_result(raw.p, raw.n);
    return 0;
}

typedef struct {
    char *p;
    size_t n;
} bytes;

static int conf_echo_config(const ruled_config *c, void **state) {
    ruled_str raw = ruled_config_raw(c);
    bytes *b = malloc(sizeof *b);
    b->p = malloc(raw.n ? raw.n : 1);
    memcpy(b->p, raw.p, raw.n);
    b->n = raw.n;
    *state = b;
    return 0;
}

static void release_bytes(void *state) {
    bytes *b = state;
    free(b->p);
    free(b);
}

static int act_bytes(void *st, const ruled_call *c) {
    bytes *b = st;
    ruled_result(b->p, b->n);
    return 0;
}

static int conf_string(const ruled_config *c, void **state, const char *key) {
    ruled_str s;
    if (!ruled_require_string(c, key, &s)) return RULED_FAILED;
    *state = dup(s);
    return 0;
}

static int conf_topic(const ruled_config *c, void **state) { return conf_string(c, state, "topic"); }
static int conf_rule(const ruled_config *c, void **state) { return conf_string(c, state, "rule"); }
static int conf_url(const ruled_config *c, void **state) { return conf_string(c, state, "url"); }
static int conf_path(const ruled_config *c, void **state) { return conf_string(c, state, "path"); }

static int act_publish(void *st, const ruled_call *c) {
    ruled_str raw = ruled_event_raw();
    int r = ruled_publish(st, raw.p, raw.n);
    if (r != 0) return failf("publish: status %ld", 0, -r);
    return 0;
}

static int act_kv_roundtrip(void *st, const ruled_call *c) {
    ruled_str key = {"", 0}, value = {"", 0}, got, after;
    ruled_string(&c->event, "key", &key);
    ruled_string(&c->event, "value", &value);
    char *k = dup(key);
    int r = ruled_kv_set(k, value.p, value.n);
    if (r != 0) {
        free(k);
        return failf("kv: set: status %ld", 0, -r);
    }
    r = ruled_kv_get(k, &got);
    if (r < 0) {
        free(k);
        return failf("kv: get: status %ld", 0, -r);
    }
    r = ruled_kv_delete(k);
    if (r != 0) {
        free(k);
        return failf("kv: delete: status %ld", 0, -r);
    }
    r = ruled_kv_get(k, &after);
    free(k);
    if (r != -RULED_NOT_FOUND) return failf("kv: get after delete: status %ld", 0, -r);
    ruled_result(got.p, got.n);
    return 0;
}

static int act_fire(void *st, const ruled_call *c) {
    ruled_str raw = ruled_event_raw(), id;
    int r = ruled_fire(st, raw.p, raw.n, &id);
    if (r != 0) return failf("fire: status %ld", 0, -r);
    ruled_result(id.p, id.n);
    return 0;
}

static int act_http(void *st, const ruled_call *c) {
    ruled_str raw = ruled_event_raw();
    ruled_header h = {{"Idempotency-Key", 15}, c->key};
    ruled_response resp;
    int r = ruled_http("POST", st, &h, 1, raw.p, raw.n, &resp);
    if (r != 0) return failf("http: status %ld", 0, -r);
    ruled_str answer = ruled_response_header(&resp, "X-Answer");
    char *b = malloc(answer.n + resp.body.n + 32);
    int n = sprintf(b, "%d %.*s ", resp.status, (int)answer.n, answer.p);
    memcpy(b + n, resp.body.p, resp.body.n);
    ruled_result(b, n + resp.body.n);
    free(b);
    return 0;
}

static int act_crash(void *st, const ruled_call *c) { ruled_panic(st); }

static int conf_big_result(const ruled_config *c, void **state) {
    int64_t size;
    if (!ruled_require_int(c, "size", &size)) return RULED_FAILED;
    if (size < 0 || size > 1073741823) return ruled_fail("big_result: config \"size\" must be from 0 to 1073741823");
    bytes *b = malloc(sizeof *b);
    b->p = malloc(size ? (size_t)size : 1);
    if (!b->p) return ruled_fail("big_result: out of memory");
    memset(b->p, 'x', (size_t)size);
    b->n = (size_t)size;
    *state = b;
    return 0;
}

static int act_count(void *st, const ruled_call *c) {
    int n = ruled_count(&c->event, st);
    if (n < 0) return failf("count: %s is not a container", st, 0);
    char b[16];
    ruled_result(b, (size_t)snprintf(b, sizeof b, "%d", n));
    return 0;
}

static int act_log_levels(void *st, const ruled_call *c) {
    for (int l = RULED_TRACE; l <= RULED_LEVEL_ERROR; l++) {
        char b[16];
        snprintf(b, sizeof b, "level %d", l);
        ruled_log(l, b);
    }
    return 0;
}

static int conf_reject(const ruled_config *c, void **state) { return ruled_fail("reject_config: refused"); }
static int act_none(void *st, const ruled_call *c) { return 0; }

__attribute__((constructor)) static void init(void) {
    ruled_function *f;
    ruled_plugin("conformance", "1.0.0");
    ruled_condition("noop", NULL, when_noop);
    ruled_condition("temp_high", NULL, when_temp_high);
    f = ruled_condition("field_equals", conf_field_equals, when_field_equals);
    ruled_on_release(f, release_pathcfg);
    f = ruled_condition("number_above", conf_number_above, when_number_above);
    ruled_on_release(f, release_pathcfg);
    ruled_condition("now_is_event_time", NULL, when_now_is_event_time);
    ruled_needs(ruled_condition("try_publish", NULL, when_try_publish), "publish");
    ruled_needs(ruled_condition("try_http", NULL, when_try_http), "http");
    f = ruled_condition("fail_when", conf_message, fail_message);
    ruled_on_release(f, release_free);

    f = ruled_action("echo", conf_echo, act_echo);
    ruled_example(f, "{\"prefix\":\"> \"}");
    ruled_on_release(f, release_free);
    ruled_action("echo_raw", NULL, act_echo_raw);
    ruled_on_release(ruled_action("echo_config", conf_echo_config, act_bytes), release_bytes);
    f = ruled_action("publish", conf_topic, act_publish);
    ruled_needs(f, "publish");
    ruled_on_release(f, release_free);
    ruled_needs(ruled_action("kv_roundtrip", NULL, act_kv_roundtrip), "kv");
    f = ruled_action("fire", conf_rule, act_fire);
    ruled_needs(f, "fire");
    ruled_on_release(f, release_free);
    f = ruled_action("http", conf_url, act_http);
    ruled_needs(f, "http");
    ruled_on_release(f, release_free);
    ruled_on_release(ruled_action("fail", conf_message, fail_message), release_free);
    ruled_on_release(ruled_action("crash", conf_message, act_crash), release_free);
    ruled_on_release(ruled_action("big_result", conf_big_result, act_bytes), release_bytes);
    ruled_on_release(ruled_action("count", conf_path, act_count), release_free);
    ruled_action("log_levels", NULL, act_log_levels);
    ruled_action("reject_config", conf_reject, act_none);
}
