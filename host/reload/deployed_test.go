package reload

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/host/trust"
)

// source is a deployment and its blobs, in memory.
type source struct {
	dep   *store.Deployment
	blobs map[string][]byte
	err   error // Current's
}

func (s *source) Current(context.Context) (*store.Deployment, error) { return s.dep, s.err }
func (s *source) Blob(_ context.Context, dg string) ([]byte, error) {
	if b, ok := s.blobs[dg]; ok {
		return b, nil
	}
	return nil, errors.New("no blob " + dg[:8])
}

// deploy makes version v of files (name → content) the source's.
func (s *source) deploy(v int64, files map[string]string) {
	s.dep = &store.Deployment{Version: v, Files: map[string]string{}}
	for name, body := range files {
		dg := store.Digest([]byte(body))
		s.dep.Files[name] = dg
		s.blobs[dg] = []byte(body)
	}
}

func TestDeployedSync(t *testing.T) {
	root := t.TempDir()
	rules, plugins := filepath.Join(root, "rules"), filepath.Join(root, "plugins")
	src := &source{blobs: map[string][]byte{}}
	d := NewDeployed(src, rules, plugins, nil, nil)
	if err := d.Start(context.Background()); err != nil || d.Current() != nil {
		t.Fatalf("start with nothing deployed: %v, %v", err, d.Current())
	}
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return "<none>"
		}
		return string(b)
	}
	steps := []struct {
		name    string
		do      func()
		changed []string // relative to root, sorted
		err     bool
		files   map[string]string // what is on disk after
	}{
		{"the first deployment is written",
			func() { src.deploy(1, map[string]string{"rules/a.yaml": "a1", "plugins/p.wasm": "p1"}) },
			[]string{"plugins/p.wasm", "rules/a.yaml"}, false, map[string]string{"rules/a.yaml": "a1", "plugins/p.wasm": "p1"}},
		{"the same version again changes nothing", func() {}, nil, false, map[string]string{"rules/a.yaml": "a1"}},
		{"a new version: one file changes, one goes, one comes",
			func() { src.deploy(2, map[string]string{"rules/a.yaml": "a2", "rules/b.yaml": "b2"}) },
			[]string{"plugins/p.wasm", "rules/a.yaml", "rules/b.yaml"}, false,
			map[string]string{"rules/a.yaml": "a2", "rules/b.yaml": "b2", "plugins/p.wasm": "<none>"}},
		{"a blob that cannot be read leaves the last deployment whole",
			func() {
				src.deploy(3, map[string]string{"rules/a.yaml": "a3", "rules/b.yaml": "b3"})
				delete(src.blobs, store.Digest([]byte("b3")))
			},
			nil, true, map[string]string{"rules/a.yaml": "a2", "rules/b.yaml": "b2"}},
		{"a source that does not answer changes nothing",
			func() { src.err = errors.New("redis down") }, nil, true, map[string]string{"rules/a.yaml": "a2"}},
	}
	for _, st := range steps {
		st.do()
		changed, err := d.Sync(context.Background())
		if (err != nil) != st.err {
			t.Fatalf("%s: error %v", st.name, err)
		}
		var got []string
		for p := range changed {
			rel, _ := filepath.Rel(root, p)
			got = append(got, filepath.ToSlash(rel))
		}
		slices.Sort(got)
		if !slices.Equal(got, st.changed) {
			t.Errorf("%s: changed %v, want %v", st.name, got, st.changed)
		}
		for rel, want := range st.files {
			if got := read(rel); got != want {
				t.Errorf("%s: %s holds %q, want %q", st.name, rel, got, want)
			}
		}
	}
	if d.Current().Version != 2 {
		t.Errorf("current version %d, want 2", d.Current().Version)
	}
}

