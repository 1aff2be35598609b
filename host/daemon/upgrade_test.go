package daemon

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/runlog"
	"github.com/ruled-dev/ruled/host/sched"
	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/internal/plugintest"
)

// upgradeVersions are the store formats with a committed data directory
// under testdata/upgrade/<version>: what a device that ran that version
// left behind. A change to a stored format adds a version (and keeps the
// old ones loading); RULED_WRITE_FIXTURES=1 writes the current one.
var upgradeVersions = []string{"v1"}

const currentFormat = "v1"

// The fixture's moment: a ride started at 08:00 and its later step is due
// two hours on.
var fixtureStart = time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)

func upgradeConfig(t *testing.T, data string, clk *sched.Virtual) Config {
	plugins := t.TempDir()
	b, err := os.ReadFile(filepath.Join(plugintest.Root(), "sdk/assemblyscript/build/example.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(plugins, "battery.wasm"), b, 0o644)
	return Config{RulesDir: filepath.Join("testdata", "upgrade"), PluginsDir: plugins, DataDir: data, Clock: clk,
		Plugins: map[string]PluginConfig{"battery": {Grant: []abi.Capability{abi.CapPublish}}}}
}

// copyTree copies the store files of a data directory (not caches or
// sockets).
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if e.IsDir() {
			if rel == "cache" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		if !e.Type().IsRegular() || strings.HasSuffix(p, ".sock") || strings.HasSuffix(p, ".tmp") {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(filepath.Join(to, rel))
		if err != nil {
			return err
		}
		defer out.Close()
		_, err = io.Copy(out, in)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// writeFixture runs this version: a ride starts (its later step waits,
// durable), a rule is paused, and the daemon stops; its data directory is
// the fixture.
func writeFixture(t *testing.T, dst string) {
	data := t.TempDir()
	clk := sched.NewVirtual(fixtureStart)
	td := startDaemon(t, upgradeConfig(t, data, clk))
	td.send(t, `{"topic":"ride.start","vehicle":"v1","battery":12}`)
	eventually(t, "the step parked", func() bool { n, ok := clk.Next(); return ok && n == 2*time.Hour })
	if _, err := td.Command("held", status.Command{Command: "pause"}); err != nil {
		t.Fatal(err)
	}
	td.Stop()
	os.RemoveAll(dst)
	copyTree(t, data, dst)
	t.Logf("wrote %s", dst)
}

// Pending records, rule states and execution-log entries written by each
// earlier version load after an upgrade: the waiting step replays on the
// module it was scheduled with and fires at its due time, the paused rule
// stays paused, and the run's tree is whole across the versions.
func TestUpgradeLoadsEarlierStores(t *testing.T) {
	if os.Getenv("RULED_WRITE_FIXTURES") == "1" {
		writeFixture(t, filepath.Join("testdata", "upgrade", currentFormat, "data"))
	}
	for _, v := range upgradeVersions {
		t.Run(v, func(t *testing.T) {
			data := t.TempDir()
			copyTree(t, filepath.Join("testdata", "upgrade", v, "data"), data)
			clk := sched.NewVirtual(fixtureStart.Add(time.Hour)) // the device was off for an hour
			td := startDaemon(t, upgradeConfig(t, data, clk))
			if td.Status().Replayed != 1 {
				t.Fatalf("replayed %d waiting steps; want 1\n%s", td.Status().Replayed, td.logs.String())
			}
			states := map[string]string{}
			for _, r := range td.Rules() {
				states[r.ID] = r.State
			}
			if states["held"] != "paused" || states["remind"] != "runnable" {
				t.Errorf("states %v; want held paused, remind runnable", states)
			}
			waitTimer(t, clk, time.Hour)
			clk.Advance(time.Hour)
			eventually(t, "the later step's alert", func() bool { return len(td.topics("alerts.later")) == 1 })
			var runs []runlog.Run
			eventually(t, "the run ended in the log", func() bool {
				runs, _ = td.Runs(runlog.Filter{Rule: "remind"})
				return len(runs) == 1 && runs[0].Outcome == runlog.OK
			})
			rows, err := td.RunTree(runs[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, r := range rows {
				if r.Node != nil {
					kinds = append(kinds, r.Node.Kind+" "+r.Node.Name)
				}
			}
			want := "trigger ride.start|condition |step now|delay later|replay later|step later"
			if got := strings.Join(kinds, "|"); got != want {
				t.Errorf("tree nodes %q; want %q", got, want)
			}
			// A bbolt log.db (v1) became segment files, the nodes written
			// before the upgrade included (the tree above), and is gone.
			if _, err := os.Stat(filepath.Join(data, OldLogFile)); !os.IsNotExist(err) {
				t.Errorf("%s left after the start: %v", OldLogFile, err)
			}
		})
	}
}
