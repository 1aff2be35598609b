package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/internal/release"
	firstparty "github.com/ruled-dev/ruled/plugins/build"
	assdk "github.com/ruled-dev/ruled/sdk/assemblyscript"
	csdk "github.com/ruled-dev/ruled/sdk/c"
	ruled "github.com/ruled-dev/ruled/sdk/go"
	rustsdk "github.com/ruled-dev/ruled/sdk/rust"
)

// newName is what a new plugin may be called: its module's file name
// (NAME.wasm), its functions' prefix in rules (NAME.above), its topics'.
var newName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// cmdNew is `ruled new plugin NAME --lang go|as|rust|c` and `ruled new rules
// DIR`: a working start — a plugin with a condition and an action, a
// rule that uses them, a scenario, and a Makefile whose `make test` runs
// the scenario — that passes as it is.
func cmdNew(ctx context.Context, sub string, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("new "+sub, stderr)
	fs.Usage = func() {
		if sub == "plugin" {
			fmt.Fprint(fs.Output(), "Usage: ruled new plugin NAME [--lang go|as|rust|c] [--dir DIR]\n\n"+
				"Writes a plugin that builds and passes its own make test as it is: a condition\n"+
				"(above) and an action (notify), a native test, a rule using them, a scenario and\n"+
				"a Makefile, with the SDK of this ruled in the project.\n\nFlags:\n")
			fs.PrintDefaults()
			return
		}
		fmt.Fprint(fs.Output(), "Usage: ruled new rules DIR\n\n"+
			"Writes a rule set into DIR: a rule, a scenario (make test), the plugin it uses,\n"+
			"and a config that serves it (make run).\n")
	}
	// Each form has its own flags: a rule set has no language, and its
	// directory is its argument.
	lang, dir := new(string), new(string)
	if sub == "plugin" {
		lang = fs.String("lang", "go", "the plugin's language: go, as (AssemblyScript), rust or c")
		dir = fs.String("dir", "", "where to write it (default: ./NAME)")
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		if sub == "plugin" {
			return usageError("new plugin: want a NAME: ruled new plugin NAME --lang go|as|rust|c")
		}
		return usageError("new rules: want a DIR: ruled new rules DIR")
	}
	var files map[string]string
	var target string
	switch sub {
	case "plugin":
		name := pos[0]
		if !newName.MatchString(name) {
			return usageError(fmt.Sprintf("new plugin: %q is no plugin name: a lower-case letter, then up to 31 lower-case letters, digits or _", name))
		}
		if name == "ruled" {
			// Its topics would be ruled.*, which is reserved, and a Rust
			// plugin crate named ruled would be the SDK's own name.
			return usageError(`new plugin: "ruled" is taken: topics under ruled. are the daemon's`)
		}
		target = *dir
		if target == "" {
			target = name
		}
		switch *lang {
		case "go":
			files, err = newGoPlugin(name)
		case "as", "assemblyscript":
			files, err = newASPlugin(name)
		case "c":
			files, err = newCPlugin(name)
		case "rust":
			files, err = newRustPlugin(name)
		default:
			return usageError(fmt.Sprintf("new plugin: no skeleton for --lang %q: want go, as, rust or c", *lang))
		}
	case "rules":
		target = pos[0]
		files, err = newRules()
	}
	if err != nil {
		return err
	}
	if err := writeNew(target, files); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintf(stdout, "wrote %s:\n", target)
	for _, n := range names {
		fmt.Fprintf(stdout, "  %s\n", n)
	}
	fmt.Fprintf(stdout, "next: cd %s && make test\n", target)
	return nil
}

// writeNew writes files under dir, refusing to write over anything: a
// directory that holds a file of the same name is someone's work.
func writeNew(dir string, files map[string]string) error {
	for n := range files {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			return fmt.Errorf("new: %s exists; not written over", filepath.Join(dir, n))
		}
	}
	for n, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("new: %w", err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(n, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			return fmt.Errorf("new: %w", err)
		}
	}
	return nil
}

// sdkFiles copies an SDK's embedded files under to (their paths below
// strip).
func sdkFiles(out map[string]string, src fs.FS, strip, to string) error {
	return fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		out[path.Join(to, strings.TrimPrefix(p, strip))] = string(b)
		return nil
	})
}

// onPath ends each skeleton's README: the Makefile calls ruled by name.
const onPath = "\nThe Makefile runs `ruled` from your PATH; `make RULED=/path/to/ruled test` names another.\n"

