package observe_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/observe"
	"github.com/ruled-dev/ruled/host/seq"
)

func event(t *testing.T, js string) *bus.Event {
	t.Helper()
	var dec bus.Decoder
	e, err := dec.Decode([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestTaps: every tap sees each dispatched event once, with the step that
// published it when a plugin did and the traceparent it came with; a cancelled tap sees no more, and with
// none left nothing is kept (Published is a no-op).
func TestTaps(t *testing.T) {
	var taps observe.Taps
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var a, b []observe.Seen
	stopA := taps.Tap(func(s observe.Seen) { a = append(a, s) })
	stopB := taps.Tap(func(s observe.Seen) { b = append(b, s) })
	e1 := event(t, `{"topic":"scooter.telemetry","battery":12}`)
	e2 := event(t, `{"topic":"scooter.alert"}`)
	e2.Trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" // a capture keeps it
	taps.Published(e2.ID, "low-battery/alert")
	taps.Dispatched(at, e1)
	taps.Dispatched(at, e2)
	stopA()
	stopA() // twice is once
	taps.Dispatched(at, e1)
	if len(a) != 2 || len(b) != 3 {
		t.Fatalf("a saw %d, b saw %d; want 2 and 3", len(a), len(b))
	}
	if a[0].By != "" || a[1].By != "low-battery/alert" || b[1].By != "low-battery/alert" || !a[0].At.Equal(at) {
		t.Errorf("origins %q %q %q, at %v", a[0].By, a[1].By, b[1].By, a[0].At)
	}
	if a[0].Trace != "" || a[1].Trace != e2.Trace {
		t.Errorf("traceparents %q %q; want none and e2's", a[0].Trace, a[1].Trace)
	}
	stopB()
	if taps.Watching() {
		t.Error("watching with no tap left")
	}
	taps.Published(e1.ID, "r/s") // not kept: nobody records
	var c []observe.Seen
	defer taps.Tap(func(s observe.Seen) { c = append(c, s) })()
	taps.Dispatched(at, e1)
	if len(c) != 1 || c[0].By != "" {
		t.Errorf("a later tap saw %+v; want e1 from outside", c)
	}
}

// TestStream: the NDJSON stream carries each dispatched event as a Seen
// line, and ends when quit closes.
func TestStream(t *testing.T) {
	var taps observe.Taps
	quit := make(chan struct{})
	srv := httptest.NewServer(observe.Stream(&taps, quit))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("content type %q", ct)
	}
	for !taps.Watching() { // the handler taps once the response began
		time.Sleep(time.Millisecond)
	}
	taps.Dispatched(time.Now(), event(t, `{"topic":"a","n":1}`))
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() {
		t.Fatal("no line")
	}
	var s observe.Seen
	if err := json.Unmarshal(sc.Bytes(), &s); err != nil || string(s.Event) == "" {
		t.Fatalf("line %q: %v", sc.Text(), err)
	}
	close(quit)
	if sc.Scan() {
		t.Errorf("a line after quit: %q", sc.Text())
	}
}

type failing struct{}

func (failing) Act(context.Context, *seq.Call) ([]byte, error) {
	return []byte(`{"ok":false}`), errors.New("down")
}

// TestAction: the watcher sees what went in and came out, copied.
func TestAction(t *testing.T) {
	var got []observe.ActionCall
	a := observe.Action(failing{}, "sms.send", "d1", []byte(`{"to":"x"}`), func(c observe.ActionCall) { got = append(got, c) })
	raw := []byte(`{"topic":"t"}`)
	c := &seq.Call{Info: abi.CallInfo{Rule: "r", Step: "s", Run: "run1", Key: "run1/s/0"}, Raw: raw}
	if _, err := a.Act(context.Background(), c); err == nil {
		t.Fatal("the action's error was lost")
	}
	raw[0] = 'X'
	if len(got) != 1 || got[0].Do != "sms.send" || got[0].Key != "run1/s/0" || string(got[0].Event) != `{"topic":"t"}` ||
		string(got[0].Result) != `{"ok":false}` || got[0].Err == nil {
		t.Errorf("saw %+v", got)
	}
}

// TestChanges: the stream says the number at once, again when it
// changes, and ends when quit closes.
func TestChanges(t *testing.T) {
	var n atomic.Uint64
	n.Store(7)
	quit := make(chan struct{})
	srv := httptest.NewServer(observe.Changes(n.Load, 5*time.Millisecond, quit))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("content type %q", ct)
	}
	lines := bufio.NewScanner(resp.Body)
	next := func() string {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("the stream ended: %v", lines.Err())
		}
		return lines.Text()
	}
	if got := next(); got != `{"changes":7}` {
		t.Errorf("first line %q", got)
	}
	n.Add(2)
	if got := next(); got != `{"changes":9}` {
		t.Errorf("after a change %q", got)
	}
	close(quit)
	for lines.Scan() {
		t.Errorf("a line after quit: %q", lines.Text())
	}
}
