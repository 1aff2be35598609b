package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/host/task"
)

// engine is a hand-written api.Engine: it records the commands it is
// given and answers what the test set.
type engine struct {
	now      time.Time
	cmdErr   error
	got      []string // rule/command
	until    *time.Time
	runs     []runlog.Run
	runsErr  error
	filter   runlog.Filter
	notReady error
	pending  []status.PendingRecord // nil: the store is away
}

func (e *engine) Status() status.Status          { return status.Status{Store: "fake"} }
func (e *engine) Plugins() []status.PluginStatus { return []status.PluginStatus{{Name: "p"}} }
func (e *engine) Rules() []status.RuleStatus     { return []status.RuleStatus{{ID: "r"}} }
func (e *engine) Pending() ([]status.PendingRecord, error) {
	if e.pending == nil {
		return nil, errors.New("store away")
	}
	return e.pending, nil
}
func (e *engine) Now() time.Time              { return e.now }
func (e *engine) Ready(context.Context) error { return e.notReady }
func (e *engine) Rule(id string) (status.RuleDetail, error) {
	if id != "r" {
		return status.RuleDetail{}, status.ErrUnknownRule
	}
	return status.RuleDetail{RuleStatus: status.RuleStatus{ID: "r", State: "runnable"}, At: "r.yaml:3", Source: "- id: r\n"}, nil
}
func (e *engine) WhyNot(rule string) ([]seq.WhyNot, error) {
	if rule != "r" {
		return nil, status.ErrUnknownRule
	}
	return []seq.WhyNot{{Reason: "its condition said no", Count: 3, Last: []seq.NotStarted{{Topic: "t", Values: []byte(`{"battery":40}`)}}}}, nil
}
func (e *engine) ControlRun(id, command, by string) (status.RunControl, error) {
	switch {
	case command != "cancel":
		return status.RunControl{}, status.ErrBadCommand
	case id != "r1":
		return status.RunControl{}, seq.ErrNoRun
	}
	return status.RunControl{Run: id, By: by}, nil
}
func (e *engine) RunTree(id string) ([]runlog.Row, error) {
	return nil, runlog.ErrNotFound
}
func (e *engine) Runs(f runlog.Filter) ([]runlog.Run, error) {
	e.filter = f
	return e.runs, e.runsErr
}
func (e *engine) Command(rule string, c status.Command) (status.RuleStatus, error) {
	e.got = append(e.got, rule+"/"+c.Command)
	e.until = c.Until
	return status.RuleStatus{ID: rule, State: "paused"}, e.cmdErr
}