// fill puts name in place of NAME in each skeleton file.
func fill(name string, files map[string]string) map[string]string {
	out := make(map[string]string, len(files))
	for k, v := range files {
		out[strings.ReplaceAll(k, "NAME", name)] = strings.ReplaceAll(v, "NAME", name)
	}
	return out
}

// The rule and scenario every plugin skeleton has: a reading above 30
// is told on NAME.alerts, once for each reading; one below is not.
const newPluginRule = `# A rule using the plugin: a reading above 30 is told on NAME.alerts.
- id: NAME-hot
  description: tell when a sensor reads above 30
  on: NAME.reading
  when: {do: NAME.above, with: {path: value, above: 30}}
  steps:
    - name: tell
      do: NAME.notify
      with:
        topic: NAME.alerts
        payload: {sensor: "{{sensor}}", value: "{{value}}"}
`

const newPluginScenario = `# make test builds the plugin and runs this: ruled test tests
name: a reading above 30 is told, one below is not
rules: ../rules
plugins: {NAME: ../NAME.wasm}
grants: {NAME: [publish]}
steps:
  - publish: {topic: NAME.reading, sensor: s1, value: 31.5}
  - publish: {topic: NAME.reading, sensor: s2, value: 20}
  - expect:
      published:
        - {topic: NAME.alerts, count: 1, payload: {sensor: s1, value: 31.5}}
      runs:
        NAME-hot: {ok: 1}
`

func newCPlugin(name string) (map[string]string, error) {
	files := fill(name, map[string]string{
		"NAME.c": `/*
 * NAME: a ruled plugin in C (the SDK: sdk/, its guide: sdk/c/README.md in
 * ruled's repository). make builds NAME.wasm; make test runs the scenario
 * (make test RULED=path/to/ruled when ruled is not on the PATH).
 */
#include <stdlib.h>
#include <string.h>

#include "sdk/ruled.h"

/* above: the number at the config's "path" is above its "above". */
typedef struct {
    char *path;
    double above;
} above_cfg;

static int conf_above(const ruled_config *c, void **state) {
    ruled_str path;
    double above;
    if (!ruled_require_string(c, "path", &path) || !ruled_require_float(c, "above", &above)) return RULED_FAILED;
    above_cfg *a = malloc(sizeof *a);
    if (!a || !(a->path = malloc(path.n + 1))) ruled_panic("out of memory");
    memcpy(a->path, path.p, path.n); /* the config is borrowed: copy what you keep */
    a->path[path.n] = 0;
    a->above = above;
    *state = a;
    return 0;
}

static int when_above(void *state, const ruled_call *c) {
    above_cfg *a = state;
    double v;
    return ruled_float(&c->event, a->path, &v) && v > a->above;
}

static void free_above(void *state) {
    above_cfg *a = state;
    free(a->path);
    free(a);
}

/* notify: publish the config's "payload" (a template) on its "topic". */
typedef struct {
    char *topic;
    ruled_template *payload;
} notify_cfg;

static int conf_notify(const ruled_config *c, void **state) {
    ruled_str topic;
    if (!ruled_require_string(c, "topic", &topic)) return RULED_FAILED;
    ruled_template *t = ruled_json_template(c, "payload");
    if (!t) return RULED_FAILED;
    notify_cfg *n = malloc(sizeof *n);
    if (!n || !(n->topic = malloc(topic.n + 1))) ruled_panic("out of memory");
    memcpy(n->topic, topic.p, topic.n);
    n->topic[topic.n] = 0;
    n->payload = t;
    *state = n;
    return 0;
}

static int act_notify(void *state, const ruled_call *c) {
    notify_cfg *n = state;
    ruled_str payload = ruled_render(n->payload, c);
    if (ruled_publish(n->topic, payload.p, payload.n) != 0) return ruled_fail("notify: the host refused the publish");
    return 0;
}

static void free_notify(void *state) {
    notify_cfg *n = state;
    free(n->topic);
    ruled_template_free(n->payload);
    free(n);
}

__attribute__((constructor)) static void init(void) {
    ruled_plugin("NAME", "0.1.0");
    ruled_function *f = ruled_condition("above", conf_above, when_above);
    ruled_example(f, "{\"path\":\"value\",\"above\":30}");
    ruled_on_release(f, free_above);
    f = ruled_action("notify", conf_notify, act_notify);
    ruled_needs(f, "publish");
    ruled_example(f, "{\"topic\":\"NAME.alerts\",\"payload\":{\"value\":\"{{value}}\"}}");
    ruled_on_release(f, free_notify);
}
`,
		"Makefile": `# NAME: make builds NAME.wasm (clang 14 for wasm32-wasi: apt-get install
# clang-14 lld-14 wasi-libc libclang-rt-14-dev-wasm32); make test runs the
# scenarios in tests/ with ruled.
RULED ?= ruled

NAME.wasm: NAME.c sdk/ruled.c sdk/ruled.h
	sh sdk/build.sh $@ NAME.c

test: NAME.wasm
	$(RULED) test tests

clean:
	rm -f NAME.wasm

.PHONY: test clean
`,
		"rules/NAME.yaml": newPluginRule,
		"tests/NAME.yaml": newPluginScenario,
		"README.md": "# NAME\n\nA ruled plugin in C: `above` (a condition) and `notify` (an action), a rule that uses\n" +
			"them (`rules/`), and a scenario (`tests/`). `make` builds `NAME.wasm`; `make test` runs the\n" +
			"scenario with `ruled test`. `sdk/` is ruled's C SDK, as this ruled shipped it.\n" + onPath,
	})
	if err := sdkFiles(files, csdk.Files, "ruled/", "sdk"); err != nil {
		return nil, err
	}
	return files, nil
}

