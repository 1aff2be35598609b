package ruled

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/abi"
)

// The SDK's exports run natively too, so their logic is tested here; the
// wasm side is covered by the host's conformance suite.

func init() {
	Condition("test_above", func(cfg Config) (WhenFunc, error) {
		limit, err := cfg.RequireFloat("limit")
		if err != nil {
			return nil, err
		}
		return func(ev Event) (bool, error) {
			v, ok := ev.Float("v")
			return ok && v > limit, nil
		}, nil
	}).Example(`{"limit":1}`)
	Condition("test_panic", func(Config) (WhenFunc, error) {
		return func(Event) (bool, error) { panic("oops") }, nil
	})
	Action("test_echo", func(cfg Config) (DoFunc, error) {
		prefix := cfg.String("prefix", "")
		return func(in *Input) ([]byte, error) {
			return []byte(prefix + in.Rule() + "/" + in.Step() + "/" + in.Key()), nil
		}, nil
	}).Needs(CapKV)
	Action("test_host", func(Config) (DoFunc, error) {
		return func(in *Input) ([]byte, error) {
			KVSet("a", []byte("1"))
			v, _, _ := KVGet("a")
			Publish("t.out", []byte(`{"a":`+string(v)+`}`))
			id, _ := Fire("other", []byte(`{}`))
			return append(eventRaw(), " "+id+" "+Now().UTC().Format("15:04")...), nil
		}, nil
	}).Needs(CapKV, CapPublish, CapFire)
	Action("test_http", func(cfg Config) (DoFunc, error) {
		return func(in *Input) ([]byte, error) {
			resp, err := HTTP(Request{Method: "POST", URL: cfg.String("url", ""), Header: [][2]string{{"Idempotency-Key", in.Key()}}})
			if err != nil {
				return nil, err
			}
			return append([]byte(strconv.Itoa(resp.Status)+" "+Header(resp.Header, "x-answer")+" "), resp.Body...), nil
		}, nil
	}).Needs(CapHTTP)
	Action("test_fail", func(cfg Config) (DoFunc, error) {
		perm := cfg.Bool("permanent", false)
		return func(in *Input) ([]byte, error) {
			err := errors.New("attempt " + strconv.Itoa(in.Attempt()))
			if perm {
				err = fmt.Errorf("refused: %w", Permanent(err))
			}
			return nil, err
		}, nil
	})
}

// TestPermanent: an action's error marked Permanent, wrapped or not,
// answers StatusPermanent; any other error StatusError. The call header's
// attempt reaches Input.Attempt.
func TestPermanent(t *testing.T) {
	for _, perm := range []bool{false, true} {
		st, h := configure(configureInput(t, "test_fail", `{"permanent":`+strconv.FormatBool(perm)+`}`))
		if st != abi.StatusOK {
			t.Fatal(st, string(errText))
		}
		b := abi.AppendCallInfo(nil, &abi.CallInfo{Rule: "r", Step: "s", Key: "k1", Attempt: 3})
		b, _ = abi.AppendJSONView(b, []byte(`{}`), false)
		want, text := abi.StatusError, "attempt 3"
		if perm {
			want, text = abi.StatusPermanent, "refused: attempt 3"
		}
		if got := act(h, b); got != want || string(errText) != text {
			t.Errorf("permanent %v: act = %v %q; want %v %q", perm, got, errText, want, text)
		}
	}
	if Permanent(nil) != nil {
		t.Error("Permanent(nil) is an error")
	}
}

func configureInput(t *testing.T, fn, config string) []byte {
	t.Helper()
	b, err := abi.AppendJSONView(nil, []byte(config), true)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := abi.ParseView(b)
	return abi.AppendConfigureInput(nil, fn, v)
}

