//go:build !wasip1

package ruled

import (
	"errors"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
)

// Native runs the registered functions in-process against an in-memory
// host: the call header gets test values, publish/kv/fire land in its
// fields, and a failure is a CallError with the status the host would see.
func TestNative(t *testing.T) {
	n := &Native{}
	ok, err := n.When("test_above", `{"limit":1}`, `{"v":2}`)
	if !ok || err != nil {
		t.Errorf("When = %v, %v", ok, err)
	}
	if ok, err := n.When("test_above", `{"limit":1}`, `{"v":0}`); ok || err != nil {
		t.Errorf("When = %v, %v", ok, err)
	}
	out, err := n.Act("test_echo", `{"prefix":"p:"}`, `{}`)
	if string(out) != "p:test/test/test-run/test/0" || err != nil {
		t.Errorf("Act = %q, %v", out, err)
	}
	n.Info.Rule, n.Info.Key = "r", "k"
	if out, _ := n.Act("test_echo", "", `{}`); string(out) != "r/test/k" {
		t.Errorf("Act with Info = %q", out)
	}
	for _, tc := range []struct {
		fn, config string
		st         abi.Status
	}{
		{"missing", "", abi.StatusUnknownFunction},
		{"test_above", `{}`, abi.StatusBadConfig},
		{"test_panic", "", abi.StatusError},
	} {
		_, err := n.When(tc.fn, tc.config, `{"v":1}`)
		var ce *CallError
		if !errors.As(err, &ce) || ce.Status != tc.st {
			t.Errorf("%s: %v; want status %v", tc.fn, err, tc.st)
		}
	}
	// The host functions, natively, during and outside a call.
	n = &Native{Now: time.Date(2026, 1, 1, 8, 30, 0, 0, time.UTC)}
	out, err = n.Act("test_host", "", `{"topic":"x"}`)
	if string(out) != `{"topic":"x"} test-fired-run 08:30` || err != nil || string(n.KV["a"]) != "1" ||
		len(n.Published) != 1 || n.Published[0].Topic != "t.out" || string(n.Published[0].Payload) != `{"a":1}` ||
		len(n.Fired) != 1 || n.Fired[0].Topic != "other" {
		t.Errorf("Act = %q, %v; native %+v", out, err, n)
	}
	if err := Publish("t", []byte(`{}`)); err == nil {
		t.Error("Publish outside a Native call did not fail")
	}
}

// Natively, HTTP goes to Native.HTTP: a test answers it (or forwards it
// to an httptest server), and sees what the plugin sent.
func TestNativeHTTP(t *testing.T) {
	n := &Native{HTTP: func(r Request) (Response, abi.Status) {
		if r.URL == "http://denied/" {
			return Response{}, abi.StatusDenied
		}
		return Response{Status: 201, Header: [][2]string{{"X-Answer", "42"}}, Body: []byte("made")}, abi.StatusOK
	}}
	n.Info.Key = "k9"
	out, err := n.Act("test_http", `{"url":"http://h/x"}`, `{}`)
	if string(out) != "201 42 made" || err != nil {
		t.Errorf("Act = %q, %v", out, err)
	}
	if len(n.Requests) != 1 || n.Requests[0].Method != "POST" || Header(n.Requests[0].Header, "idempotency-key") != "k9" {
		t.Errorf("requests %+v", n.Requests)
	}
	_, err = n.Act("test_http", `{"url":"http://denied/"}`, `{}`)
	var ce *CallError
	if !errors.As(err, &ce) || ce.Status != abi.StatusError || ce.Text != "http_request: denied" {
		t.Errorf("a refused request: %v", err)
	}
	if _, err := (&Native{}).Act("test_http", `{"url":"http://h/"}`, `{}`); err == nil {
		t.Error("without Native.HTTP a request succeeded")
	}
}
