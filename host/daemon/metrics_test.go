package daemon

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/internal/redistest"
)

// scrape reads /metrics through the socket and parses it with
// Prometheus's own text parser.
func scrape(t *testing.T, c *http.Client) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := c.Get("http://ruled/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// value is the value of the metric in fams named name with the labels
// given as "k=v" pairs; -1 when there is none. Histograms give their count.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for _, kv := range labels {
			k, v, _ := strings.Cut(kv, "=")
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

func get(t *testing.T, c *http.Client, path string) (int, string) {
	t.Helper()
	resp, err := c.Get("http://ruled" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// /metrics parses with the Prometheus text parser and its counters move as
// events flow; /healthz and /readyz answer, and /readyz says when the
// store is gone.
func TestMetrics(t *testing.T) {
	for _, mode := range []string{"bbolt", "redis"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			writeRules(t, filepath.Join(dir, "rules"), `
- id: echo
  on: t.in
  mode: parallel
  when: n > 0
  steps:
    - name: say
      do: publish.publish
      with: {topic: t.out}
- id: bad
  on: t.bad
  when: {do: expr.expr, with: {expr: n > 0}}
  steps:
    - do: log.log
      with: {message: "never"}
- id: bad2
  on: t.bad
  when: n > 0
  steps:
    - do: log.log
      with: {message: "never"}
- id: later
  on: t.in
  mode: parallel
  steps:
    - after: 1h
      do: log.log
      with: {message: "later"}
`)
			cfg := Config{RulesDir: filepath.Join(dir, "rules"), PluginsDir: pluginsDir(t), DataDir: filepath.Join(dir, "data")}
			var srv *redistest.Server
			if mode == "redis" {
				srv = redistest.Start(t)
				cfg.RedisURL = srv.URL()
			}
			td := startDaemon(t, cfg)
			c := socketClient(filepath.Join(dir, "data"))
			before := scrape(t, c)
			if v := value(before, "ruled_runs_total", "rule=echo", "outcome=started"); v != 0 {
				t.Errorf("runs started before any event: %v", v)
			}
			if v := value(before, "ruled_rule_state", "rule=echo", "state=runnable"); v != 1 {
				t.Errorf("echo runnable: %v", v)
			}
			if v := value(before, "ruled_rule_state", "rule=echo", "state=paused"); v != 0 {
				t.Errorf("echo paused: %v", v)
			}
			resp, err := c.Post("http://ruled/v1/events", "application/x-ndjson",
				strings.NewReader(`{"topic":"t.in","n":1}`+"\n"+`{"topic":"t.in","n":0}`+"\n"+`{"topic":"t.in","n":2}`+"\n"+`not json`+"\n"+`{"topic":"t.bad","n":"x"}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			eventually(t, "two runs completed and bad's condition failed", func() bool {
				m := scrape(t, c)
				return value(m, "ruled_runs_total", "rule=echo", "outcome=completed") == 2 && value(m, "ruled_rule_errors_total", "rule=bad") == 1 &&
					value(m, "ruled_rule_errors_total", "rule=bad2") == 1
			})
			after := scrape(t, c)
			for _, tc := range []struct {
				name   string
				labels []string
				want   float64
			}{
				{"ruled_events_accepted_total", nil, 4},
				{"ruled_plugin_call_failures_total", []string{"plugin=expr", "cause=plugin error"}, 1},
				{"ruled_rule_errors_total", []string{"rule=bad"}, 1},
				{"ruled_rule_errors_total", []string{"rule=bad2"}, 1}, // a string when:'s failure is its rule's
				{"ruled_events_rejected_total", []string{"reason=not json"}, 1},
				{"ruled_runs_total", []string{"rule=echo", "outcome=started"}, 2},
				{"ruled_runs_total", []string{"rule=echo", "outcome=failed"}, 0},
				{"ruled_runs_active", []string{"rule=echo"}, 0},
				{"ruled_runs_parked", nil, 3},
				{"ruled_runs_active", []string{"rule=later"}, 3},
				// bad's one: a string when: (echo's, bad2's) is the host's, not a plugin call.
				{"ruled_plugin_call_seconds", []string{"plugin=expr", "function=expr", "kind=condition"}, 1},
				{"ruled_plugin_call_seconds", []string{"plugin=publish", "function=publish", "kind=action"}, 2},
				{"ruled_step_seconds", []string{"rule=echo"}, 2},
				{"ruled_plugin_loaded", []string{"plugin=publish"}, 1},
				{"ruled_reloads_total", []string{"what=plugin", "result=failed"}, 0},
			} {
				if got := value(after, tc.name, tc.labels...); got != tc.want {
					t.Errorf("%s%v = %v; want %v", tc.name, tc.labels, got, tc.want)
				}
			}
			if _, err := td.Command("echo", status.Command{Command: "pause"}); err != nil {
				t.Fatal(err)
			}
			if v := value(scrape(t, c), "ruled_rule_state", "rule=echo", "state=paused"); v != 1 {
				t.Errorf("echo paused after pause: %v", v)
			}
			if code, body := get(t, c, "/healthz"); code != 200 || body != "ok\n" {
				t.Errorf("/healthz %d %q", code, body)
			}
			if code, body := get(t, c, "/readyz"); code != 200 || body != "ready\n" {
				t.Errorf("/readyz %d %q", code, body)
			}
			if srv != nil {
				// Four events in, two published by the rule: the bus
				// delivered six.
				if v := value(after, "ruled_bus_events_received_total"); v != 6 {
					t.Errorf("bus events received %v; want 6", v)
				}
				srv.Stop()
				if code, body := get(t, c, "/readyz"); code != 503 || !strings.HasPrefix(body, "not ready: store:") {
					t.Errorf("/readyz with Redis stopped: %d %q", code, body)
				}
				if code, _ := get(t, c, "/healthz"); code != 200 {
					t.Errorf("/healthz with Redis stopped: %d", code)
				}
			}
		})
	}
}
