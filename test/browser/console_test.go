package browser

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
	"github.com/hashicorp/go-hclog"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/daemon"
	"github.com/ruled-dev/ruled/internal/plugintest"
	"github.com/ruled-dev/ruled/internal/redistest"
	"github.com/ruled-dev/ruled/internal/syncbuf"
)

// Config is the daemon's configuration.
type Config = daemon.Config

// testDaemon is a daemon a test started, with its log kept.
type testDaemon struct {
	*daemon.Daemon
	logs *syncbuf.Buffer
}

var grants = map[string]daemon.PluginConfig{"publish": {Grant: []abi.Capability{abi.CapPublish}},
	"fire":    {Grant: []abi.Capability{abi.CapFire}},
	"scooter": {Grant: []abi.Capability{abi.CapPublish, abi.CapKV}}}

// startDaemon starts a daemon as cfg says, its plugins granted what the
// example's need, its compilation cache the tests' shared one; it stops
// with the test.
func startDaemon(t testing.TB, cfg Config) *testDaemon {
	t.Helper()
	if cfg.Plugins == nil {
		cfg.Plugins = grants
	}
	os.MkdirAll(filepath.Join(cfg.DataDir, "cache"), 0o755)
	os.MkdirAll(plugintest.CacheDir(), 0o755)
	if err := os.Symlink(plugintest.CacheDir(), filepath.Join(cfg.DataDir, "cache", "wazero")); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	td := &testDaemon{logs: &syncbuf.Buffer{}}
	var out io.Writer = td.logs
	if testing.Verbose() {
		out = io.MultiWriter(td.logs, os.Stderr)
	}
	d, err := daemon.New(cfg, hclog.New(&hclog.LoggerOptions{Output: out, Level: hclog.Debug}))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	td.Daemon = d
	t.Cleanup(func() { d.Stop() })
	return td
}

// pluginsDir is the first-party and example plugins in one directory.
func pluginsDir(t testing.TB) string { return plugintest.ExampleDir(t) }

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

// browser is a headless Chromium on one tab, for the console's tests:
// dialogs (a command's confirmation) are accepted, screenshots kept.
type browser struct {
	t    *testing.T
	ctx  context.Context
	name string // the screenshots' prefix
}

func newBrowser(t *testing.T, name string, timeout time.Duration) *browser {
	bin := chromium(t)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.WindowSize(1400, 900))...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, timeout)
	t.Cleanup(cancel3)
	// A command asks for confirmation: the operator says yes. The page
	// waits for the dialog, and so does the click; another goroutine
	// answers it (a listener must not call the browser).
	if err := chromedp.Listen(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}); err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, ctx: ctx, name: name}
}

// do runs actions, failing the test with what was being done.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// shot keeps a screenshot of the whole page as NAME.png in the
// artifacts (.build/artifacts, or $RULED_ARTIFACTS: CI keeps them).
func (b *browser) shot(name string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		png, err := chromedp.FullScreenshot(100)(ctx, tg)
		if err != nil {
			return err
		}
		artifact(b.t, "console-"+b.name+"-"+name, png)
		return nil
	})
}

// until waits for a JavaScript expression to be true: the page follows
// the daemon by itself (the change stream), so a test waits for what
// the page shows rather than reloading it.
func (b *browser) until(what, expr string) {
	b.t.Helper()
	var err error
	// Polls of two seconds until twenty have passed: a poll does not
	// survive a navigation (the page sending itself to the login page) —
	// it fails, or waits out its timeout on the page that went — so each
	// new one looks at the page there is now.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		_, err = chromedp.Run(b.ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond),
			chromedp.WithPollingTimeout(min(2*time.Second, time.Until(deadline)))))
		if err == nil || b.ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		text, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector("#main").innerText`))
		b.t.Fatalf("%s: %v (waited for %s); the page says:\n%s", what, err, expr, text)
	}
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).innerText || ""`, sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func (b *browser) eval(expr string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		b.t.Fatalf("%s: %v", expr, err)
	}
	return s
}

