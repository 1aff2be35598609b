package reload

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ruled-dev/ruled/host/store"
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
	d := NewDeployed(src, rules, plugins, nil)
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