// TestDeployedVerifies: with signatures required for deploy, a deployment
// is written only when every file is signed by a trusted key; one
// tampered, unsigned or revoked file refuses it whole, naming the file,
// and the last deployment stays on disk.
func TestDeployedVerifies(t *testing.T) {
	ops, _ := trust.Generate("ops", rand.Reader)
	old, _ := trust.Generate("old", rand.Reader)
	other, _ := trust.Generate("other", rand.Reader)
	ring, err := trust.NewKeyring([]trust.PublicKey{ops.Public(), old.Public()}, []string{"old"})
	if err != nil {
		t.Fatal(err)
	}
	gate, err := trust.NewGate(ring, map[string]bool{trust.PlaceDeploy: true})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	src := &source{blobs: map[string][]byte{}}
	d := NewDeployed(src, filepath.Join(root, "rules"), filepath.Join(root, "plugins"), gate, nil)
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// signed deploys files, each signed by key, and the deployment too
	// (nil: no signature), signed at a time that moves on; then edit
	// changes them as an attacker with Redis would. It returns the
	// deployment, for a rollback.
	clock := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	signed := func(v int64, key *trust.Key, files map[string]string, edit func(map[string]string)) store.Deployment {
		all := map[string]string{}
		for name, body := range files {
			all[name] = body
			if key != nil {
				all[name+trust.SigSuffix] = string(key.Sign(name, []byte(body)).Marshal())
			}
		}
		src.deploy(v, all)
		if key != nil {
			clock = clock.Add(time.Minute)
			src.dep.Signed = &store.SignedManifest{At: clock, Signature: key.SignManifest(src.dep.Files, clock).Marshal()}
		}
		if edit != nil {
			edit(all)
			signedBy := src.dep.Signed
			src.deploy(v, all)
			src.dep.Signed = signedBy
		}
		return *src.dep
	}
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return "<none>"
		}
		return string(b)
	}
	var first store.Deployment
	tests := []struct {
		name   string
		do     func()
		refuse string // in the error; "" for none
		on     string // rules/a.yaml's content after
	}{
		{"signed by a trusted key: written", func() {
			first = signed(1, ops, map[string]string{"rules/a.yaml": "a1", "plugins/p.wasm": "p1"}, nil)
		}, "", "a1"},
		{"the same files, the deployment not signed", func() {
			signed(2, ops, map[string]string{"rules/a.yaml": "a2"}, nil)
			src.dep.Signed = nil
		}, "deployment 2: unsigned", "a1"},
		{"a file left out of a signed deployment", func() {
			signed(3, ops, map[string]string{"rules/a.yaml": "a3", "rules/safety.yaml": "s3"}, func(m map[string]string) {
				delete(m, "rules/safety.yaml")
				delete(m, "rules/safety.yaml.sig")
			})
		}, "deployment 3: tampered", "a1"},
		{"everything left out", func() {
			signed(4, ops, map[string]string{"rules/a.yaml": "a4"}, func(m map[string]string) { clear(m) })
		}, "deployment 4: tampered", "a1"},
		{"a file changed in Redis: refused whole", func() {
			signed(2, ops, map[string]string{"rules/a.yaml": "a2", "plugins/p.wasm": "p2"}, func(m map[string]string) { m["plugins/p.wasm"] = "evil" })
		}, "plugins/p.wasm: tampered", "a1"},
		{"unsigned", func() { signed(3, nil, map[string]string{"rules/a.yaml": "a3"}, nil) }, "rules/a.yaml: unsigned", "a1"},
		{"an unknown key", func() { signed(4, other, map[string]string{"rules/a.yaml": "a4"}, nil) }, "unknown key", "a1"},
		{"a revoked key", func() { signed(5, old, map[string]string{"rules/a.yaml": "a5"}, nil) }, "revoked key", "a1"},
		{"a signature moved to another file", func() {
			signed(6, ops, map[string]string{"rules/a.yaml": "a6", "rules/b.yaml": "b6"}, func(m map[string]string) {
				m["rules/b.yaml"], m["rules/b.yaml.sig"] = m["rules/a.yaml"], m["rules/a.yaml.sig"]
			})
		}, "rules/b.yaml: renamed", "a1"},
		{"signed again: written", func() { signed(7, ops, map[string]string{"rules/a.yaml": "a7"}, nil) }, "", "a7"},
		{"the deployment served, a file left out under its version", func() {
			cur := *src.dep
			cur.Files = map[string]string{}
			src.dep = &cur
		}, "deployment 7: tampered", "a7"},
		{"an older signed deployment sent again", func() {
			src.dep = &first
			src.dep.Version = 8
		}, "deployment 8: older than the deployment served", "a7"},
	}
	for _, tc := range tests {
		tc.do()
		_, err := d.Sync(context.Background())
		switch {
		case tc.refuse == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.refuse != "" && (err == nil || !strings.Contains(err.Error(), tc.refuse)):
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.refuse)
		}
		if got := read("rules/a.yaml"); got != tc.on {
			t.Errorf("%s: rules/a.yaml holds %q, want %q", tc.name, got, tc.on)
		}
		if rep := gate.Report(); (len(rep.Refused) > 0) != (tc.refuse != "") {
			t.Errorf("%s: refused now %+v", tc.name, rep.Refused)
		}
	}
	if read("plugins/p.wasm") != "<none>" || read("rules/a.yaml.sig") == "<none>" {
		t.Errorf("after the last deployment: p.wasm %q, a.yaml.sig %q", read("plugins/p.wasm"), read("rules/a.yaml.sig"))
	}

	// A start that cannot read Redis serves what it kept only if that is
	// the deployment it checked: a file changed on disk empties both
	// directories.
	src.err = errors.New("redis down")
	restart := func() {
		d = NewDeployed(src, filepath.Join(root, "rules"), filepath.Join(root, "plugins"), gate, nil)
		if err := d.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	restart()
	if read("rules/a.yaml") != "a7" {
		t.Errorf("the kept deployment, checked, is not served: a.yaml %q", read("rules/a.yaml"))
	}
	os.WriteFile(filepath.Join(root, "rules", "evil.yaml"), []byte("evil"), 0o644)
	restart()
	if read("rules/a.yaml") != "<none>" || read("rules/evil.yaml") != "<none>" {
		t.Errorf("a file no signed deployment names was kept: a.yaml %q, evil.yaml %q", read("rules/a.yaml"), read("rules/evil.yaml"))
	}
}

func TestAnnouncementFromElsewhere(t *testing.T) {
	tests := []struct {
		payload  string
		from     string
		elsewher bool
	}{
		{string(TriggersChanged("ruled deploy")), "ruled deploy", true},
		{`{"from":"me","added":["r"]}`, "", false},
		{`not json`, "", false},
	}
	for _, tc := range tests {
		from, ok := FromElsewhere([]byte(tc.payload), "me")
		if from != tc.from || ok != tc.elsewher {
			t.Errorf("%s: %q %v, want %q %v", tc.payload, from, ok, tc.from, tc.elsewher)
		}
	}
}
