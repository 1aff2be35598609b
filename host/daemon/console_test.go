package daemon

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/ruled-dev/ruled/internal/plugintest"
	"github.com/ruled-dev/ruled/internal/redistest"
)

// chromium finds Debian's headless browser. make test installs it; a
// missing one skips, except under CI=true, where it fails the run.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium: the console's browser tests need it (apt-get install chromium)")
	}
	t.Skip("no chromium (apt-get install chromium); the console's browser tests skipped")
	return ""
}

// artifact is where a screenshot goes: $RULED_ARTIFACTS, else
// .build/artifacts.
func artifact(t *testing.T, name string, png []byte) {
	dir := os.Getenv("RULED_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(plugintest.Root(), ".build", "artifacts")
	}
	os.MkdirAll(dir, 0o755)
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Error(err)
	}
	t.Logf("screenshot %s", p)
}

// The console, in a real headless Chromium against a real daemon on the
// example's rules, on bbolt and on Redis: the rules table lists them; an event makes a
// run appear; its tree shows the expected nodes; pausing a rule from the
// page (confirming the dialog) pauses it, as the API says; a screenshot of
// each view is kept.
func TestConsoleInBrowser(t *testing.T) {
	bin := chromium(t)
	for _, mode := range []string{"bbolt", "redis"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			cfg := Config{RulesDir: filepath.Join(plugintest.Root(), "examples", "scooter", "rules"), PluginsDir: pluginsDir(t),
				DataDir: filepath.Join(dir, "data"), HTTPAddr: "127.0.0.1:0", Watch: false}
			if mode == "redis" {
				cfg.RedisURL = redistest.Start(t).URL()
			}
			td := startDaemon(t, cfg)
			base := "http://" + td.Addr()

			actx, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
				chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
				chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
				chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
				chromedp.WindowSize(1400, 900))...)
			defer cancel()
			ctx, cancel := chromedp.NewContext(actx)
			defer cancel()
			ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			// Rule commands ask for confirmation: the operator says yes. The
			// page waits for the dialog, and so does the click; another
			// goroutine answers it (a listener must not call the browser).
			if err := chromedp.Listen(ctx, func(ev any) {
				if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
					go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
				}
			}); err != nil {
				t.Fatal(err)
			}
			shot := func(name string) chromedp.Action[chromedp.Void] {
				return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
					png, err := chromedp.FullScreenshot(100)(ctx, tg)
					if err != nil {
						return err
					}
					artifact(t, "console-"+mode+"-"+name, png)
					return nil
				})
			}
			text := func(sel string) string {
				t.Helper()
				s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
				if err != nil {
					t.Fatalf("text of %s: %v", sel, err)
				}
				return s
			}

			if err := chromedp.Do(ctx,
				chromedp.Navigate(base+"/#/rules"),
				chromedp.WaitVisible(chromedp.CSS(`#rules-table tr[data-rule="low-battery"]`)),
				shot("rules"),
			); err != nil {
				t.Fatalf("rules view: %v", err)
			}
			rulesText := text("#rules-table")
			for _, want := range []string{"track-battery", "low-battery", "movement-while-locked", "speeding", "log-alerts", "runnable"} {
				if !strings.Contains(rulesText, want) {
					t.Errorf("rules table lacks %q:\n%s", want, rulesText)
				}
			}

			resp, err := http.Post(base+"/v1/events", "application/x-ndjson", strings.NewReader(`{"topic":"scooter.telemetry","vehicle":"s-17","battery":12,"charging":false,"speed":10,"locked":false}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if err := chromedp.Do(ctx,
				chromedp.Navigate(base+"/#/runs?rule=low-battery"),
				chromedp.WaitVisible(chromedp.CSS(`#runs-table tr[data-run] a`)), // the page polls: the run appears
				shot("runs"),
				chromedp.Click(chromedp.CSS(`#runs-table tr[data-run] a`)),
				chromedp.WaitVisible(chromedp.CSS(`#tree tr[data-kind="delay"]`)),
				shot("tree"),
			); err != nil {
				t.Fatalf("runs and tree views: %v", err)
			}
			kinds, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#tree tr[data-kind]")].map(r => r.dataset.kind)`))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(kinds, " "); got != "trigger condition step delay" {
				t.Errorf("tree nodes %q; want trigger condition step delay", got)
			}
			treeText := text("#tree")
			for _, want := range []string{"low-battery", "scooter.telemetry", "expr.expr", "alert", "publish.publish", "limit-speed", "after 5m0s (durable)"} {
				if !strings.Contains(treeText, want) {
					t.Errorf("tree lacks %q:\n%s", want, treeText)
				}
			}
			// Each node's details fold out: what the condition saw, what
			// the step published.
			details, err := chromedp.Run(ctx, chromedp.Evaluate[string](
				`[...document.querySelectorAll("#tree details.node-detail")].map(d => { d.open = true; return d.textContent }).join("\n")`))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{`"battery": 12`, "saw", "published alerts.battery.s-17"} {
				if !strings.Contains(details, want) {
					t.Errorf("node details lack %q:\n%s", want, details)
				}
			}
			if err := chromedp.Do(ctx,
				chromedp.Navigate(base+"/#/pending"),
				chromedp.WaitVisible(chromedp.CSS(`#pending-table tbody tr`)),
				shot("pending"),
			); err != nil {
				t.Fatalf("pending view: %v", err)
			}
			if p := text("#pending-table"); !strings.Contains(p, "limit-speed") {
				t.Errorf("waiting steps lack low-battery's limit-speed:\n%s", p)
			}
			if err := chromedp.Do(ctx,
				chromedp.Navigate(base+"/#/plugins"),
				chromedp.WaitVisible(chromedp.CSS(`#plugins-table tr[data-plugin="publish"]`)),
				shot("plugins"),
			); err != nil {
				t.Fatalf("plugins view: %v", err)
			}

			if err := chromedp.Do(ctx,
				chromedp.Navigate(base+"/#/rules"),
				chromedp.WaitVisible(chromedp.CSS(`button[data-cmd="pause"][data-rule="speeding"]`)),
				chromedp.Click(chromedp.CSS(`button[data-cmd="pause"][data-rule="speeding"]`)),
				chromedp.WaitVisible(chromedp.CSS(`#rules-table tr[data-rule="speeding"] td.state-paused`)),
				shot("paused"),
			); err != nil {
				t.Fatalf("pausing from the page: %v", err)
			}
			for _, r := range td.Rules() {
				want := "runnable"
				if r.ID == "speeding" {
					want = "paused"
				}
				if r.State != want {
					t.Errorf("rule %s is %s through the API; want %s", r.ID, r.State, want)
				}
			}
		})
	}
}

