package browser

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ruled-dev/ruled/host/daemon"
	"github.com/ruled-dev/ruled/host/trust"
)

// TestConsoleScopes: a token that may only read sees the console without
// a command button, a run's buttons or the event form — each replaced by
// a word naming the scope it lacks — and a request it makes anyway gets
// 403 naming the scope; a token with control and events sees them. With
// signatures required, the Plugins page lists the file refused and why,
// and which key signed each serving module.
func TestConsoleScopes(t *testing.T) {
	chromium(t)
	ops, dash := "ops-0123456789abcdef", "dash-0123456789abcdef"
	key, err := trust.Generate("ops", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	plugins := pluginsDir(t)
	ents, _ := os.ReadDir(plugins)
	for _, e := range ents {
		if e.Name() == "fire.wasm" {
			continue // left unsigned: refused
		}
		p := filepath.Join(plugins, e.Name())
		b, _ := os.ReadFile(p)
		os.WriteFile(p+trust.SigSuffix, key.Sign(e.Name(), b).Marshal(), 0o644)
	}
	td := startDaemon(t, Config{RulesDir: consoleRules(t), PluginsDir: plugins, DataDir: filepath.Join(t.TempDir(), "data"),
		HTTPAddr: "127.0.0.1:0", Watch: false, Tokens: map[string]string{"ops": ops, "dash": dash},
		TokenScopes: map[string][]string{"ops": {"read", "events", "control"}, "dash": {"read"}},
		Signatures:  daemon.Signatures{Require: []string{"plugins"}, Trusted: []string{key.Public().String()}}})
	base := "http://" + td.Addr()
	b := newBrowser(t, "scopes", 2*time.Minute)
	login := func(tok string) {
		b.do("the login page", chromedp.Navigate(base+"/login.html"))
		b.until("the login form", `!!document.querySelector("#token")`)
		b.do("the token", chromedp.SetValue(chromedp.CSS(`#token`), tok), chromedp.Click(chromedp.CSS(`#login button`)))
		b.until("the rules", `!!document.querySelector('#rules-table tr[data-rule="speeding"]')`)
	}
	login(dash)
	b.until("who the page is", `(document.querySelector("#who") || {}).innerText === "token dash: read"`)
	if n := b.eval(`String(document.querySelectorAll("button[data-cmd]").length)`); n != "0" {
		t.Errorf("a read-only token sees %s command buttons on the rules page", n)
	}
	if b.eval(`String(document.querySelector('nav a[data-view="send"]').hidden)`) != "true" {
		t.Error("a read-only token is offered Send event")
	}
	b.do("a rule", chromedp.Navigate(base+"/#/rule/speeding"))
	b.until("the rule's page, its event form refused in words",
		`!!document.querySelector("#rule-state") && (document.querySelector('.no-scope[data-scope="events"]') || {}).innerText === "This token may not send events: it needs the events scope."`)
	if n := b.eval(`String(document.querySelectorAll("button[data-cmd], form.send").length)`); n != "0" {
		t.Errorf("a read-only token sees %s buttons or forms on a rule's page", n)
	}
	b.do("screenshot", b.shot("scopes-read-only"))
	said, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(async () => { const r = await fetch("/v1/rules/speeding/pause", {method: "POST", headers: {"Content-Type": "application/json", "Authorization": "Bearer `+dash+`"}, body: "{}"}); return r.status + " " + (await r.json()).error; })()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	b.wants("a command sent anyway", said, "403", `token "dash" may not do this: it needs the control scope (it has read)`)
	if r := td.Rules(); r[0].State != "runnable" {
		t.Errorf("a rule's state after a refused command: %s", r[0].State)
	}
	b.do("the plugins", chromedp.Navigate(base+"/#/plugins"))
	b.until("the refused module", `!!document.querySelector('#refused-table tr[data-file$="fire.wasm"]')`)
	b.wants("the signatures", b.text("#signatures"), "Required for plugins", "trusted keys ops", "plugins: unsigned 1")
	b.wants("the refused module", b.text(`#refused-table`), "unsigned", "plugins")
	b.wants("a signed module", b.text(`#plugins-table tr[data-plugin="publish"] .signer`), "ops")
	b.do("screenshot", b.shot("plugins-signatures"))

	b.do("sign out", chromedp.Navigate(base+"/login.html?why=out"))
	login(ops)
	b.do("a rule", chromedp.Navigate(base+"/#/rule/speeding"))
	b.until("its commands and its event form", `!!document.querySelector('button[data-cmd="pause"]') && !!document.querySelector("form.send")`)
	if b.eval(`String(document.querySelector('nav a[data-view="send"]').hidden)`) != "false" {
		t.Error("a token with events is not offered Send event")
	}
}
