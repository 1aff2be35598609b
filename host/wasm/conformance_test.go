package wasm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/internal/plugintest"
)

// The ABI conformance suite: the same checks against the conformance plugin
// (testdata/conformance/SPEC.md) as built by each SDK. Every export, every
// status code, every host import, error texts, and large and empty inputs.

type sdkBuild struct {
	name string
	path func(t testing.TB) string
}

var sdks = []sdkBuild{
	{"go", func(t testing.TB) string { return goPlugin(t, "host/wasm/testdata/conformance/go") }},
	{"assemblyscript", func(t testing.TB) string { return asPlugin(t, "conformance") }},
	{"c", func(t testing.TB) string { return plugintest.C(t, "sdk/c/conformance") }},
	{"rust", func(t testing.TB) string { return plugintest.Rust(t, "sdk/rust/conformance/conformance.rs") }},
}

func TestConformance(t *testing.T) {
	for _, sdk := range sdks {
		t.Run(sdk.name, func(t *testing.T) {
			e := newEnv(t)
			path := sdk.path(t)
			m := e.load(t, path, Options{Name: "conformance", Grant: abi.Capabilities})
			conformance(t, e, m, path)
		})
	}
}

func conformance(t *testing.T, e *env, m *Module, path string) {
	ctx := context.Background()
	t.Run("describe", func(t *testing.T) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(b); m.Digest() != hex.EncodeToString(sum[:]) {
			t.Errorf("digest %s is not the sha256 of the file as shipped", m.Digest())
		}
		d := m.Descriptor()
		if d.Name != "conformance" || d.ABI != abi.Version || m.ABIVersion() != abi.Version {
			t.Fatalf("descriptor %+v, abi %#x", d, m.ABIVersion())
		}
		kinds := map[string]string{}
		needs := map[string]string{}
		for _, f := range d.Functions {
			kinds[f.Name] = f.Kind
			var ns []string
			for _, c := range f.Needs {
				ns = append(ns, string(c))
			}
			needs[f.Name] = strings.Join(ns, ",")
			if f.Name == "echo" && f.Example != `{"prefix":"> "}` {
				t.Errorf("echo example = %q", f.Example)
			}
		}
		want := map[string]string{
			"noop": "condition", "temp_high": "condition", "field_equals": "condition",
			"number_above": "condition", "now_is_event_time": "condition", "try_publish": "condition",
			"fail_when": "condition", "echo": "action", "echo_raw": "action", "echo_config": "action",
			"publish": "action", "kv_roundtrip": "action", "fire": "action", "fail": "action",
			"big_result": "action", "count": "action", "log_levels": "action", "reject_config": "action",
			"crash": "action", "try_http": "condition", "http": "action",
		}
		for name, kind := range want {
			if kinds[name] != kind {
				t.Errorf("function %s: kind %q; want %q", name, kinds[name], kind)
			}
		}
		if len(kinds) != len(want) {
			t.Errorf("got %d functions; want %d", len(kinds), len(want))
		}
		wantNeeds := map[string]string{"try_publish": "publish", "publish": "publish", "kv_roundtrip": "kv", "fire": "fire",
			"try_http": "http", "http": "http"}
		for name := range want {
			if needs[name] != wantNeeds[name] {
				t.Errorf("function %s needs %q; want %q", name, needs[name], wantNeeds[name])
			}
		}
	})

	t.Run("context", func(t *testing.T) {
		// ABI 1.3: the run's context after the event; a path below steps.
		// or vars. (1.4: states. and previous.) that it holds is its, any
		// other the event's.
		ctxView, err := abi.AppendJSONView(nil, []byte(`{"steps":{"ask":{"slot":"b7","price":3.5}},"vars":{"zone":"north"},`+
			`"states":{"door":{"open":true,"room":"hall"}},"previous":{"open":false,"watts":120},"sun":{"elevation":12.5}}`), false)
		if err != nil {
			t.Fatal(err)
		}
		event := `{"vehicle":"s-1","steps":{"ask":{"slot":"event's","spoof":"x"},"walked":1200},"vars":"v",` +
			`"states":{"door":{"room":"attic","spoof":"1"}},"previous":"p"}`
		for _, tc := range []struct {
			fn, config string
			want       bool
		}{
			{"field_equals", `{"path":"steps.ask.slot","value":"b7"}`, true},
			{"field_equals", `{"path":"vars.zone","value":"north"}`, true},
			{"field_equals", `{"path":"vars","value":"v"}`, true},
			{"field_equals", `{"path":"vehicle","value":"s-1"}`, true},
			{"number_above", `{"path":"steps.ask.price","above":3}`, true},
			{"field_equals", `{"path":"steps.ask.spoof","value":"x"}`, false}, // the event's steps.ask is never read
			{"field_equals", `{"path":"states.door.room","value":"hall"}`, true},
			{"field_equals", `{"path":"states.door.spoof","value":"1"}`, false},
			{"field_equals", `{"path":"previous","value":"p"}`, true},
			{"number_above", `{"path":"previous.watts","above":100}`, true},
			{"number_above", `{"path":"sun.elevation","above":12}`, true},
		} {
			h := configure(t, m, tc.fn, tc.config)
			c := call(t, event)
			c.Context = ctxView
			got, err := h.When(ctx, c)
			h.Close()
			if err != nil || got != tc.want {
				t.Errorf("%s %s = %v, %v; want %v", tc.fn, tc.config, got, err, tc.want)
			}
		}
	})

	t.Run("conditions", func(t *testing.T) {
		tests := []struct {
			fn, config, event string
			want              bool
			errText           string
		}{
			{"noop", "", sampleEvent, false, ""},
			{"temp_high", "", sampleEvent, true, ""},
			{"temp_high", "", `{"type":"temperature","data":{"value":20}}`, false, ""},
			{"temp_high", "", `{"type":"humidity","data":{"value":99}}`, false, ""},
			{"temp_high", "", `{}`, false, ""},
			{"temp_high", "", `{"type":7,"data":{"value":"hot"}}`, false, ""},
			{"field_equals", `{"path":"source","value":"sensor/kitchen"}`, sampleEvent, true, ""},
			{"field_equals", `{"path":"tags.1","value":"kitchen"}`, sampleEvent, true, ""},
			{"field_equals", `{"path":"tags.1","value":"kitchen!"}`, sampleEvent, false, ""},
			{"field_equals", `{"path":"name","value":"Zoë 🛴"}`, `{"name":"Zo\u00eb \ud83d\udef4"}`, true, ""},
			{"number_above", `{"path":"data.battery","above":80}`, sampleEvent, true, ""},
			{"number_above", `{"path":"seq","above":123456}`, sampleEvent, false, ""},
			{"number_above", `{"path":"data.value","above":23.4}`, sampleEvent, true, ""},
			{"number_above", `{"path":"data.unit","above":1}`, sampleEvent, false, "number_above: data.unit is not a number"},
			{"now_is_event_time", "", sampleEvent, true, ""},
			{"try_publish", "", sampleEvent, true, ""},
			{"try_http", "", sampleEvent, true, ""},
			{"fail_when", `{"message":"it is not to be"}`, sampleEvent, false, "it is not to be"},
		}
		for _, tc := range tests {
			t.Run(tc.fn+tc.config, func(t *testing.T) {
				h := configure(t, m, tc.fn, tc.config)
				defer h.Close()
				got, err := h.When(ctx, call(t, tc.event))
				if tc.errText != "" {
					var ce *CallError
					if !errors.As(err, &ce) || ce.Cause != CausePlugin || ce.Text != tc.errText || ce.Status != abi.StatusError {
						t.Fatalf("err = %v; want plugin error %q", err, tc.errText)
					}
					return
				}
				if err != nil || got != tc.want {
					t.Fatalf("When = %v, %v; want %v", got, err, tc.want)
				}
			})
		}
		if !e.logs.has("now 1714567296000000000") {
			t.Error("now_is_event_time did not log the event's time")
		}
		// try_publish's refused publish was counted, for the module and the runtime.
		if m.Denied() == 0 || e.rt.Denied() < m.Denied() {
			t.Errorf("refused host calls: module %d, runtime %d; want the condition's publish counted", m.Denied(), e.rt.Denied())
		}
	})

	t.Run("actions", func(t *testing.T) {
		big := bigEvent(1 << 20)
		tests := []struct {
			fn, config, event string
			want              string
			errText           string
		}{
			{"echo", `{"prefix":"> "}`, sampleEvent,
				"> topic=sensors.kitchen rule=r1 step=s1 run=run-9 key=run-9/s1/2 pass=2 time=1714567296000000000", ""},
			{"echo", ``, `{}`, "topic=sensors.kitchen rule=r1 step=s1 run=run-9 key=run-9/s1/2 pass=2 time=1714567296000000000", ""},
			{"echo_raw", "", sampleEvent, sampleEvent, ""},
			{"echo_raw", "", `{}`, `{}`, ""},
			{"echo_raw", "", big, big, ""},
			{"echo_config", ` {"a": [1, 2.5, "x"], "b": null} `, `{}`, ` {"a": [1, 2.5, "x"], "b": null} `, ""},
			{"echo_config", ``, `{}`, `{}`, ""},
			{"publish", `{"topic":"alerts.kitchen"}`, sampleEvent, "", ""},
			{"publish", `{"topic":"ruled.cmd.r1"}`, sampleEvent, "", "publish: status 7"},
			{"kv_roundtrip", "", `{"key":"k1","value":"v1"}`, "v1", ""},
			{"kv_roundtrip", "", `{"key":"k2","value":"` + strings.Repeat("v", 1001) + `"}`, "", "kv: set: status 9"},
			{"fire", `{"rule":"other"}`, `{"x":1}`, "exec-1-from-run-9", ""},
			{"fire", `{"rule":"missing"}`, `{"x":1}`, "", "fire: status 8"},
			{"http", `{"url":"http://h/answer"}`, `{"x":1}`, `200 42 POST http://h/answer run-9/s1/2 {"x":1}`, ""},
			{"http", `{"url":"http://refused/"}`, `{}`, "", "http: status 7 (the host: refused)"},
			{"fail", `{"message":"no luck"}`, `{}`, "", "no luck"},
			{"big_result", `{"size":0}`, `{}`, "", ""},
			{"big_result", `{"size":3.0}`, `{}`, "xxx", ""},
			{"big_result", `{"size":1048576}`, `{}`, strings.Repeat("x", 1<<20), ""},
			{"count", `{"path":"tags"}`, sampleEvent, "2", ""},
			{"count", `{"path":""}`, sampleEvent, "7", ""},
			{"count", `{"path":"items"}`, big, "50000", ""},
			{"count", `{"path":"id"}`, sampleEvent, "", "count: id is not a container"},
			{"log_levels", "", `{}`, "", ""},
		}
		for _, tc := range tests {
			name := tc.fn + tc.config
			if len(name) > 60 {
				name = name[:60]
			}
			t.Run(name, func(t *testing.T) {
				h := configure(t, m, tc.fn, tc.config)
				defer h.Close()
				got, err := h.Act(ctx, call(t, tc.event))
				if tc.errText != "" {
					var ce *CallError
					if !errors.As(err, &ce) || ce.Cause != CausePlugin || ce.Text != tc.errText {
						t.Fatalf("err = %v; want plugin error %q", err, tc.errText)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != tc.want {
					t.Fatalf("Act = %.80q (%d bytes); want %.80q (%d bytes)", got, len(got), tc.want, len(tc.want))
				}
			})
		}
		// A crash is reported in the plugin's own words, whatever its
		// language makes of it (a Go panic is recovered by the SDK; an
		// AssemblyScript abort traps): never the runtime's trap text and
		// stack, which the operator's views would show instead.
		h := configure(t, m, "crash", `{"message":"sensor on fire"}`)
		_, err := h.Act(ctx, call(t, `{}`))
		h.Close()
		var ce *CallError
		if !errors.As(err, &ce) || !strings.Contains(ce.Text, "sensor on fire") || strings.Contains(err.Error(), "\n") ||
			strings.Contains(err.Error(), "unreachable") {
			t.Errorf("crash: err = %q; want one line with the plugin's message", err)
		}
		e.svc.mu.Lock()
		defer e.svc.mu.Unlock()
		if len(e.svc.published) != 1 || e.svc.published[0].topic != "alerts.kitchen" ||
			e.svc.published[0].payload != sampleEvent || e.svc.published[0].from.Plugin != "conformance" {
			t.Errorf("published = %+v", e.svc.published)
		}
		if len(e.svc.fired) != 1 || e.svc.fired[0] != `other {"x":1}` {
			t.Errorf("fired = %q", e.svc.fired)
		}
		if len(e.svc.kv) != 0 {
			t.Errorf("kv left behind: %v", e.svc.kv)
		}
		for l := 0; l <= 4; l++ {
			if !e.logs.has("level " + strconv.Itoa(l)) {
				t.Errorf("log line %q missing", "level "+strconv.Itoa(l))
			}
		}
	})

	t.Run("config refused", func(t *testing.T) {
		tests := []struct{ fn, config, text string }{
			{"reject_config", `{}`, "reject_config: refused"},
			{"field_equals", `{"value":"x"}`, `field_equals: config needs "path"`},
			{"field_equals", `{"path":"x"}`, `field_equals: config needs "value"`},
			// A value of the wrong type is named as such, not as missing.
			{"number_above", `{"path":"x","above":"high"}`, `number_above: config "above" must be a number, not the string "high"`},
			{"number_above", `{"path":"x","above":null}`, `number_above: config "above" must be a number, not null`},
			{"publish", `{"topic":1}`, `publish: config "topic" must be a string, not the number 1`},
			{"big_result", `{}`, `big_result: config needs "size"`},
			{"big_result", `{"size":-1}`, `big_result: config "size" must be from 0 to 1073741823`},
		}
		for _, tc := range tests {
			_, err := m.Configure(ctx, tc.fn, []byte(tc.config))
			var ce *CallError
			if !errors.As(err, &ce) || ce.Cause != CauseConfig || ce.Status != abi.StatusBadConfig || ce.Text != tc.text {
				t.Errorf("Configure(%s, %s) = %v; want config refused %q", tc.fn, tc.config, err, tc.text)
			}
		}
		if _, err := m.Configure(ctx, "nope", nil); err == nil {
			t.Error("Configure of an unknown function succeeded")
		}
		h := configure(t, m, "noop", "")
		h.Close()
		if _, err := h.When(ctx, call(t, `{}`)); err == nil || !strings.Contains(err.Error(), "closed handle") {
			t.Errorf("When after Close = %v; want a closed-handle error", err)
		}
	})

	t.Run("host limits", func(t *testing.T) {
		h := configure(t, m, "big_result", `{"size":1048577}`)
		_, err := h.Act(ctx, call(t, `{}`))
		var ce *CallError
		if !errors.As(err, &ce) || ce.Cause != CauseABI || !strings.Contains(ce.Text, "over the limit") {
			t.Fatalf("err = %v; want result over the limit", err)
		}
		e.svc.mu.Lock()
		e.svc.kvDown = true
		e.svc.mu.Unlock()
		defer func() { e.svc.mu.Lock(); e.svc.kvDown = false; e.svc.mu.Unlock() }()
		h = configure(t, m, "kv_roundtrip", "")
		_, err = h.Act(ctx, call(t, `{"key":"a","value":"b"}`))
		if !errors.As(err, &ce) || ce.Text != "kv: set: status 10" {
			t.Fatalf("err = %v; want kv: set: status 10", err)
		}
	})

	t.Run("effects", func(t *testing.T) {
		// A call told to listen hears what it did beyond its answer; a
		// publish the host refused is not something it did.
		for _, tc := range []struct{ fn, config, event, want string }{
			{"publish", `{"topic":"alerts.kitchen"}`, `{"t":1}`, `published alerts.kitchen {"t":1}`},
			{"publish", `{"topic":"ruled.cmd.r1"}`, `{"t":1}`, ``},
			{"kv_roundtrip", "", `{"key":"k9","value":"v"}`, `kv set k9|kv delete k9`},
		} {
			h := configure(t, m, tc.fn, tc.config)
			c := call(t, tc.event)
			var effects []string
			c.Effects = &effects
			h.Act(ctx, c)
			h.Close()
			if got := strings.Join(effects, "|"); got != tc.want {
				t.Errorf("%s %s: effects %q; want %q", tc.fn, tc.config, got, tc.want)
			}
		}
	})

	t.Run("exports", func(t *testing.T) { exportLevel(t, m) })
}

// exportLevel drives the raw exports to reach the statuses the Handle API
// never produces: an unknown function, a handle of the wrong kind or never
// issued, and input that does not decode.
func exportLevel(t *testing.T, m *Module) {
	ctx := context.Background()
	in, err := m.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer m.release(in)
	callRaw := func(f int, args ...uint64) uint64 {
		t.Helper()
		stack := make([]uint64, 3)
		copy(stack, args)
		if err := in.invoke(ctx, in.fns[f], m.limits.Timeout, 0, stack); err != nil {
			t.Fatalf("%s: %v", exportNames[f], err)
		}
		return stack[0]
	}
	write := func(b []byte) (uint64, uint64) {
		p, n, err := in.input(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		return uint64(p), uint64(n)
	}
	cfg, _ := abi.AppendJSONView(nil, []byte(`{}`), true)
	v, _ := abi.ParseView(cfg)

	p, n := write(abi.AppendConfigureInput(nil, "no_such_function", v))
	if st, _ := abi.UnpackConfigure(callRaw(fnConfigure, p, n)); st != abi.StatusUnknownFunction {
		t.Errorf("configure unknown: status %v; want %v", st, abi.StatusUnknownFunction)
	}
	p, n = write([]byte{0xff})
	if st, _ := abi.UnpackConfigure(callRaw(fnConfigure, p, n)); st != abi.StatusBadInput {
		t.Errorf("configure garbage: status %v; want %v", st, abi.StatusBadInput)
	}
	p, n = write(abi.AppendConfigureInput(nil, "noop", v))
	st, cond := abi.UnpackConfigure(callRaw(fnConfigure, p, n))
	if st != abi.StatusOK || cond == 0 {
		t.Fatalf("configure noop: %v %d", st, cond)
	}
	input := abi.AppendCallInfo(nil, &abi.CallInfo{Topic: "t"})
	input = append(input, cfg...)
	p, n = write(input)
	status := func(f int, args ...uint64) abi.Status { return abi.Status(int32(api.DecodeU32(callRaw(f, args...)))) }
	if got := status(fnWhen, uint64(cond), p, n); got != abi.StatusOK {
		t.Errorf("when noop: %v", got)
	}
	if got := status(fnAct, uint64(cond), p, n); got != abi.StatusUnknownFunction {
		t.Errorf("act with a condition's handle: %v; want %v", got, abi.StatusUnknownFunction)
	}
	if got := status(fnWhen, 987654, p, n); got != abi.StatusBadHandle {
		t.Errorf("when with a handle never issued: %v; want %v", got, abi.StatusBadHandle)
	}
	bad := bytes.Clone(input)
	bad[len(bad)-len(cfg)] = 'X' // break the view's magic
	p2, n2 := write(bad)
	if got := status(fnWhen, uint64(cond), p2, n2); got != abi.StatusBadInput {
		t.Errorf("when with a broken view: %v; want %v", got, abi.StatusBadInput)
	}
	if got := status(fnWhen, uint64(cond), p2, 3); got != abi.StatusBadInput {
		t.Errorf("when with a truncated header: %v; want %v", got, abi.StatusBadInput)
	}
	callRaw(fnRelease, uint64(cond))
	p, n = write(input)
	if got := status(fnWhen, uint64(cond), p, n); got != abi.StatusBadHandle {
		t.Errorf("when after release: %v; want %v", got, abi.StatusBadHandle)
	}
	callRaw(fnRelease, 424242) // releasing an unknown handle is not an error
	// What is checked is that the allocation succeeds, not how fast: growing
	// a Go guest's memory by 16 MiB has taken over a second on a loaded CI
	// machine under -race, so the call gets more than the default deadline.
	stack := []uint64{16 << 20}
	if err := in.invoke(ctx, in.fns[fnAlloc], 30*time.Second, 0, stack); err != nil || api.DecodeU32(stack[0]) == 0 {
		t.Errorf("alloc 16 MiB: %v, %#x", err, stack[0])
	}
	in.buf, in.bufCap = 0, 0 // forget it: the next input allocates afresh
}

// bigEvent builds an event of about n bytes with a 50,000-element array.
func bigEvent(n int) string {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := 0; i < 50000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
	}
	b.WriteString(`],"pad":"`)
	for b.Len() < n-2 {
		b.WriteByte('p')
	}
	b.WriteString(`"}`)
	return b.String()
}
