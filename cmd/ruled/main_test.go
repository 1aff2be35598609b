package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/internal/plugintest"
)

func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	if len(args) > 1 && (args[0] == "call" || args[0] == "plugin" && args[1] == "inspect") && !slices.Contains(args, "-h") {
		// A data dir shared by every run of these tests, so the CLI's
		// compilation cache (<data>/cache/wazero) stays warm.
		args = append(args, "--data", filepath.Join(filepath.Dir(plugintest.CacheDir()), "cli-data"))
	}
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

const event = `{"topic":"scooter.telemetry","time":"2026-11-30T08:15:00Z","vehicle":"s-17","battery":12,"charging":false}`

func TestCall(t *testing.T) {
	expr := plugintest.FirstParty(t, "expr")
	publish := plugintest.FirstParty(t, "publish")
	evFile := filepath.Join(t.TempDir(), "ev.json")
	os.WriteFile(evFile, []byte(event), 0o644)
	tests := []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"condition true", "", []string{"call", expr, "expr", "--event", evFile, "--config", "expr=battery < 20 && !charging"}, 0, "true\n", ""},
		{"condition false, event on stdin", event, []string{"call", expr, "expr", "--event", "-", "--config", "expr=battery > 50"}, 0, "false\n", ""},
		{"action", "", []string{"call", publish, "publish", "--event", evFile, "--config", "topic=alerts.{{vehicle}}",
			"--config", `payload.level="{{battery}}"`}, 0, `{"topic":"alerts.s-17"}` + "\n", `publish alerts.s-17 {"level":12}`},
		// A publish the daemon would refuse (a template naming a field the
		// event lacks leaves an empty segment) is refused here too.
		{"publish refused", "", []string{"call", publish, "publish", "--event", evFile, "--config", "topic=alerts.{{nope}}"}, 1, "",
			`topic "alerts." has an empty segment (a {{placeholder}} in the topic naming a field the event lacks?)`},
		{"config refused", "", []string{"call", expr, "expr", "--config", "expr=battery <"}, 1, "", "ruled: plugin "},
		{"grant none", "", []string{"call", publish, "publish", "--grant", "none", "--config", "topic=x"}, 1, "",
			`imports ruled.publish, which needs the "publish" capability`},
		{"unknown grant", "", []string{"call", publish, "publish", "--grant", "disk"}, 2, "", `unknown capability "disk"`},
		{"missing function", "", []string{"call", expr}, 2, "", "call needs a module and a function"},
		{"no such file", "", []string{"call", "/nonexistent.wasm", "x"}, 1, "", "no such file"},
		{"unknown verb", "", []string{"nope"}, 2, "", `unknown command "nope"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, tc.stdin, tc.args...)
			if code != tc.code || out != tc.stdout || !strings.Contains(errs, tc.stderr) {
				t.Errorf("exit %d; stdout %q; stderr %q\nwant exit %d; stdout %q; stderr containing %q",
					code, out, errs, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

func TestInspect(t *testing.T) {
	publish := plugintest.FirstParty(t, "publish")
	code, out, errs := runCLI(t, "", "plugin", "inspect", publish)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"digest    sha256:", "abi       v" + abi.VersionString(abi.Version), "plugin    publish 1.1.0",
		"action    publish", "needs: publish", "capabilities publish"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "", "plugin", "inspect", "--json", publish)
	if code != 0 || !strings.Contains(out, `"digest": "`) || !strings.Contains(out, `"kind": "action"`) {
		t.Errorf("inspect --json: %d %s", code, out)
	}
}

