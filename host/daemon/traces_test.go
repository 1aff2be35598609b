package daemon

import (
	"context"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/ruled-dev/ruled/host/traces"
	"github.com/ruled-dev/ruled/internal/mqtttest"
	"github.com/ruled-dev/ruled/internal/otlptest"
)

// TestTraces: runs go to a real OTLP/HTTP receiver as traces. A door's
// event posted with a traceparent starts a run under the sender's span;
// its http step fails once and is retried, each attempt's request
// carrying its own span's traceparent; it waits for the door to close,
// then waits out a durable delay across a restart, and the second process
// finishes the run in the same trace, under the same run span, its
// publish reaching the broker with the step's traceparent. A bell rung
// over MQTT with a traceparent user property is a run under that trace.
func TestTraces(t *testing.T) {
	rc := otlptest.New(t)
	b := mqtttest.Start(t)
	alerts := b.Listen(t, "alerts/#")
	var mu sync.Mutex
	var lamp []string // the traceparent of each request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		lamp = append(lamp, r.Header.Get("traceparent"))
		first := len(lamp) == 1
		mu.Unlock()
		if first {
			http.Error(w, "warming up", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	plugins, ps := withHTTP(t, srv.URL)
	writeRules(t, filepath.Join(dir, "rules"), `
- id: door
  on: door.*.opened
  steps:
    - name: notify
      do: http.request
      with: {url: "`+srv.URL+`/lamp/{{door}}"}
      retry: {attempts: 3, backoff: 100ms, jitter: 0}
    - name: confirm
      wait-for: {topic: door.*.closed, match: door, timeout: 1h}
    - name: later
      after: 3s
      durable: true
      do: publish.publish
      with: {topic: "alerts.{{door}}"}
- id: bell
  on: bell.*
  steps:
    - name: ring
      do: publish.publish
      with: {topic: alerts.bell}
`)
	cfg := Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: plugins, DataDir: filepath.Join(dir, "data"), Plugins: ps,
		MQTT: &MQTT{Brokers: []string{b.URL()}, ClientID: "ruled-traces", Subscribe: []string{"bell/#"},
			Publish: []MQTTRoute{{Topic: "alerts.>", QoS: 1}}},
		Traces: traces.Config{Endpoint: rc.URL, Ratio: 1, Interval: 50 * time.Millisecond}}
	td := startDaemon(t, cfg)
	eventually(t, "the MQTT connection", func() bool { st := td.Status(); return st.MQTT != nil && st.MQTT.Up })

	const door = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const doorTrace, doorParent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	post(t, cfg.DataDir, `{"topic":"door.hall.opened","door":"hall"}`, door)
	eventually(t, "the lamp's second request", func() bool { mu.Lock(); defer mu.Unlock(); return len(lamp) == 2 })
	spanNamed(t, rc, "wait confirm", false) // none yet: the door is open
	post(t, cfg.DataDir, `{"topic":"door.hall.closed","door":"hall"}`, "")
	spanNamed(t, rc, "wait confirm", true)
	td.Stop() // during the durable delay

	// A bell rung over MQTT with a trace of its own.
	const bell = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	td2 := startDaemon(t, cfg)
	eventually(t, "the MQTT connection again", func() bool { st := td2.Status(); return st.MQTT != nil && st.MQTT.Up })
	time.Sleep(200 * time.Millisecond) // the subscription follows the connection
	dev := b.Device(t)
	if _, err := dev.Publish(context.Background(), &paho.Publish{Topic: "bell/front", QoS: 1, Payload: []byte(`{"who":"postman"}`),
		Properties: &paho.PublishProperties{User: paho.UserProperties{{Key: "traceparent", Value: bell}}}}); err != nil {
		t.Fatal(err)
	}
	got := alerts.Wait(2)
	byTopic := map[string]string{}
	for _, m := range got {
		byTopic[m.Topic] = m.User["traceparent"]
	}
	spans := rc.Wait(t, 1)
	eventually(t, "both runs' spans", func() bool {
		spans = rc.Spans()
		n := 0
		for _, s := range spans {
			if s.Name == "run door" || s.Name == "run bell" {
				n++
			}
		}
		return n == 2
	})

	// The door's run: one trace, the sender's; one run span, under the
	// sender's span; every node under the run's span.
	var run *tracepb.Span
	var nodes []*tracepb.Span
	for _, s := range spans {
		if hex.EncodeToString(s.TraceId) != doorTrace {
			continue
		}
		if s.Name == "run door" {
			if run != nil {
				t.Errorf("two run spans of the door's run")
			}
			run = s
			continue
		}
		nodes = append(nodes, s)
	}
	if run == nil {
		t.Fatalf("no run span in the door's trace among %d spans", len(spans))
	}
	if p := hex.EncodeToString(run.ParentSpanId); p != doorParent {
		t.Errorf("the door's run span's parent %s; want the sender's %s", p, doorParent)
	}
	id := otlptest.Attr(run, "ruled.run")
	rs := traces.RunSpan(id)
	names := map[string]int{}
	stepSpan := map[string][]string{}
	for _, n := range nodes {
		names[n.Name]++
		if hex.EncodeToString(n.ParentSpanId) != hex.EncodeToString(rs[:]) {
			t.Errorf("node %s's parent %x; want the run's span %s", n.Name, n.ParentSpanId, rs)
		}
		if otlptest.Attr(n, "ruled.run") != id {
			t.Errorf("node %s of run %s in the door's trace", n.Name, otlptest.Attr(n, "ruled.run"))
		}
		if strings.HasPrefix(n.Name, "step ") {
			stepSpan[n.Name] = append(stepSpan[n.Name], hex.EncodeToString(n.SpanId))
		}
	}
	for name, want := range map[string]int{"trigger door.hall.opened": 1, "step notify": 2, "wait confirm": 1, "step later": 1,
		"replay later": 1} {
		if names[name] != want {
			t.Errorf("%d spans %q; want %d (all: %v)", names[name], name, want, names)
		}
	}
	t.Logf("the door's run %s: %d node spans %v; the lamp saw %v; the alerts %v", id, len(nodes), names, lamp, byTopic)
	var failed int
	for _, n := range nodes {
		if n.Name == "step notify" && n.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("%d failed notify spans; want the first attempt's", failed)
	}
	if names["delay notify"] < 1 {
		t.Errorf("no span for the retry's wait: %v", names)
	}

	// What the steps sent on: each lamp request its attempt's span, the
	// alert the replayed step's.
	mu.Lock()
	for i, tp := range lamp {
		if !strings.HasPrefix(tp, "00-"+doorTrace+"-") || !strings.HasSuffix(tp, "-01") || len(tp) != 55 {
			t.Errorf("lamp request %d's traceparent %q: not in the door's trace", i+1, tp)
		} else if sp := tp[36:52]; len(stepSpan["step notify"]) == 2 && sp != stepSpan["step notify"][i] {
			t.Errorf("lamp request %d's span %s; want its attempt's span %s", i+1, sp, stepSpan["step notify"][i])
		}
	}
	mu.Unlock()
	if tp := byTopic["alerts/hall"]; len(stepSpan["step later"]) != 1 || tp != "00-"+doorTrace+"-"+stepSpan["step later"][0]+"-01" {
		t.Errorf("the alert's traceparent %q; want the later step's span %v in the door's trace", tp, stepSpan["step later"])
	}

	// The bell's run: under the MQTT message's trace; its alert carries
	// its step's span on.
	var bellRun *tracepb.Span
	for _, s := range spans {
		if s.Name == "run bell" {
			bellRun = s
		}
	}
	if bellRun == nil || hex.EncodeToString(bellRun.TraceId) != bell[3:35] || hex.EncodeToString(bellRun.ParentSpanId) != bell[36:52] {
		t.Errorf("the bell's run span %v: want it under %s", bellRun, bell)
	}
	if tp := byTopic["alerts/bell"]; !strings.HasPrefix(tp, "00-"+bell[3:35]+"-") {
		t.Errorf("the bell's alert's traceparent %q: not in the bell's trace", tp)
	}
	if st := td2.Status().Traces; st == nil || st.Exported == 0 || st.Dropped != 0 {
		t.Errorf("traces status %+v", st)
	}
}

// post sends one event to the daemon's socket API, with a traceparent
// header when tp is not "".
func post(t *testing.T, data, event, tp string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://ruled/v1/events", strings.NewReader(event))
	req.Header.Set("Content-Type", "application/json")
	if tp != "" {
		req.Header.Set("traceparent", tp)
	}
	resp, err := socketClient(data).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /v1/events: %s", resp.Status)
	}
}