// TestHandler: each endpoint's answer for what the engine says — the
// status codes a client (the CLI, the console, a script) branches on.
func TestHandler(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	json := "application/json"
	tests := []struct {
		name        string
		engine      engine
		method, url string
		ctype, body string
		status      int
		contains    string
	}{
		{name: "status", method: "GET", url: "/v1/status", status: 200, contains: `"store": "fake"`},
		{name: "plugins", method: "GET", url: "/v1/plugins", status: 200, contains: `"name": "p"`},
		{name: "rules", method: "GET", url: "/v1/rules", status: 200, contains: `"id": "r"`},
		{name: "pending, store away", method: "GET", url: "/v1/pending", status: 503, contains: "store away"},
		{name: "command", method: "POST", url: "/v1/rules/r/pause", ctype: json, body: "{}", status: 200, contains: `"state": "paused"`},
		{name: "command, empty body", method: "POST", url: "/v1/rules/r/pause", ctype: json, status: 200},
		{name: "command as a form", method: "POST", url: "/v1/rules/r/pause", ctype: "application/x-www-form-urlencoded", body: "a=b", status: 415},
		{name: "command, unknown field", method: "POST", url: "/v1/rules/r/sleep", ctype: json, body: `{"untl":"x"}`, status: 400, contains: "bad command"},
		{name: "command, body too large", method: "POST", url: "/v1/rules/r/sleep", ctype: json, body: `{"for":"` + strings.Repeat("9", 5000) + `"}`, status: 413},
		{name: "unknown rule", engine: engine{cmdErr: status.ErrUnknownRule}, method: "POST", url: "/v1/rules/x/pause", ctype: json, status: 404},
		{name: "illegal transition", engine: engine{cmdErr: &task.IllegalError{Event: task.Pause, State: task.Killed}}, method: "POST", url: "/v1/rules/r/pause", ctype: json, status: 409},
		{name: "sleep without until", engine: engine{cmdErr: task.MissingUntilError}, method: "POST", url: "/v1/rules/r/sleep", ctype: json, status: 400},
		{name: "state not stored", engine: engine{cmdErr: errors.New("store away")}, method: "POST", url: "/v1/rules/r/pause", ctype: json, status: 503},
		{name: "runs", method: "GET", url: "/v1/runs?rule=r&since=2h&limit=3", status: 200, contains: "[]"},
		{name: "runs, bad outcome", method: "GET", url: "/v1/runs?outcome=meh", status: 400, contains: "outcome"},
		{name: "runs, log off", engine: engine{runsErr: status.ErrNoExecLog}, method: "GET", url: "/v1/runs", status: 404},
		{name: "run tree, no such run", method: "GET", url: "/v1/runs/abc/tree", status: 404},
		{name: "run cancel", method: "POST", url: "/v1/runs/r1/cancel", ctype: json, body: "{}", status: 200, contains: `"by": "api"`},
		{name: "run cancel as a form", method: "POST", url: "/v1/runs/r1/cancel", ctype: "application/x-www-form-urlencoded", status: 415},
		{name: "run cancel, no such run", method: "POST", url: "/v1/runs/r2/cancel", ctype: json, status: 404},
		{name: "run command unknown", method: "POST", url: "/v1/runs/r1/explode", ctype: json, status: 400},
		{name: "rule", method: "GET", url: "/v1/rules/r", status: 200, contains: `"source": "- id: r\n"`},
		{name: "rule, unknown", method: "GET", url: "/v1/rules/x", status: 404},
		{name: "why not", method: "GET", url: "/v1/rules/r/why", status: 200, contains: `"battery": 40`},
		{name: "why not, unknown rule", method: "GET", url: "/v1/rules/x/why", status: 404},
		{name: "healthz", method: "GET", url: "/healthz", status: 200, contains: "ok"},
		{name: "readyz", method: "GET", url: "/readyz", status: 200, contains: "ready"},
		{name: "readyz, store away", engine: engine{notReady: errors.New("store: refused")}, method: "GET", url: "/readyz", status: 503, contains: "not ready: store: refused"},
		{name: "no ingest route given", method: "POST", url: "/v1/events", ctype: json, body: "{}", status: 405},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.engine
			e.now = t0
			h := api.Handler(&e, api.Routes{})
			req := httptest.NewRequest(tc.method, tc.url, strings.NewReader(tc.body))
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.contains) {
				t.Errorf("%s %s: %d %q; want %d with %q", tc.method, tc.url, rec.Code, rec.Body.String(), tc.status, tc.contains)
			}
			if tc.name == "runs" {
				want := runlog.Filter{Rule: "r", Since: t0.Add(-2 * time.Hour), Limit: 3}
				if e.filter != want {
					t.Errorf("filter %+v; want %+v (since counted back from the engine's clock)", e.filter, want)
				}
			}
		})
	}
}

// TestServeSocket: the API answers on its unix socket (mode 0600), and on
// TCP when asked, where a request without the token is refused; Close
// removes the socket.
func TestServeSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, api.SocketName)
	e := &engine{}
	s, err := api.Serve(api.ServerConfig{Socket: sock, HTTPAddr: "127.0.0.1:0", Token: "sekrit-sekrit-sekrit"}, api.Handler(e, api.Routes{}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	unix := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket: %v, %v; want mode 0600", fi, err)
	}
	if body := get(t, unix, "http://ruled/healthz", ""); body != "ok\n" {
		t.Errorf("socket: %q", body)
	}
	if s.Addr() == "" {
		t.Fatal("no TCP address")
	}
	if code := statusCode(t, "http://"+s.Addr()+"/v1/status", ""); code != http.StatusUnauthorized {
		t.Errorf("TCP without the token: %d; want 401", code)
	}
	if code := statusCode(t, "http://"+s.Addr()+"/v1/status", "sekrit-sekrit-sekrit"); code != http.StatusOK {
		t.Errorf("TCP with the token: %d; want 200", code)
	}
	// A health probe has no token, and the probes say nothing of the daemon.
	if code := statusCode(t, "http://"+s.Addr()+"/healthz", ""); code != http.StatusOK {
		t.Errorf("/healthz without the token: %d; want 200", code)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(sock); err == nil {
		t.Errorf("the socket is still there after Close (%v)", fi.Mode())
	}
}

func get(t *testing.T, c *http.Client, url, token string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func statusCode(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestControlCommand(t *testing.T) {
	tests := []struct {
		topic, payload string
		rule, command  string
		ok, bad        bool
	}{
		{"ruled.cmd.low-battery", `{"command":"sleep","for":"1h"}`, "low-battery", "sleep", true, false},
		{"ruled.cmd.r", `not json`, "r", "", true, true},
		{"ruled.triggers.changed", `{}`, "", "", false, false},
	}
	for _, tc := range tests {
		rule, c, ok, err := api.ControlCommand(tc.topic, []byte(tc.payload))
		if rule != tc.rule || c.Command != tc.command || ok != tc.ok || errors.Is(err, status.ErrBadCommand) != tc.bad {
			t.Errorf("%s %s: %q %q %v %v", tc.topic, tc.payload, rule, c.Command, ok, err)
		}
	}
}

// states is a States of fixed entities; forgetErr fails Forget's write.
type states struct {
	m         map[string]status.Entity
	forgetErr error
}

func (s *states) States(prefix string, limit int) ([]status.Entity, int) { return nil, len(s.m) }
func (s *states) State(id string) (status.Entity, bool) {
	e, ok := s.m[id]
	return e, ok
}
func (s *states) Forget(id string) (bool, error) {
	if _, ok := s.m[id]; !ok {
		return false, nil
	}
	delete(s.m, id)
	return true, s.forgetErr
}

// TestForgetState: DELETE /v1/state/{id} forgets an entity (204), says
// 404 for one there is not, 503 when the store did not take the removal,
// and 404 with no state table.
func TestForgetState(t *testing.T) {
	for _, tc := range []struct {
		name   string
		s      *states
		id     string
		status int
		body   string
	}{
		{"forgotten", &states{m: map[string]status.Entity{"door.front": {ID: "door.front"}}}, "door.front", 204, ""},
		{"none", &states{m: map[string]status.Entity{}}, "door.front", 404, `no entity "door.front"`},
		{"store away", &states{m: map[string]status.Entity{"a/b.c": {}}, forgetErr: errors.New("store away")}, "a/b.c", 503, "a restart before it does brings it back"},
		{"no table", nil, "door.front", 404, "no entity state is kept here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			routes := api.Routes{}
			if tc.s != nil {
				routes.States = tc.s
			}
			h := api.Handler(&engine{}, routes)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("DELETE", "/v1/state/"+tc.id, nil))
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.body) {
				t.Errorf("%d %q; want %d with %q", rec.Code, rec.Body.String(), tc.status, tc.body)
			}
		})
	}
}

