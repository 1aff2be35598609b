package runlog

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"
)

// ErrNotFound is a run the log does not have.
var ErrNotFound = errors.New("runlog: no such run")

// Row is one line of a tree: a run (its run entry, "exec" in JSON) or one
// of its nodes, at a depth a client indents by — a run's nodes one deeper
// than the run, and a sub-run one deeper than the node that fired it.
type Row struct {
	Depth int   `json:"depth"`
	Run   *Run  `json:"exec,omitempty"`
	Node  *Node `json:"node,omitempty"`
	// Interrupted marks an open node that will never close: its run went
	// on past it or ended, so the process running it stopped mid-node.
	Interrupted bool `json:"interrupted,omitempty"`
	// Missing names a sub-run the log does not have (it never started: its
	// condition said no or its rule refused it; or it was deleted).
	Missing string `json:"missing,omitempty"`
}

// maxDepth bounds how deep Tree follows sub-runs: fire chains are allowed
// to be long, not infinite.
const maxDepth = 32

// Tree returns run id and its sub-runs, depth first, as a flat list (the
// origin's executionTree): the run, then its nodes in the order they opened,
// each node followed by the runs it fired. A run whose run entry was lost
// (dropped under backpressure) is shown with outcome "unknown".
func Tree(r Reader, id string) ([]Row, error) {
	var rows []Row
	seen := map[string]bool{}
	var walk func(id string, depth int) error
	walk = func(id string, depth int) error {
		if seen[id] || depth/2 > maxDepth {
			return nil
		}
		seen[id] = true
		ex, nodes, err := read(r, id)
		if err != nil {
			return err
		}
		if ex == nil {
			if len(nodes) == 0 {
				if depth == 0 {
					return fmt.Errorf("%w %q", ErrNotFound, id)
				}
				rows = append(rows, Row{Depth: depth, Missing: id})
				return nil
			}
			ex = &Run{ID: id, Outcome: "unknown"}
		}
		rows = append(rows, Row{Depth: depth, Run: ex})
		for i, n := range nodes {
			row := Row{Depth: depth + 1, Node: n}
			row.Interrupted = n.Outcome == Open && (ex.Outcome != Running || wentOn(nodes[i+1:]))
			rows = append(rows, row)
			for _, c := range n.Children {
				if c == "" {
					continue
				}
				if err := walk(c, depth+2); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(id, 0); err != nil {
		return nil, err
	}
	return rows, nil
}

// ReadRunEntry is a run's run entry alone (nil when the log lost it), without
// following its sub-runs.
func ReadRunEntry(r Reader, id string) (*Run, error) {
	ex, _, err := read(r, id)
	return ex, err
}

// ReadRun is a run's run entry (nil when the log lost it) and its nodes in
// the order they opened, without following its sub-runs.
func ReadRun(r Reader, id string) (*Run, []*Node, error) { return read(r, id) }

// read decodes a run's entries. An entry that does not decode is skipped:
// the log is read to diagnose, and one bad entry must not hide the rest.
// Invalid UTF-8 (a plugin's error text, passed through by the writer's
// encoder) becomes one replacement rune per run of bad bytes before
// decoding: encoding/json would write one a byte, in each of the
// decoding passes (found by FuzzReadEntries: 88 bytes of memory for
// every byte of entry).
func read(r Reader, id string) (*Run, []*Node, error) {
	raw, err := r.Entries(id)
	if err != nil {
		return nil, nil, err
	}
	var ex *Run
	var nodes []*Node
	for _, b := range raw {
		if !utf8.Valid(b) {
			b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
		}
		var probe struct {
			Seq *int `json:"seq"`
		}
		if json.Unmarshal(b, &probe) != nil {
			continue
		}
		if probe.Seq == nil {
			var e Run
			if json.Unmarshal(b, &e) == nil {
				ex = &e
			}
			continue
		}
		var n Node
		if json.Unmarshal(b, &n) == nil {
			n.Run = id
			nodes = append(nodes, &n)
		}
	}
	slices.SortFunc(nodes, func(a, b *Node) int { return cmp.Compare(a.Seq, b.Seq) })
	return ex, nodes, nil
}

// Filter selects runs for List. The zero value selects the newest
// DefaultLimit runs.
type Filter struct {
	Rule    string    // only this rule's runs
	Outcome string    // only runs that ended so (or Running)
	Since   time.Time // only runs started at or after it
	Limit   int       // at most this many. default: DefaultLimit
}

// DefaultLimit is how many runs List returns unless told.
const DefaultLimit = 50

// List returns the runs f selects, newest first.
func List(r Reader, f Filter) ([]Run, error) {
	if f.Limit <= 0 {
		f.Limit = DefaultLimit
	}
	index, err := r.Index()
	if err != nil {
		return nil, err
	}
	slices.SortFunc(index, func(a, b Meta) int {
		return cmp.Or(cmp.Compare(b.At, a.At), cmp.Compare(b.ID, a.ID))
	})
	var out []Run
	for _, m := range index {
		if len(out) == f.Limit {
			break
		}
		if f.Rule != "" && m.Rule != f.Rule || f.Outcome != "" && m.Outcome != f.Outcome ||
			!f.Since.IsZero() && m.At < f.Since.UnixMilli() {
			continue
		}
		ex, err := ReadRunEntry(r, m.ID)
		if err != nil {
			return nil, err
		}
		if ex == nil {
			ex = &Run{ID: m.ID, Rule: m.Rule, Outcome: m.Outcome, At: m.At, Started: time.UnixMilli(m.At)}
		}
		out = append(out, *ex)
	}
	return out, nil
}

// wentOn reports whether a run did something after an open node: any
// node but a replay, which a restart writes while the run still waits in
// the node it waited in before (its delay or wait is reopened, not new).
func wentOn(after []*Node) bool {
	for _, n := range after {
		if n.Kind != KindReplay {
			return true
		}
	}
	return false
}