func newRustPlugin(name string) (map[string]string, error) {
	files := fill(name, map[string]string{
		"NAME.rs": `//! NAME: a ruled plugin in Rust (the SDK: ruled/, its guide:
//! sdk/rust/README.md in ruled's repository). make builds NAME.wasm;
//! make test runs the scenario.

use ruled::{Call, Config, Error, Template};

fn init() {
    ruled::plugin("NAME", "0.1.0");
    // above: the number at the config's "path" is above its "above".
    ruled::condition("above", |cfg: &Config| {
        let path = cfg.require_str("path")?.to_string(); // the config is borrowed: copy
        let above = cfg.require_f64("above")?;
        Ok(Box::new(move |c: &Call| Ok(c.event.float(&path).map_or(false, |v| v > above))))
    })
    .example("{\"path\":\"value\",\"above\":30}");
    // notify: publish the config's "payload" (a template) on its "topic".
    ruled::action("notify", |cfg: &Config| {
        let topic = cfg.require_str("topic")?.to_string();
        let payload = Template::json(cfg, "payload")?;
        Ok(Box::new(move |c: &Call| {
            ruled::publish(&topic, &payload.render(c)).map_err(|s| Error::new(format!("notify: status {}", s.0)))?;
            Ok(Vec::new())
        }))
    })
    .needs("publish")
    .example("{\"topic\":\"NAME.alerts\",\"payload\":{\"value\":\"{{value}}\"}}");
}

ruled::main!(init);

// Native tests: the plugin's code in this process, with an in-memory host
// (ruled::native). make test runs them, then the scenario.
#[cfg(test)]
mod tests {
    use ruled::native::Native;

    #[test]
    fn above_and_notify() {
        let mut n = Native::new(super::init);
        let cfg = r#"{"path":"value","above":30}"#;
        assert!(n.when("above", cfg, r#"{"value":31.5}"#).unwrap());
        assert!(!n.when("above", cfg, r#"{"value":20}"#).unwrap());
        n.act("notify", r#"{"topic":"NAME.alerts","payload":{"v":"{{value}}"}}"#, r#"{"value":31.5}"#).unwrap();
        assert_eq!(n.published, vec![("NAME.alerts".to_string(), br#"{"v":31.5}"#.to_vec())]);
    }
}
`,
		"Makefile": `# NAME: make builds NAME.wasm (rustc for wasm32-unknown-unknown:
# apt-get install rustc libstd-rust-dev-wasm32, or rustup target add
# wasm32-unknown-unknown); make test runs the native tests, then the
# scenarios in tests/ with ruled.
RULED ?= ruled

NAME.wasm: NAME.rs ruled/src/lib.rs ruled/src/tmpl.rs ruled/src/native.rs
	sh ruled/build.sh $@ NAME.rs

test: NAME.wasm
	sh ruled/build.sh --test NAME-test NAME.rs
	./NAME-test
	$(RULED) test tests

clean:
	rm -f NAME.wasm NAME-test

.PHONY: test clean
`,
		"rules/NAME.yaml": newPluginRule,
		"tests/NAME.yaml": newPluginScenario,
		"README.md": "# NAME\n\nA ruled plugin in Rust: `above` (a condition) and `notify` (an action), native tests,\n" +
			"a rule that uses them (`rules/`), and a scenario (`tests/`). `make` builds `NAME.wasm` with rustc\n" +
			"alone; `make test` runs the native tests and the scenario with `ruled test`. `ruled/` is ruled's Rust SDK, as this ruled shipped it\n" +
			"(a crate with no dependencies: with cargo, depend on it by path).\n" + onPath,
	})
	if err := sdkFiles(files, rustsdk.Files, "", "ruled"); err != nil {
		return nil, err
	}
	return files, nil
}