// windows is a window table of fixed values, by window and key.
type windows map[string]map[string]string

func (w windows) Window(name, key string) ([]byte, bool) {
	keys, ok := w[name]
	if !ok {
		return nil, false
	}
	if v, ok := keys[key]; ok {
		return []byte(v), true
	}
	return []byte(`{"count":0}`), true
}

func (w windows) Keys(name string, limit int) ([]string, int, bool) {
	keys, ok := w[name]
	if !ok {
		return nil, 0, false
	}
	var out []string
	for k := range keys {
		out = append(out, k)
	}
	slices.Sort(out)
	return out[:min(limit, len(out))], len(out), true
}

// TestWindows: GET /v1/windows/{name}?key=K is a window's value for a
// key (a key not heard of: no events); without key its keys; 404 for a
// window not defined, or none kept; 400 for a bad limit.
func TestWindows(t *testing.T) {
	ws := windows{"temp": {"a": `{"count":2,"avg":4}`, "b": `{"count":1}`}}
	for _, tc := range []struct {
		name   string
		w      api.Windows
		path   string
		status int
		body   string
	}{
		{"value", ws, "/v1/windows/temp?key=a", 200, `{"window":"temp","key":"a","value":{"count":2,"avg":4}}`},
		{"a key not heard of", ws, "/v1/windows/temp?key=z", 200, `"value":{"count":0}`},
		{"keys", ws, "/v1/windows/temp", 200, `{"window":"temp","keys":["a","b"],"total":2}`},
		{"keys, limited", ws, "/v1/windows/temp?limit=1", 200, `{"window":"temp","keys":["a"],"total":2}`},
		{"a bad limit", ws, "/v1/windows/temp?limit=0", 400, "limit: want 1 to"},
		{"no such window", ws, "/v1/windows/tmp?key=a", 404, `no window "tmp" is defined`},
		{"none kept", nil, "/v1/windows/temp", 404, "no window is kept here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := api.Handler(&engine{}, api.Routes{Windows: tc.w})
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", tc.path, nil))
			body := rec.Body.String()
			var b bytes.Buffer
			if json.Compact(&b, rec.Body.Bytes()) == nil {
				body = b.String()
			}
			if rec.Code != tc.status || !strings.Contains(body, tc.body) {
				t.Errorf("%d %q; want %d with %q", rec.Code, body, tc.status, tc.body)
			}
		})
	}
}

// TestServeRefusesATokenTwice: $RULED_TOKEN equal to a tokens file's
// token would give one token two names and two sets of scopes.
func TestServeRefusesATokenTwice(t *testing.T) {
	sock := filepath.Join(t.TempDir(), api.SocketName)
	tok := "sekrit-sekrit-sekrit"
	_, err := api.Serve(api.ServerConfig{Socket: sock, HTTPAddr: "127.0.0.1:0", Token: tok,
		Tokens: map[string]string{"dash": tok}, Scopes: map[string][]string{"dash": {api.ScopeRead}}}, api.Handler(&engine{}, api.Routes{}))
	if err == nil || !strings.Contains(err.Error(), `$RULED_TOKEN is the tokens file's token "dash"`) {
		t.Errorf("Serve: %v", err)
	}
}
