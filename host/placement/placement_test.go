package placement

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/fleet"
	"github.com/ruled-dev/ruled/host/rules"
	"github.com/ruled-dev/ruled/host/ruleset"
	"github.com/ruled-dev/ruled/host/seq"
	"github.com/ruled-dev/ruled/host/store"
)

func TestSingleProcess(t *testing.T) {
	p := New(0, "me", nil)
	if p != nil {
		t.Fatal("no shards made a fleet placement")
	}
	if sp := p.Seq(); sp.HashOf != nil || sp.Owns != nil {
		t.Error("the single process's seq.Placement is not the zero value")
	}
	if !p.Owns("r", "k") || p.PendingHashes() != nil || p.Status() != nil || p.Close() != nil {
		t.Error("the single process's placement does not own everything in the standard hash")
	}
}

func TestFleetPlacement(t *testing.T) {
	p := New(4, "me", nil)
	if !p.Owns("r", "k") {
		t.Error("before Join (nothing runs) a run is not owned")
	}
	hashes := p.PendingHashes()
	if len(hashes) != 4 || !slices.Contains(hashes, p.PendingHash("r", "k")) {
		t.Errorf("hashes %v, a record's %s", hashes, p.PendingHash("r", "k"))
	}
	if got, want := p.PendingHash("r", "k"), fleet.PendingHash(fleet.ShardOf(4, "r", "r\x00k")); got != want {
		t.Errorf("record hash %s, want its shard's %s", got, want)
	}
	if p.Status() != nil {
		t.Error("a status before Join")
	}
	if sp := p.Seq(); sp.HashOf("r", "k") != p.PendingHash("r", "k") || !sp.Owns("r", "k") {
		t.Error("the seq.Placement is not the placement's")
	}
}

type actions struct{}

func (actions) Function(string, string) (abi.Kind, bool) { return abi.KindAction, true }
func (actions) Plugins() []string                        { return nil }

type runner struct{ fired []seq.Trigger }

func (r *runner) Fire(t seq.Trigger) { r.fired = append(r.fired, t) }
func (r *runner) ReleaseWhere(func(rule, key string) bool, time.Duration) int {
	return 0
}

func TestRoute(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "r.yaml"), []byte(`
- id: a
  on: [t.x, t.*]
  key: vehicle
  priority: 2
  steps: [{name: s, do: p.f}]
- id: b
  on: t.x
  steps: [{name: s, do: p.f}]
`), 0o600)
	rs := ruleset.New(ruleset.Config{Dir: dir, Catalog: actions{},
		Compile: func(r *rules.Rule) (*seq.Sequence, error) { return &seq.Sequence{Rule: r}, nil },
		Def:     func(r *rules.Rule) string { return r.ID }})
	if rs.Load(); len(rs.Current().Problems()) > 0 {
		t.Fatal(rs.Current().Problems())
	}
	w := &work{p: New(4, "me", nil), cfg: JoinConfig{Rules: rs, Runner: &runner{}}}
	e, _ := (&bus.Decoder{}).Decode([]byte(`{"topic":"t.x","vehicle":"v1"}`))
	got := w.Route(store.StreamEntry{EventID: e.ID, Topic: e.Topic, Time: e.Time, Raw: e.Raw})
	want := []fleet.Admission{{Rule: "a", Band: 2, Key: "a\x00v1"}, {Rule: "b", Band: 0, Key: "b\x00"}}
	if !slices.Equal(got, want) {
		t.Errorf("admissions %+v, want %+v: each rule once, with its band and key", got, want)
	}
	if got := w.Route(store.StreamEntry{EventID: "x", Topic: "t.x", Raw: []byte("not json")}); got != nil {
		t.Errorf("an entry that does not decode routed to %v", got)
	}
}
