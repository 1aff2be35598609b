package browser

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsoleCharts: the console draws what the daemon counted, step by
// step (GET /v1/history), as SVG: a sparkline of each rule's last hour on
// the rules page and the queue's depth, a rule's last hour and last day on
// its page with each line's total, and each plugin's call latency (p50,
// p99) on the plugins page. The steps are shortened to a quarter second
// so that the points come while the test watches; each page is
// screenshotted.
func TestConsoleCharts(t *testing.T) {
	chromium(t)
	td := startDaemon(t, Config{RulesDir: consoleRules(t), PluginsDir: pluginsDir(t), DataDir: filepath.Join(t.TempDir(), "data"),
		HTTPAddr: "127.0.0.1:0", Watch: false, HistoryStep: 250 * time.Millisecond})
	base := "http://" + td.Addr()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // traffic for the charts: low batteries (runs), readings the condition turns down
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(60 * time.Millisecond):
			}
			// Not postEvent: its t.Fatal belongs to the test's goroutine.
			resp, err := http.Post(base+"/v1/events", "application/json", strings.NewReader(telemetry("s-"+string(rune('a'+i%5)), 5+i%40)))
			if err != nil {
				t.Errorf("traffic: %v", err)
				return
			}
			resp.Body.Close()
		}
	}()
	defer func() { close(stop); <-done }()
	b := newBrowser(t, "charts", 2*time.Minute)

	b.do("rules page", chromedp.Navigate(base+"/#/rules"))
	b.until("a sparkline of low-battery's runs", `!!document.querySelector('#rules-table tr[data-rule="low-battery"] .spark svg.chart polyline.started')`)
	b.until("the queue's chart", `!!document.querySelector('#queue-chart svg.chart')`)
	if pts := b.eval(`document.querySelector('#rules-table tr[data-rule="low-battery"] .spark polyline.started').getAttribute("points")`); strings.Contains(pts, "NaN") || len(strings.Fields(pts)) < 2 {
		t.Errorf("the sparkline's points %q", pts)
	}
	b.do("screenshot", b.shot("rules"))

	b.do("a rule's page", chromedp.Navigate(base+"/#/rule/low-battery"))
	b.until("the rule's hour", `!!document.querySelector('#rule-charts figure[data-chart="hour"] polyline.started')`)
	b.until("the rule's day", `!!document.querySelector('#rule-charts figure[data-chart="day"] svg.chart')`)
	b.until("a legend counting runs", `/started [1-9]/.test(document.querySelector('#rule-charts figure[data-chart="hour"] .legend').innerText)`)
	b.wants("the hour's caption and scale", b.text(`#rule-charts figure[data-chart="hour"]`), "Last hour", "now", "started", "failed", "turned away", "errors")
	b.do("screenshot", b.shot("rule"))

	b.do("the plugins", chromedp.Navigate(base+"/#/plugins"))
	b.until("a plugin's latency", `!!document.querySelector('#plugins-table [data-latency="scooter"] polyline.p99, #plugins-table [data-latency="scooter"] circle.p99')`)
	b.wants("the latency's legend", b.text(`#plugins-table [data-latency="scooter"]`), "p50 ms", "p99 ms")
	b.do("screenshot", b.shot("plugins"))
}