func newRules() (map[string]string, error) {
	files := map[string]string{
		"rules/battery.yaml": `# A rule set's start: edit, then make test (ruled test tests) and ruled lint rules.
- id: low-battery
  description: tell once an hour when a device's battery is below 20%
  on: device.battery
  when: level < 20
  key: device
  cooldown: 1h
  steps:
    - name: alert
      do: publish.publish
      with:
        topic: alerts.battery.{{device}}
        payload: {device: "{{device}}", level: "{{level}}"}
`,
		"tests/battery.yaml": `# ruled test tests: the rules on a virtual clock, with the plugins in ../plugins.
name: a low battery is told once an hour, a full one never
rules: ../rules
plugins: {publish: ../plugins/publish.wasm}
grants: {publish: [publish]}
steps:
  - publish: {topic: device.battery, device: d1, level: 15}
  - publish: {topic: device.battery, device: d2, level: 80}
  - at: 10m
    publish: {topic: device.battery, device: d1, level: 14}
  - expect:
      published:
        - {topic: alerts.battery.d1, count: 1, payload: {device: d1, level: 15}}
        - {topic: alerts.battery.d2, count: 0}
  - at: 61m
    publish: {topic: device.battery, device: d1, level: 12}
  - expect:
      published:
        - {topic: alerts.battery.d1, count: 2}
`,
		"ruled.yaml": `# The daemon's config for this rule set: ruled run --config ruled.yaml
# (make run). Flags and RULED_* variables override it (docs/config.md).
rules: rules
plugins: plugins
data: data
http: 127.0.0.1:9480   # the console, the API and /metrics (loopback: no token needed)
plugin:
  publish: {grant: [publish]}   # a plugin does only what it is granted
`,
		"Makefile": `# make test runs the scenarios; make lint checks the rules against the plugins
# with the grants ruled.yaml gives them; make run serves the rules (ruled.yaml).
RULED ?= ruled

test:
	$(RULED) test tests

lint:
	$(RULED) lint --config ruled.yaml

run:
	$(RULED) run --config ruled.yaml

.PHONY: test lint run
`,
		"README.md": "# A rule set\n\n`rules/` holds the rules, `plugins/` the first-party plugin they use (publish; a string\n" +
			"`when:` needs none), `tests/` a scenario. `make test` runs it on a virtual clock; `make run`\n" +
			"(`ruled run --config ruled.yaml`) serves the rules on http://127.0.0.1:9480, with the grant\n" +
			"`ruled.yaml` gives publish. Send an event: `curl -d '{\"topic\":\"device.battery\",\"device\":\"d1\",\"level\":15}'\n" +
			"-H 'Content-Type: application/json' http://127.0.0.1:9480/v1/events`.\n" + onPath,
	}
	for _, m := range []string{"publish.wasm"} {
		b, err := fs.ReadFile(firstparty.Modules, m)
		if err != nil {
			return nil, err
		}
		files["plugins/"+m] = string(b)
	}
	return files, nil
}