func (b *browser) wants(where, got string, wants ...string) {
	b.t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			b.t.Errorf("%s lacks %q:\n%s", where, w, got)
		}
	}
}

// consoleRules are the example's rules beside a file that does not load.
func consoleRules(t *testing.T) string {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(plugintest.Root(), "examples", "scooter", "rules", "scooter.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "scooter.yaml"), src, 0o644)
	os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte("- id: broken\n  on: scooter.telemetry\n  when: battery <\n  steps: [{do: log.log, with: {message: hi}}]\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "states.yaml"), []byte(`- id: depot-open
  on: depot.check
  states:
    depot: depot.status
    dock: {entity: "dock.{{vehicle}}", max-age: 1h}
  when: states.depot.open == true
  steps: [{do: log.log, with: {message: "the depot is open"}}]
`), 0o644)
	return dir
}

func postEvent(t *testing.T, base, js string) {
	t.Helper()
	resp, err := http.Post(base+"/v1/events", "application/json", strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("event %s: %s", js, resp.Status)
	}
}

// telemetry is a scooter's reading.
func telemetry(vehicle string, battery int) string {
	return fmt.Sprintf(`{"topic":"scooter.telemetry","vehicle":%q,"battery":%d,"charging":false,"speed":10,"locked":false}`, vehicle, battery)
}

// TestConsoleInBrowser: the console in a real headless Chromium against
// a real daemon on the example's rules and a broken rule file, on bbolt
// and on Redis, as an operator uses it, each page screenshotted:
//   - the rules page lists the rules and the file that did not load;
//   - a test event sent from the form starts a run, which the form links;
//   - a rule's page shows its definition, description, counters, runs
//     and "why not" (what its condition saw when it said no), and a pause
//     from it lands in its state history with who asked, without a
//     reload;
//   - a run's page shows its tree and a node's details in the pane — the
//     event, what the condition saw, the step's input, output and what it
//     published — and runs the waiting step now, runs the run again,
//     drops a waiting step and cancels a run, each live;
//   - waiting steps and plugins list;
//   - at 420 px wide no page is wider than the screen and every button is
//     on it.
func TestConsoleInBrowser(t *testing.T) {
	chromium(t)
	for _, mode := range []string{"bbolt", "redis"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			cfg := Config{RulesDir: consoleRules(t), PluginsDir: pluginsDir(t),
				DataDir: filepath.Join(dir, "data"), HTTPAddr: "127.0.0.1:0", Watch: false}
			if mode == "redis" {
				cfg.RedisURL = redistest.Start(t).URL()
			}
			td := startDaemon(t, cfg)
			base := "http://" + td.Addr()
			b := newBrowser(t, mode, 3*time.Minute)

			// The rules, and the file that did not load.
			b.do("rules page", chromedp.Navigate(base+"/#/rules"),
				chromedp.WaitVisible(chromedp.CSS(`#rules-table tr[data-rule="low-battery"]`)))
			b.until("the change stream", `document.querySelector("#live").classList.contains("on")`)
			b.eval(`window.kept = "yes"`) // gone if the page ever reloads
			b.do("screenshot", b.shot("rules"))
			b.wants("rules table", b.text("#rules-table"), "track-battery", "low-battery", "movement-while-locked", "speeding", "log-alerts", "runnable")
			b.wants("rules that did not load", b.text("#invalid-rules"), "broken.yaml:3:18", "broken", "expression")

			// A test event from the form starts a run.
			b.do("send page", chromedp.Navigate(base+"/#/send"),
				chromedp.SetValue(chromedp.CSS(`#send-event-json`), telemetry("s-17", 12)),
				chromedp.Click(chromedp.CSS(`#send-event button[type=submit]`)))
			b.until("the runs the event started", `!!document.querySelector("#send-event-result li[data-rule=low-battery] a.run-id")`)
			b.do("screenshot", b.shot("send"))
			b.wants("send result", b.text("#send-event-result"), "Accepted as console-", "low-battery")
			first := b.eval(`document.querySelector("#send-event-result li[data-rule=low-battery] a.run-id").title`)
			b.do("a refused event", chromedp.SetValue(chromedp.CSS(`#send-event-json`), `{"topic":"ruled.mine"}`),
				chromedp.Click(chromedp.CSS(`#send-event button[type=submit]`)))
			b.until("the refusal's reason", `((document.querySelector("#send-event-result") || {}).innerText || "").includes("Refused (400): ")`)
			b.wants("refusal", b.text("#send-event-result"), "reserved")

			// The rule's page: a reading its condition says no to shows
			// up under "why not", live.
			b.do("rule page", chromedp.Navigate(base+"/#/rule/low-battery"),
				chromedp.WaitVisible(chromedp.CSS(`#rule-counters`)))
			b.eval(`window.kept = "yes"`)
			postEvent(t, base, telemetry("s-40", 40))
			b.until("why not", `((document.querySelector("#why-not") || {}).innerText || "").includes("s-40")`)
			b.wants("why not", b.text("#why-not"), "its condition said no", `"battery": 40`, `"charging": false`)
			b.wants("definition", b.text("#rule-source"), "- id: low-battery", "when: battery < 20 && !charging", "after: 5m")
			b.wants("description", b.text("#rule-description"), "alert at once when the battery drops below 20%")
			b.wants("counters", b.text("#rule-counters"), "STARTED\n1", "SUPPRESSED", "REFUSED", "CANCELLED")
			b.wants("runs", b.text("#runs-table"), "s-17", "running")
			b.do("pause from the rule's page", chromedp.Click(chromedp.CSS(`button[data-cmd="pause"]`)))
			b.until("paused, live", `document.querySelector("#rule-state").innerText === "paused"`)
			b.until("the pause in the history", `((document.querySelector("#history") || {}).innerText || "").includes("tcp")`)
			b.wants("history", b.text("#history"), "pause", "runnable", "paused", "tcp")
			b.do("screenshot", b.shot("rule"))
			b.do("resume", chromedp.Click(chromedp.CSS(`button[data-cmd="resume"]`)))
			b.until("runnable again", `document.querySelector("#rule-state").innerText === "runnable"`)
			if b.eval(`window.kept || ""`) != "yes" {
				t.Errorf("the rule page reloaded: live updates must not")
			}

			// A rule's page lists the states it reads, and what each holds.
			postEvent(t, base, `{"topic":"depot.status","open":true,"bays":4}`)
			b.do("a rule that reads states", chromedp.Navigate(base+"/#/rule/depot-open"),
				chromedp.WaitVisible(chromedp.CSS(`#rule-states tr[data-state="dock"]`)))
			b.wants("the states it reads", b.text("#rule-states"), "states.depot", "depot.status", `"open": true`, `"bays": 4`,
				"states.dock", "dock.{{vehicle}}", "max-age 1h0m0s", "filled from each trigger")

			// A rule that is not there says so, and offers no form.
			b.do("no such rule", chromedp.Navigate(base+"/#/rule/nope"))
			b.until("its error", `((document.querySelector("#load-error") || {}).innerText || "").includes("no such rule")`)
			if b.eval(`String(document.querySelector("#rule-event").closest("section").hidden)`) != "true" {
				t.Errorf("a rule that is not loaded offers its test-event form")
			}

			// The run's page: its tree, a node's details, its commands.
			b.do("run page", chromedp.Navigate(base+"/#/run/"+first))
			b.until("the run's tree, waiting", `!!document.querySelector("#tree tr[data-kind=delay]") && !!document.querySelector("button[data-run-cmd=now]")`)
			b.eval(`window.kept = "yes"`)
			kinds := b.eval(`[...document.querySelectorAll("#tree tr[data-kind]")].map(r => r.dataset.kind).join(" ")`)
			if kinds != "trigger condition step delay" {
				t.Errorf("tree nodes %q; want trigger condition step delay", kinds)
			}
			b.wants("tree", b.text("#tree"), "low-battery", "s-17", "scooter.telemetry", "expr.expr", "alert", "publish.publish", "limit-speed")
			b.wants("the trigger's details", b.text("#pane"), "EVENT", `"battery": 12`)
			b.do("the condition", chromedp.Click(chromedp.CSS(`#tree tr[data-kind="condition"]`)))
			b.wants("the condition's details", b.text("#pane"), "SAW", `"battery": 12`, `"charging": false`)
			b.do("the step", chromedp.Click(chromedp.CSS(`#tree tr[data-kind="step"]`)))
			b.wants("the step's details", b.text("#pane"), "INPUT", `"topic": "alerts.battery.s-17"`, "OUTPUT", "DID", "published alerts.battery.s-17")
			b.do("screenshot", b.shot("run"))
			b.do("run now", chromedp.Click(chromedp.CSS(`button[data-run-cmd="now"]`)))
			b.until("the waiting step ran, live", `document.querySelectorAll("#tree tr[data-kind=step]").length === 2 && !!document.querySelector("button[data-run-cmd=rerun]")`)
			b.do("the delay", chromedp.Click(chromedp.CSS(`#tree tr[data-kind="delay"]`)))
			b.wants("the delay's details", b.text("#pane"), "run now by tcp", "BY")
			if b.eval(`window.kept || ""`) != "yes" {
				t.Errorf("the run page reloaded: live updates must not")
			}
			b.do("run again", chromedp.Click(chromedp.CSS(`button[data-run-cmd="rerun"]`)))
			b.until("the new run's page", fmt.Sprintf(`location.hash.startsWith("#/run/") && !location.hash.includes(%q) && !!document.querySelector("#tree tr[data-kind=delay]")`, first))
			b.wants("the rerun's trigger", b.text("#pane"), "rerun of "+first+" by tcp")
			b.until("the drop button", `!!document.querySelector("button[data-run-cmd=drop]")`)
			b.do("drop", chromedp.Click(chromedp.CSS(`button[data-run-cmd="drop"]`)))
			b.until("dropped, live", `document.querySelector(".run-summary .outcome").innerText === "dropped"`)

			postEvent(t, base, telemetry("s-18", 5))
			b.do("runs page", chromedp.Navigate(base+"/#/runs?rule=low-battery"))
			b.until("s-18's run", `[...document.querySelectorAll("#runs-table tr[data-run]")].some(r => r.innerText.includes("s-18"))`)
			b.do("screenshot", b.shot("runs"))
			b.do("s-18's run", chromedp.Click(chromedp.CSS(`#runs-table tr[data-run] a.run-id`)))
			b.until("its cancel button", `!!document.querySelector("button[data-run-cmd=cancel]")`)
			b.do("cancel", chromedp.Click(chromedp.CSS(`button[data-run-cmd="cancel"]`)))
			b.until("cancelled, live", `document.querySelector(".run-summary .outcome").innerText === "cancelled"`)

			// Waiting steps (s-17's rerun was dropped, s-18 cancelled: one
			// more run waits), plugins.
			postEvent(t, base, telemetry("s-19", 9))
			b.do("waiting steps", chromedp.Navigate(base+"/#/pending"))
			b.until("s-19's waiting step", `((document.querySelector("#pending-table") || {}).innerText || "").includes("limit-speed")`)
			b.do("screenshot", b.shot("pending"))
			b.do("drop from the list", chromedp.Click(chromedp.CSS(`#pending-table button[data-run-cmd="drop"]`)))
			b.until("the list empties, live", `((document.querySelector("#pending-table") || {}).innerText || "").includes("No step is waiting")`)
			b.do("plugins", chromedp.Navigate(base+"/#/plugins"),
				chromedp.WaitVisible(chromedp.CSS(`#plugins-table tr[data-plugin="publish"]`)), b.shot("plugins"))

			// A phone held upright.
			for _, view := range []string{"rules", "rule/low-battery", "run/" + first, "runs", "pending", "send"} {
				b.do("phone "+view, chromedp.EmulateViewport(420, 860), chromedp.Navigate(base+"/#/"+view))
				b.until(view+" drawn", `document.querySelector("#status").innerText.startsWith("live")`)
				if view == "rules" || view == "run/"+first {
					b.do("screenshot", b.shot("phone-"+strings.ReplaceAll(strings.Split(view, "/")[0], "/", "-")))
				}
				off := b.eval(`(() => {
				  const w = window.innerWidth, out = [];
				  if (document.documentElement.scrollWidth > w) out.push("the page is " + document.documentElement.scrollWidth + "px wide");
				  for (const e of document.querySelectorAll("button, nav a, textarea")) {
				    const r = e.getBoundingClientRect();
				    if (r.width && (r.left < 0 || r.right > w)) out.push((e.innerText || e.tagName) + " at " + Math.round(r.left) + "-" + Math.round(r.right));
				  }
				  return out.join("; ");
				})()`)
				if off != "" {
					t.Errorf("at 420 px, %s: %s", view, off)
				}
			}
			if st := td.Rules(); len(st) != 6 { // the example's five and depot-open
				t.Errorf("%d rules through the API; want 6", len(st))
			}
		})
	}
}

