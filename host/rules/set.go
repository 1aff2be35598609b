package rules

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ruled-dev/ruled/internal/regular"
)

// Set is the valid rules of a directory, by id, in a stable order: by file
// name, then by place in the file.
type Set struct {
	rules   []*Rule
	byID    map[string]*Rule
	windows []*Window
}

// MaxFileSize bounds a rule file: rules are kilobytes, and a file of
// megabytes is a mistake (a 50 MB one was parsed again, and its 269,717
// problems logged again, at every refresh).
const MaxFileSize = 4 << 20

// LoadDir parses every *.yaml and *.yml file of dir (not its
// subdirectories, nor hidden files, which editors leave behind), in file
// name order. It returns the valid rules and every problem; a rule id used
// twice is an error on the second use, and the first keeps it. The Set is
// never nil.
func LoadDir(dir string, cat Catalog) (*Set, []*Error) {
	s := &Set{byID: map[string]*Rule{}}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return s, []*Error{{Pos: Pos{File: dir}, Msg: "cannot read the rules directory: " + cause(err)}}
	}
	seen := map[string]Pos{}
	var errs []*Error
	for _, de := range ents {
		name := de.Name()
		ext := filepath.Ext(name)
		if de.IsDir() || strings.HasPrefix(name, ".") || ext != ".yaml" && ext != ".yml" {
			continue
		}
		path := filepath.Join(dir, name)
		data, err := regular.ReadFile(path, MaxFileSize)
		if err != nil {
			errs = append(errs, &Error{Pos: Pos{File: path}, Msg: "cannot read: " + cause(err)})
			continue
		}
		p := newParser(path, data, cat, seen)
		p.parse(data)
		errs = append(errs, p.errs...)
		s.rules = append(s.rules, p.rules...)
		s.windows = append(s.windows, p.windows...)
	}
	rs, ws, werrs := CheckWindows(s.rules, s.windows)
	s.rules, s.windows = rs, ws
	for _, r := range rs {
		s.byID[r.ID] = r
	}
	return s, append(errs, werrs...)
}

// Windows are the windows the directory defines, in file order.
func (s *Set) Windows() []*Window { return append([]*Window(nil), s.windows...) }

// cause drops the path an fs error repeats.
func cause(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Rule returns the rule with the id.
func (s *Set) Rule(id string) (*Rule, bool) {
	r, ok := s.byID[id]
	return r, ok
}

// File returns the file the rule with the id came from, "" if there is
// none.
func (s *Set) File(id string) string {
	if r, ok := s.byID[id]; ok {
		return r.Pos.File
	}
	return ""
}

// Rules returns the rules in the set's order. The slice is the caller's.
func (s *Set) Rules() []*Rule {
	return append([]*Rule(nil), s.rules...)
}

// Len is the number of rules.
func (s *Set) Len() int { return len(s.rules) }