func callInput(t *testing.T, event string) []byte {
	t.Helper()
	b := abi.AppendCallInfo(nil, &abi.CallInfo{Rule: "r", Step: "s", Key: "k1"})
	b, err := abi.AppendJSONView(b, []byte(event), false)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDispatch(t *testing.T) {
	st, cond := configure(configureInput(t, "test_above", `{"limit":10}`))
	if st != abi.StatusOK || cond == 0 {
		t.Fatalf("configure = %v, %d", st, cond)
	}
	tests := []struct {
		event string
		want  abi.Status
	}{
		{`{"v":11}`, abi.StatusTrue},
		{`{"v":10}`, abi.StatusOK},
		{`{}`, abi.StatusOK},
	}
	for _, tc := range tests {
		if got := when(cond, callInput(t, tc.event)); got != tc.want {
			t.Errorf("when(%s) = %v; want %v", tc.event, got, tc.want)
		}
	}
	if got := when(cond, []byte{1, 2}); got != abi.StatusBadInput {
		t.Errorf("when(garbage) = %v; want bad input", got)
	}
	if got := act(cond, callInput(t, `{}`)); got != abi.StatusUnknownFunction {
		t.Errorf("act(condition handle) = %v; want unknown function", got)
	}

	st, echo := configure(configureInput(t, "test_echo", `{"prefix":">"}`))
	if st != abi.StatusOK {
		t.Fatal(st, string(errText))
	}
	if got := act(echo, callInput(t, `{}`)); got != abi.StatusOK || string(result) != ">r/s/k1" {
		t.Errorf("act = %v, %q", got, result)
	}

	st, _ = configure(configureInput(t, "test_above", `{}`))
	if st != abi.StatusBadConfig || string(errText) != `test_above: config needs "limit"` {
		t.Errorf("configure without limit = %v %q", st, errText)
	}
	// A value of the wrong type is named as such, not as missing.
	for cfg, want := range map[string]string{
		`{"limit":"thirty"}`: `test_above: config "limit" must be a number, not the string "thirty"`,
		`{"limit":true}`:     `test_above: config "limit" must be a number, not true`,
		`{"limit":[1]}`:      `test_above: config "limit" must be a number, not an array`,
	} {
		st, _ = configure(configureInput(t, "test_above", cfg))
		if st != abi.StatusBadConfig || string(errText) != want {
			t.Errorf("configure %s = %v %q; want %q", cfg, st, errText, want)
		}
	}
	if st, _ := configure(configureInput(t, "nope", `{}`)); st != abi.StatusUnknownFunction {
		t.Errorf("configure unknown = %v", st)
	}

	_, p := configure(configureInput(t, "test_panic", `{}`))
	if got := when(p, callInput(t, `{}`)); got != abi.StatusError || string(errText) != "panic: oops" {
		t.Errorf("a panicking condition = %v %q", got, errText)
	}

	release(cond)
	if got := when(cond, callInput(t, `{}`)); got != abi.StatusBadHandle {
		t.Errorf("when after release = %v; want bad handle", got)
	}
	// The freed slot is reused by the next configure.
	if _, h := configure(configureInput(t, "test_above", `{"limit":0}`)); h != cond {
		t.Errorf("handle %d not reused (freed %d)", h, cond)
	}
}

func TestDescribe(t *testing.T) {
	d := string(describe())
	for _, want := range []string{`"abi":` + strconv.Itoa(abi.Version), `{"name":"test_above","kind":"condition","example":"{\"limit\":1}"}`,
		`{"name":"test_echo","kind":"action","needs":["kv"]}`} {
		if !strings.Contains(d, want) {
			t.Errorf("describe = %s; missing %s", d, want)
		}
	}
}

func TestWhenAllocatesNothing(t *testing.T) {
	_, h := configure(configureInput(t, "test_above", `{"limit":1}`))
	in := callInput(t, `{"v":2,"other":"x"}`)
	n := testing.AllocsPerRun(100, func() {
		if when(h, in) != abi.StatusTrue {
			t.Fatal("wrong")
		}
	})
	if n != 0 {
		t.Errorf("when allocates %v times per call", n)
	}
}