func newGoPlugin(name string) (map[string]string, error) {
	files := fill(name, map[string]string{
		"main.go": `// Command NAME is a ruled plugin in Go (the SDK's guide: sdk/README.md in
// ruled's repository). make builds NAME.wasm; make test runs the native
// test and the scenario.
package main

import (
	ruled "github.com/ruled-dev/ruled/sdk/go"
	"github.com/ruled-dev/ruled/sdk/go/tmpl"
)

func main() {} // a plugin is a reactor: main never runs

func init() {
	ruled.Plugin("NAME", "0.1.0")

	// above: the number at the config's "path" is above its "above".
	ruled.Condition("above", func(cfg ruled.Config) (ruled.WhenFunc, error) {
		path, err := cfg.RequireString("path")
		if err != nil {
			return nil, err
		}
		above, err := cfg.RequireFloat("above")
		if err != nil {
			return nil, err
		}
		return func(ev ruled.Event) (bool, error) {
			v, ok := ev.Float(path)
			return ok && v > above, nil
		}, nil
	}).Example(` + "`" + `{"path":"value","above":30}` + "`" + `)

	// notify: publish the config's "payload" (a template) on its "topic".
	ruled.Action("notify", func(cfg ruled.Config) (ruled.DoFunc, error) {
		topic, err := cfg.RequireString("topic")
		if err != nil {
			return nil, err
		}
		v, ok := cfg.Decode("payload")
		if !ok {
			return nil, ruled.NewError("notify: config needs \"payload\" (the message: JSON, templates in its strings, such as {\"value\": \"{{value}}\"})")
		}
		payload, err := tmpl.JSON(v)
		if err != nil {
			return nil, err
		}
		return func(in *ruled.Input) ([]byte, error) {
			return nil, ruled.Publish(topic, payload.Render(nil, in.Event))
		}, nil
	}).Example(` + "`" + `{"topic":"NAME.alerts","payload":{"value":"{{value}}"}}` + "`" + `).Needs(ruled.CapPublish)
}
`,
		"main_test.go": `package main

import (
	"testing"

	ruled "github.com/ruled-dev/ruled/sdk/go"
)

// TestAboveAndNotify runs the plugin's Go code natively (go test), with
// the SDK's in-memory host: fast, and a debugger works.
func TestAboveAndNotify(t *testing.T) {
	n := &ruled.Native{}
	cfg := ` + "`" + `{"path":"value","above":30}` + "`" + `
	if hot, err := n.When("above", cfg, ` + "`" + `{"value":31.5}` + "`" + `); !hot || err != nil {
		t.Errorf("above at 31.5 = %v, %v", hot, err)
	}
	if hot, err := n.When("above", cfg, ` + "`" + `{"value":20}` + "`" + `); hot || err != nil {
		t.Errorf("above at 20 = %v, %v", hot, err)
	}
	if _, err := n.Act("notify", ` + "`" + `{"topic":"NAME.alerts","payload":{"v":"{{value}}"}}` + "`" + `, ` + "`" + `{"value":31.5}` + "`" + `); err != nil {
		t.Fatal(err)
	}
	if len(n.Published) != 1 || string(n.Published[0].Payload) != ` + "`" + `{"v":31.5}` + "`" + ` {
		t.Errorf("published %+v", n.Published)
	}
}
`,
		"go.mod": "module NAME\n\ngo 1.26\n\nrequire github.com/ruled-dev/ruled/sdk/go v" + release.Next + "\n\n" +
			"// The SDK as the ruled that made this project shipped it (ruled-sdk/): no\n" +
			"// network needed. Drop these lines to take a published version instead.\n" +
			"replace (\n\tgithub.com/ruled-dev/ruled/sdk/go => ./ruled-sdk/go\n\tgithub.com/ruled-dev/ruled/abi => ./ruled-sdk/abi\n)\n",
		"Makefile": `# NAME: make builds NAME.wasm (Go 1.26; the SDK is in ruled-sdk/, no
# network needed); make test runs the native test and the scenarios in tests/.
RULED ?= ruled

NAME.wasm: main.go go.mod
	go mod tidy
	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o $@ .

test: NAME.wasm
	go test ./...
	$(RULED) test tests

clean:
	rm -f NAME.wasm

.PHONY: test clean
`,
		"rules/NAME.yaml": newPluginRule,
		"tests/NAME.yaml": newPluginScenario,
		"README.md": "# NAME\n\nA ruled plugin in Go: `above` (a condition) and `notify` (an action), a native test\n" +
			"(`main_test.go`), a rule that uses them (`rules/`), and a scenario (`tests/`). `make` builds\n" +
			"`NAME.wasm`; `make test` runs `go test` and the scenario with `ruled test`. `ruled-sdk/` is\n" +
			"ruled's Go SDK and its ABI module, as this ruled shipped them (go.mod's replace lines point there).\n" + onPath,
	})
	if err := sdkFiles(files, ruled.Sources, "", "ruled-sdk/go"); err != nil {
		return nil, err
	}
	if err := sdkFiles(files, abi.Sources, "", "ruled-sdk/abi"); err != nil {
		return nil, err
	}
	for p := range files {
		if strings.HasPrefix(p, "ruled-sdk/") && (strings.HasSuffix(p, "_test.go") || path.Base(p) == "sources.go") {
			delete(files, p)
		}
	}
	// The SDK's module finds its ABI beside it here, not two folders up.
	gomod := files["ruled-sdk/go/go.mod"]
	if !strings.Contains(gomod, "=> ../../abi") {
		return nil, fmt.Errorf("new: the Go SDK's go.mod has no replace line for abi")
	}
	files["ruled-sdk/go/go.mod"] = strings.Replace(gomod, "=> ../../abi", "=> ../abi", 1)
	return files, nil
}