// TestHelpAndMissingData: a verb's -h or --help prints its flags on stdout
// and exits 0; a mistake prints them on stderr and exits 2; a command that
// needs a daemon's data directory and was given none says what it tried.
func TestHelpAndMissingData(t *testing.T) {
	t.Setenv("RULED_DATA", "")
	verbs := [][]string{{"run"}, {"status"}, {"pending", "ls"}, {"log", "ls"}, {"log", "tree"}, {"rule", "ls"},
		{"plugin", "ls"}, {"plugin", "inspect"}, {"call"}, {"lint"}, {"test"}, {"record"}, {"deploy"}}
	for _, v := range verbs {
		for _, h := range []string{"-h", "--help"} {
			args := append(append([]string{}, v...), h)
			code, out, errs := runCLI(t, "", args...)
			if code != 0 || !strings.Contains(out, "Usage") || !strings.Contains(out, "  -") || errs != "" {
				t.Errorf("ruled %s: exit %d, stdout %q, stderr %q; want 0, the usage on stdout, nothing on stderr",
					strings.Join(args, " "), code, out, errs)
			}
		}
	}
	// A mistake is said once, with what was meant: not the whole usage.
	code, out, errs := runCLI(t, "", "status", "--bogus")
	if code != 2 || out != "" || strings.Contains(errs, "Usage") || !strings.Contains(errs, "unknown flag --bogus; ruled status -h lists the flags") {
		t.Errorf("status --bogus: exit %d, stdout %q, stderr %q; want 2 and the mistake on stderr", code, out, errs)
	}
	code, _, errs = runCLI(t, "", "run", "--htp", "1")
	if code != 2 || !strings.Contains(errs, "unknown flag --htp (did you mean --http?)") || strings.Count(errs, "\n") != 1 {
		t.Errorf("run --htp 1: exit %d, stderr %q; want 2 and one line with a did-you-mean", code, errs)
	}
	if _, err := os.Stat(serviceDataDir); err == nil {
		t.Skipf("%s exists here: the default is found", serviceDataDir)
	}
	for _, v := range [][]string{{"log", "ls"}, {"status"}, {"rule", "ls"}} {
		code, _, errs := runCLI(t, "", v...)
		if code != 2 || !strings.Contains(errs, "--data is not given, $RULED_DATA is not set") || !strings.Contains(errs, serviceDataDir) {
			t.Errorf("ruled %s without --data: exit %d, %q; want 2, naming what it tried", strings.Join(v, " "), code, errs)
		}
	}
}

// TestReasons: counts by reason as status prints them — nothing for none
// (it printed Go's "map[]"), sorted, with the right plural (issue 37, 9).
func TestReasons(t *testing.T) {
	for _, tc := range []struct {
		in   map[string]uint64
		want string
	}{
		{nil, ""},
		{map[string]uint64{}, ""},
		{map[string]uint64{"not-json": 3}, " (not-json 3)"},
		{map[string]uint64{"topic": 1, "not-json": 3}, " (not-json 3, topic 1)"},
	} {
		if got := reasons(tc.in); got != tc.want {
			t.Errorf("reasons(%v) = %q; want %q", tc.in, got, tc.want)
		}
	}
	if got := plural(1, "trigger") + ", " + plural(2, "trigger"); got != "1 trigger, 2 triggers" {
		t.Errorf("plural: %q", got)
	}
}

// TestCallHTTP: `ruled call` grants http and sends for real, to the hosts
// --http-allow and --http-allow-private name, refusing the rest as the
// daemon does (issue 38: it could not grant http at all).
func TestCallHTTP(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
	}))
	defer web.Close()
	httpPlugin := plugintest.FirstParty(t, "http")
	host := strings.TrimPrefix(web.URL, "http://")
	url := "url=" + web.URL + "/v{{battery}}"
	evFile := filepath.Join(t.TempDir(), "ev.json")
	os.WriteFile(evFile, []byte(event), 0o644)
	code, out, errs := runCLI(t, "", "call", httpPlugin, "request", "--event", evFile, "--config", url, "--http-allow-private", host)
	if code != 0 || !strings.Contains(out, `"path":"/v12"`) {
		t.Errorf("allowed: exit %d; stdout %q; stderr %q", code, out, errs)
	}
	code, out, errs = runCLI(t, "", "call", httpPlugin, "request", "--event", evFile, "--config", url)
	if code == 0 || !strings.Contains(errs, "outbound http refused") {
		t.Errorf("not allowed: exit %d; stdout %q; stderr %q; want it refused", code, out, errs)
	}
}