// TestCrossOriginCannotCommand: a page of another origin, opened in a real
// headless Chromium by someone on the daemon's machine, tries what once put
// a rule to sleep until 2036 through the token-less loopback API — a
// no-cors text/plain fetch, a JSON fetch, a form posted as text/plain —
// and the rule is still runnable afterwards. The console itself, from its
// own origin, still commands (TestConsoleInBrowser).
func TestCrossOriginCannotCommand(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	td := startDaemon(t, Config{RulesDir: filepath.Join(plugintest.Root(), "examples", "scooter", "rules"), PluginsDir: pluginsDir(t),
		DataDir: filepath.Join(dir, "data"), HTTPAddr: "127.0.0.1:0", Watch: false})
	base := "http://" + td.Addr()
	reports := make(chan string, 1)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/report" { // the page says what it did, to its own origin
			b, _ := io.ReadAll(r.Body)
			select {
			case reports <- string(b):
			default:
			}
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><title>evil</title>
<form id="f" method="POST" action="%[1]s/v1/rules/speeding/kill" enctype="text/plain"><input name='{"x":"' value='"}'></form>
<script>
(async () => {
  const out = [];
  try { await fetch("%[1]s/v1/rules/low-battery/pause", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: "{}"}); out.push("pause sent"); }
  catch (e) { out.push("pause failed: " + e); }
  try { const r = await fetch("%[1]s/v1/rules/low-battery/sleep", {method: "POST", headers: {"Content-Type": "application/json"}, body: '{"for":"87600h"}'}); out.push("sleep " + r.status); }
  catch (e) { out.push("sleep blocked"); }
  await fetch("/report", {method: "POST", body: out.join("; ")});
  document.getElementById("f").submit();
})();
</script>`, base)
	}))
	defer evil.Close()

	actx, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true))...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(evil.URL)); err != nil {
		t.Fatalf("the other origin's page: %v", err)
	}
	var said string
	select {
	case said = <-reports:
	case <-ctx.Done():
		t.Fatal("the other origin's page never reported")
	}
	time.Sleep(500 * time.Millisecond) // the form's post lands
	states := map[string]string{}
	for _, r := range td.Rules() {
		states[r.ID] = r.State
	}
	for _, id := range []string{"low-battery", "speeding"} {
		if states[id] != "runnable" {
			t.Errorf("rule %s is %s after a page of another origin posted to the API (%s); want runnable", id, states[id], said)
		}
	}
	if !strings.Contains(said, "pause sent") {
		t.Errorf("the page did not send its requests: %s", said)
	}
	t.Logf("the page said: %s", said)
}