// spanNamed waits for a span named name (want), or checks there is none.
func spanNamed(t *testing.T, rc *otlptest.Receiver, name string, want bool) {
	t.Helper()
	has := func() bool {
		for _, s := range rc.Spans() {
			if s.Name == name {
				return true
			}
		}
		return false
	}
	if want {
		eventually(t, "a span "+name, has)
	} else if has() {
		t.Fatalf("a span %s already", name)
	}
}

// TestTracesCollectorHangs: a collector that takes requests and never
// answers holds no run up — every run completes — costs the bounded
// queue, counted, and a stop waits for it at most TracesCloseWithin.
func TestTracesCollectorHangs(t *testing.T) {
	rc := otlptest.New(t)
	hang := make(chan struct{})
	defer close(hang)
	rc.Answer(func(http.ResponseWriter) bool { <-hang; return true })
	dir := t.TempDir()
	writeRules(t, filepath.Join(dir, "rules"), `
- id: ping
  on: ping
  mode: parallel
  max: 1000
  steps: [{do: publish.publish, with: {topic: pong}}]
`)
	td := startDaemon(t, Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: pluginsDir(t), DataDir: filepath.Join(dir, "data"),
		Traces: traces.Config{Endpoint: rc.URL, Ratio: 1, MaxQueue: 64, MaxBatch: 8, Interval: 20 * time.Millisecond, Timeout: time.Hour}})
	for range 500 {
		td.send(t, `{"topic":"ping"}`)
	}
	eventually(t, "every run done", func() bool { return td.eng.Runner().RuleStats("ping").Completed == 500 })
	st := td.Status().Traces
	if st == nil || st.Dropped == 0 || st.Queued > 64+8 || st.Exported != 0 {
		t.Errorf("traces status %+v with the collector hanging: want spans dropped, the queue bounded", st)
	}
	began := time.Now()
	td.Stop()
	if d := time.Since(began); d > TracesCloseWithin+5*time.Second {
		t.Errorf("the stop took %v with the collector hanging; want at most %v and the rest", d, TracesCloseWithin)
	}
	t.Logf("status %+v; the stop took %v", st, time.Since(began))
}

// TestTraceContextPassedOn: with no collector named, a step passes its
// trigger's traceparent on unchanged — the sender's trace goes on past a
// hop that does not trace — and a trigger without one sends none.
func TestTraceContextPassedOn(t *testing.T) {
	got := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("traceparent")
	}))
	defer srv.Close()
	dir := t.TempDir()
	plugins, ps := withHTTP(t, srv.URL)
	writeRules(t, filepath.Join(dir, "rules"), `
- id: door
  on: door.*.opened
  mode: parallel
  steps:
    - {name: notify, do: http.request, with: {url: "`+srv.URL+`/lamp"}}
`)
	cfg := Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: plugins, DataDir: filepath.Join(dir, "data"), Plugins: ps}
	startDaemon(t, cfg)
	const sender = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	post(t, cfg.DataDir, `{"topic":"door.hall.opened"}`, sender)
	if tp := <-got; tp != sender {
		t.Errorf("the request carried %q; want the sender's %q unchanged", tp, sender)
	}
	post(t, cfg.DataDir, `{"topic":"door.hall.opened"}`, "")
	if tp := <-got; tp != "" {
		t.Errorf("a trigger without trace context sent %q", tp)
	}
}