func newASPlugin(name string) (map[string]string, error) {
	files := fill(name, map[string]string{
		"assembly/index.ts": `// NAME: a ruled plugin in AssemblyScript (the SDK's guide:
// ruled-sdk/README.md). make builds NAME.wasm; make test runs the scenario.
import {
  Action, Condition, Config, Event, Template, action, condition, fail, jsonTemplate, plugin, publish, statusText, templateError,
} from "@ruled/sdk-assemblyscript";
export * from "@ruled/sdk-assemblyscript/exports"; // required: only the entry file's exports count

plugin("NAME", "0.1.0");

// above: the number at the config's "path" is above its "above".
class Above extends Condition {
  path: string = "";
  above: f64 = 0;
  configure(cfg: Config): string | null {
    if (!cfg.isString("path")) return cfg.missing("path", "a string");
    if (!cfg.isNumber("above")) return cfg.missing("above", "a number");
    this.path = cfg.str("path")!;
    this.above = cfg.float("above");
    return null;
  }
  when(ev: Event): bool {
    return ev.isNumber(this.path) && ev.float(this.path) > this.above;
  }
}

// notify: publish the config's "payload" (a template) on its "topic".
class Notify extends Action {
  topic: string = "";
  payload: Template | null = null;
  configure(cfg: Config): string | null {
    if (!cfg.isString("topic")) return cfg.missing("topic", "a string");
    this.topic = cfg.str("topic")!;
    if (!cfg.has("payload")) return cfg.missing("payload", "the message: JSON, templates in its strings");
    this.payload = jsonTemplate(cfg, "payload");
    return this.payload === null ? "notify: " + templateError : null;
  }
  act(ev: Event): void {
    let n = publish(this.topic, this.payload!.render(ev));
    if (n < 0) fail("notify: " + statusText(n));
  }
}

condition("above", (): Condition => new Above(), { doc: "a number above a level", example: ` + "`" + `{"path":"value","above":30}` + "`" + ` });
action("notify", (): Action => new Notify(), { doc: "publish a payload", example: ` + "`" + `{"topic":"NAME.alerts","payload":{"value":"{{value}}"}}` + "`" + `, needs: ["publish"] });
`,
		"package.json": `{
  "name": "NAME",
  "private": true,
  "devDependencies": {
    "assemblyscript": "0.28.20",
    "@ruled/sdk-assemblyscript": "file:ruled-sdk"
  }
}
`,
		"asconfig.json": `{
  "extends": "./node_modules/@ruled/sdk-assemblyscript/plugin.asconfig.json",
  "entries": ["assembly/index.ts"],
  "options": { "outFile": "NAME.wasm" }
}
`,
		"Makefile": `# NAME: make builds NAME.wasm (Node.js and npm: npm install fetches
# AssemblyScript; the SDK is ruled-sdk/); make test runs the scenarios.
RULED ?= ruled

NAME.wasm: assembly/index.ts node_modules
	npx asc

node_modules: package.json
	npm install --no-audit --no-fund
	touch node_modules

test: NAME.wasm
	$(RULED) test tests

clean:
	rm -f NAME.wasm

.PHONY: test clean
`,
		"rules/NAME.yaml": newPluginRule,
		"tests/NAME.yaml": newPluginScenario,
		"README.md": "# NAME\n\nA ruled plugin in AssemblyScript: `above` (a condition) and `notify` (an action), a rule\n" +
			"that uses them (`rules/`), and a scenario (`tests/`). `make` installs AssemblyScript and builds\n" +
			"`NAME.wasm`; `make test` runs the scenario with `ruled test`. `ruled-sdk/` is ruled's\n" +
			"AssemblyScript SDK, as this ruled shipped it.\n" + onPath,
	})
	if err := sdkFiles(files, assdk.Files, "", "ruled-sdk"); err != nil {
		return nil, err
	}
	return files, nil
}
