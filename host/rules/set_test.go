package rules

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadDir(t *testing.T) {
	dir := filepath.Join("testdata", "dup")
	s, errs := LoadDir(dir, plugins)
	checkErrors(t, errs, []string{
		filepath.Join(dir, "b.yml") + `:4:7: rule id "shared" is already used (hint: first used at ` + filepath.Join(dir, "a.yaml") + `:1:7)`,
	})
	var ids []string
	for _, r := range s.Rules() {
		ids = append(ids, r.ID)
	}
	if got := strings.Join(ids, " "); got != "shared own" {
		t.Errorf("rules %q; want %q (files in name order, the first of a duplicate kept)", got, "shared own")
	}
	if got, want := s.File("shared"), filepath.Join(dir, "a.yaml"); got != want {
		t.Errorf("File(shared) = %q; want %q", got, want)
	}
	if r, ok := s.Rule("own"); !ok || s.File("own") != filepath.Join(dir, "b.yml") || r.ID != "own" {
		t.Errorf("Rule(own) = %v, %v", r, ok)
	}
	if _, ok := s.Rule("nope"); ok || s.File("nope") != "" || s.Len() != 2 {
		t.Errorf("a missing rule is found, or Len %d != 2", s.Len())
	}
}

func TestLoadDirGood(t *testing.T) {
	s, errs := LoadDir(filepath.Join("testdata", "good"), plugins)
	checkErrors(t, errs, nil)
	var ids []string
	for _, r := range s.Rules() {
		ids = append(ids, r.ID)
	}
	if got, want := strings.Join(ids, " "), "door-open door-closed low-battery heartbeat-log first-boot"; got != want {
		t.Errorf("rules %q; want %q", got, want)
	}
}

func TestLoadDirMissing(t *testing.T) {
	s, errs := LoadDir(filepath.Join("testdata", "nonexistent"), nil)
	checkErrors(t, errs, []string{filepath.Join("testdata", "nonexistent") + ": cannot read the rules directory: no such file or directory"})
	if s == nil || s.Len() != 0 {
		t.Errorf("got set %v; want an empty one", s)
	}
}
