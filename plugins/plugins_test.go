//go:build !wasip1

// The plugins are tested from the host side: built to wasm and loaded.
package plugins_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/exprcheck"
	"github.com/ruled-dev/ruled/host/wasm"
	"github.com/ruled-dev/ruled/internal/plugintest"
	"github.com/ruled-dev/ruled/internal/syncbuf"
)

type bus struct {
	mu     sync.Mutex
	got    []string
	refuse error // what Publish answers, when set
}

func (b *bus) Publish(_ context.Context, _ wasm.Origin, topic string, payload []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.refuse != nil {
		return b.refuse
	}
	b.got = append(b.got, topic+" "+string(payload))
	return nil
}

func load(t *testing.T, name string, grant ...abi.Capability) (*wasm.Module, *bus, *syncbuf.Buffer) {
	t.Helper()
	return loadWith(t, name, wasm.Services{}, grant...)
}

func loadWith(t testing.TB, name string, svc wasm.Services, grant ...abi.Capability) (*wasm.Module, *bus, *syncbuf.Buffer) {
	t.Helper()
	b, l := &bus{}, &syncbuf.Buffer{}
	svc.Publisher = b
	rt, err := wasm.NewRuntime(context.Background(), wasm.Config{
		CacheDir: plugintest.CacheDir(),
		Logger:   hclog.New(&hclog.LoggerOptions{Output: l, Level: hclog.Trace}),
		Services: svc,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	m, err := rt.LoadFile(context.Background(), plugintest.FirstParty(t, name), wasm.Options{Name: name, Grant: grant})
	if err != nil {
		t.Fatal(err)
	}
	return m, b, l
}

func call(t testing.TB, event string) *wasm.Call {
	t.Helper()
	c, err := wasm.NewCall(abi.CallInfo{Topic: "scooter.telemetry", Rule: "r", Step: "s", Run: "run-1", Key: "run-1/s/0"}, []byte(event))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const ev = `{"topic":"scooter.telemetry","vehicle":"s-17","battery":12.5,"charging":false,"type":"telemetry","tags":["city","rental"],"pos":{"lat":52.5,"lon":13.4}}`

// TestExprContext: a condition reads the run's context — an earlier
// step's output, a variable, a state the rule reads, the trigger's
// previous state — as a chain of names below steps, vars, states or
// previous; the event's own field of that name is never read in its place.
func TestExprContext(t *testing.T) {
	m, _, _ := load(t, "expr")
	ctx := context.Background()
	view := mustView(t, `{"steps":{"ask":{"free":true,"n":3,"slots":["b7","c1"],"x.y":1}},"vars":{"limit":20},`+
		`"states":{"door":{"open":true},"lux":{"value":12.5}},"previous":{"watts":120,"on":true},"sun":{"elevation":-3.5,"above_horizon":false}}`)
	event := `{"vehicle":"s-1","watts":3,"steps":{"walked":1200,"ask":{"free":false,"spoof":1}},"states":{"door":{"open":false,"spoof":1}},"previous":{"x":1}}`
	for _, c := range []struct {
		expr string
		want bool
	}{
		{`steps.ask.free == true && steps.ask.n > 2`, true},
		{`steps.ask.slots[0] == "b7" && steps.ask.slots[1] == "c1"`, true},
		{`steps.ask["x.y"] == 1`, true},
		{`vars.limit == 20 && vehicle == "s-1"`, true},
		{`steps.walked == nil && steps.ask.spoof == nil`, true}, // the event's own steps never read as outputs
		{`steps?.none?.x == nil`, true},
		{`len(steps.ask.slots) == 2`, true},
		{`states.door.open && states.lux.value < 20`, true},
		{`states["door"].open == true && states.door.spoof == nil`, true},
		{`states.window == nil && states.window?.open == nil`, true}, // a state missing (or stale) is nil
		{`previous.watts > 100 && watts < 5`, true},
		{`previous.x == nil && previous.on`, true}, // the event's own previous field never read in its place
		{`!sun.above_horizon && sun.elevation < -0.83`, true},
	} {
		h, err := m.Configure(ctx, "expr", []byte(`{"expr":`+string(abi.AppendJSONString(nil, c.expr))+`}`))
		if err != nil {
			t.Fatal(err)
		}
		cl := call(t, event)
		cl.Context = view
		got, err := h.When(ctx, cl)
		if err != nil || got != c.want {
			t.Errorf("%s = %v, %v; want %v", c.expr, got, err, c.want)
		}
		h.Close()
		prog, perr := exprcheck.Compile(c.expr)
		if perr != nil {
			t.Fatal(perr)
		}
		if msg := sameAsGuest(t, prog, cl, got, err); msg != "" {
			t.Errorf("%s: %s", c.expr, msg)
		}
	}
}

func TestExpr(t *testing.T) {
	m, _, _ := load(t, "expr")
	ctx := context.Background()
	tests := []struct {
		expr string
		want bool
		err  string
	}{
		{`battery < 20 && !charging`, true, ""},
		{`battery < 10`, false, ""},
		{`vehicle startsWith "s-" && "city" in tags`, true, ""},
		{`pos.lat > 50 && pos.lon < 14`, true, ""},
		{`$env.type == "telemetry"`, true, ""},
		{`missing == nil`, true, ""},
		{`len(tags) == 2`, true, ""},
		{`battery + "x"`, false, "expr:"},
		{`battery`, false, "the condition is a float, not a bool"},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			h, err := m.Configure(ctx, "expr", []byte(`{"expr":`+string(abi.AppendJSONString(nil, tc.expr))+`}`))
			if tc.err != "" && err != nil {
				if !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v; want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := h.When(ctx, call(t, ev))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v; want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("When = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	for _, bad := range []string{`{"expr":"battery <"}`, `{}`, `{"expr":"1 + 1"}`} {
		_, err := m.Configure(ctx, "expr", []byte(bad))
		var ce *wasm.CallError
		if !errors.As(err, &ce) || ce.Cause != wasm.CauseConfig {
			t.Errorf("Configure(%s) = %v; want a refused config", bad, err)
		}
	}
}

func TestPublish(t *testing.T) {
	m, b, _ := load(t, "publish", abi.CapPublish)
	ctx := context.Background()
	h, err := m.Configure(ctx, "publish", []byte(`{"topic":"alerts.battery.{{vehicle}}","payload":{"vehicle":"{{vehicle}}","level":"{{battery}}","where":"{{pos}}","msg":"low: {{battery}}%"}}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Act(ctx, call(t, ev))
	if err != nil || string(out) != `{"topic":"alerts.battery.s-17"}` {
		t.Fatalf("Act = %q, %v", out, err)
	}
	plain, err := m.Configure(ctx, "publish", []byte(`{"topic":"copy"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Act(ctx, call(t, ev)); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`alerts.battery.s-17 {"level":12.5,"msg":"low: 12.5%","vehicle":"s-17","where":{"lat":52.5,"lon":13.4}}`,
		"copy " + ev,
	}
	if strings.Join(b.got, "\n") != strings.Join(want, "\n") {
		t.Errorf("published\n%s\nwant\n%s", strings.Join(b.got, "\n"), strings.Join(want, "\n"))
	}
	reserved, _ := m.Configure(ctx, "publish", []byte(`{"topic":"ruled.cmd.x"}`))
	if _, err := reserved.Act(ctx, call(t, ev)); err == nil || !strings.Contains(err.Error(), "denied") {
		t.Errorf("publishing to a reserved topic: %v", err)
	}
	if _, err := m.Configure(ctx, "publish", []byte(`{"topic":"t","payload":[1]}`)); err == nil {
		t.Error("a non-object payload configured")
	}
}

// TestPublishSaysWhy: a publish the bus refuses fails the step with the
// bus's reason beside the plugin's "denied": an event id rendered as a
// number from a step's output is not left a mystery.
func TestPublishSaysWhy(t *testing.T) {
	m, b, _ := load(t, "publish", abi.CapPublish)
	ctx := context.Background()
	h, err := m.Configure(ctx, "publish", []byte(`{"topic":"t","payload":{"id":"{{battery}}"}}`))
	if err != nil {
		t.Fatal(err)
	}
	b.refuse = fmt.Errorf("%w: bus: event id must be a string", wasm.ErrDenied)
	_, err = h.Act(ctx, call(t, ev))
	if err == nil || !strings.Contains(err.Error(), "denied") || !strings.Contains(err.Error(), "(the host: ") ||
		!strings.Contains(err.Error(), "event id must be a string") {
		t.Errorf("error %v; want denied with the bus's reason", err)
	}
}

func TestPublishNeedsGrant(t *testing.T) {
	rt, err := wasm.NewRuntime(context.Background(), wasm.Config{CacheDir: plugintest.CacheDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	_, err = rt.LoadFile(context.Background(), plugintest.FirstParty(t, "publish"), wasm.Options{})
	if err == nil || !strings.Contains(err.Error(), `needs the "publish" capability`) {
		t.Fatalf("load without grant: %v", err)
	}
}

func TestLog(t *testing.T) {
	m, _, l := load(t, "log")
	ctx := context.Background()
	h, err := m.Configure(ctx, "log", []byte(`{"level":"warn","message":"battery {{battery}}% on {{vehicle}}"}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.Act(ctx, call(t, ev))
	if err != nil || string(out) != "battery 12.5% on s-17" {
		t.Fatalf("Act = %q, %v", out, err)
	}
	logged := l.String()
	if !strings.Contains(logged, "[WARN]  battery 12.5% on s-17: plugin=log function=log rule=r step=s") {
		t.Errorf("log output:\n%s", logged)
	}
	if _, err := m.Configure(ctx, "log", []byte(`{"message":"x","level":"loud"}`)); err == nil {
		t.Error("an unknown level configured")
	}
}
