/*
 * The C SDK's templates under test (plugins/tmpl_test.go,
 * TestSDKTemplatesMatchGo): "json" renders its config's "payload" as a JSON
 * template, "text" its "message" as a text template; each result is the
 * rendering.
 */
#include "../ruled/ruled.h"

static int conf_json(const ruled_config *c, void **state) {
    ruled_template *t = ruled_json_template(c, "payload");
    if (!t) return RULED_FAILED;
    *state = t;
    return 0;
}

static int conf_text(const ruled_config *c, void **state) {
    ruled_str m;
    if (!ruled_require_string(c, "message", &m)) return RULED_FAILED;
    ruled_template *t = ruled_text_template(m.p, m.n);
    if (!t) return RULED_FAILED;
    *state = t;
    return 0;
}

static int act_render(void *state, const ruled_call *c) {
    ruled_str s = ruled_render(state, c);
    ruled_result(s.p, s.n);
    return 0;
}

static void release(void *state) { ruled_template_free(state); }

static int conf_crash(const ruled_config *c, void **state) { ruled_panic("no config for you"); }

__attribute__((constructor)) static void init(void) {
    ruled_plugin("tmpltest", "1.0.0");
    ruled_on_release(ruled_action("json", conf_json, act_render), release);
    ruled_on_release(ruled_action("text", conf_text, act_render), release);
    ruled_action("crash_configure", conf_crash, act_render); /* TestConfigurePanicSaysWhy */
}
