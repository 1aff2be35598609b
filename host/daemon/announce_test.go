package daemon

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/internal/redistest"
)

const oneRule = `
- id: first
  on: a
  steps:
    - do: log.log
      with: {message: "first"}
`

const secondRule = `
- id: second
  on: b
  steps:
    - do: log.log
      with: {message: "second"}
`

func hasRule(d *testDaemon, id string) bool { return d.Current(id) != nil }

// TestTriggersAnnounced: a process whose rules change announces it on the
// control channel, and another process reading the same rules directory —
// with no file events and no periodic refresh of its own — reads them again
// at once.
func TestTriggersAnnounced(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules")
	writeRules(t, rules, oneRule)
	plugins := pluginsDir(t)
	a := startDaemon(t, Config{RulesDir: rules, PluginsDir: plugins, DataDir: filepath.Join(dir, "a"), RedisURL: srv.URL(), Watch: true})
	b := startDaemon(t, Config{RulesDir: rules, PluginsDir: plugins, DataDir: filepath.Join(dir, "b"), RedisURL: srv.URL(), RulesRefresh: -1})
	if err := os.WriteFile(filepath.Join(rules, "second.yaml"), []byte(secondRule), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the watching process to load the rule", func() bool { return hasRule(a, "second") })
	eventually(t, "the other process to load it on the announcement", func() bool { return hasRule(b, "second") })
}

// TestRulesRefresh: without file events or announcements, the periodic
// refresh picks a change up.
func TestRulesRefresh(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules")
	writeRules(t, rules, oneRule)
	d := startDaemon(t, Config{RulesDir: rules, PluginsDir: pluginsDir(t), DataDir: filepath.Join(dir, "data"), RulesRefresh: 100 * time.Millisecond})
	if err := os.WriteFile(filepath.Join(rules, "second.yaml"), []byte(secondRule), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the refresh to load the rule", func() bool { return hasRule(d, "second") })
}