// TestConsoleTokens: behind named tokens, the console sends a browser
// without one to the login page, which refuses a wrong token in words;
// the right one opens the console, whose commands say which token sent
// them; signing out forgets it.
func TestConsoleTokens(t *testing.T) {
	chromium(t)
	ops := "ops-0123456789abcdef"
	td := startDaemon(t, Config{RulesDir: consoleRules(t), PluginsDir: pluginsDir(t), DataDir: filepath.Join(t.TempDir(), "data"),
		HTTPAddr: "127.0.0.1:0", Watch: false, Tokens: map[string]string{"ops": ops, "ci": "ci-0123456789abcdef0"}})
	base := "http://" + td.Addr()
	b := newBrowser(t, "tokens", 2*time.Minute)
	b.do("the console without a token", chromedp.Navigate(base+"/#/rules"))
	b.until("the login page", `location.pathname === "/login.html" && !!document.querySelector("#token")`)
	b.do("a wrong token", chromedp.SetValue(chromedp.CSS(`#token`), "wrong-0123456789abcdef"), chromedp.Click(chromedp.CSS(`#login button`)))
	b.until("refused in words", `document.querySelector("#said").innerText.includes("That token was refused")`)
	b.do("screenshot", b.shot("login-refused"))
	b.do("the right token", chromedp.SetValue(chromedp.CSS(`#token`), ops), chromedp.Click(chromedp.CSS(`#login button`)))
	b.until("the rules", `!!document.querySelector('#rules-table tr[data-rule="speeding"]')`)
	b.do("pause", chromedp.Navigate(base+"/#/rule/speeding"))
	b.until("the rule's page", `!!document.querySelector('button[data-cmd="pause"]')`)
	b.do("pause", chromedp.Click(chromedp.CSS(`button[data-cmd="pause"]`)))
	b.until("who paused it", `((document.querySelector("#history") || {}).innerText || "").includes("token ops")`)
	b.do("sign out", chromedp.Click(chromedp.CSS(`#signout`)))
	// A click that lands while the page redraws the rule (a change it
	// heard) can be lost: the poll clicks again while the console is
	// still there (it failed twice in clean-clone runs, never alone).
	b.until("signed out", `(location.pathname !== "/login.html" && document.querySelector("#signout") && document.querySelector("#signout").click(), `+
		`location.pathname === "/login.html" && document.querySelector("#said").innerText.includes("Signed out"))`)
	b.do("the console again", chromedp.Navigate(base+"/#/rules"))
	b.until("the login page again", `location.pathname === "/login.html"`)
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
