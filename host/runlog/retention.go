package runlog

import (
	"cmp"
	"slices"
)

// Meta is what a store indexes per run, for listing and retention: enough
// to choose without reading any entry.
type Meta struct {
	ID      string `json:"id"`
	Rule    string `json:"rule"`
	Outcome string `json:"outcome"`
	At      int64  `json:"at"`    // the run's start, unix milliseconds
	Bytes   int64  `json:"bytes"` // the size of its entries as stored
}

// Retention bounds the log. The log is for diagnosis, not an archive (as
// its origin has it), and on a device it shares a small flash with
// everything else.
type Retention struct {
	// Runs is how many runs are kept. default: DefaultRuns.
	Runs int
	// Keep is how many of the newest runs of each rule with each outcome
	// survive Runs, so that a busy rule's thousands of successes cannot
	// evict the one failure someone needs (Home Assistant keeps 5 traces
	// per automation; we keep them per outcome). default: DefaultKeep.
	Keep int
	// Bytes caps the entries' total size. It is hard: past it even the
	// runs Keep protects go, oldest first. default: DefaultBytes.
	Bytes int64
	// Every is how many runs open between two enforcements. default:
	// DefaultEvery.
	Every int
}

// Retention defaults: the seed's 5000 runs enforced every 100th open.
const (
	DefaultRuns  = 5000
	DefaultKeep  = 5
	DefaultBytes = 64 << 20
	DefaultEvery = 100
)

// share is each rule's share of Runs among rules: within it, a rule's
// runs are not taken for the count (Bytes still takes them).
func (p Retention) share(rules int) int { return max(p.Runs/max(rules, 1), p.Keep) }

func (p Retention) withDefaults() Retention {
	if p.Runs <= 0 {
		p.Runs = DefaultRuns
	}
	if p.Keep <= 0 {
		p.Keep = DefaultKeep
	}
	if p.Bytes <= 0 {
		p.Bytes = DefaultBytes
	}
	if p.Every <= 0 {
		p.Every = DefaultEvery
	}
	return p
}

// Victims chooses the runs to delete from index: the oldest first, past
// Runs, except each rule's newest Keep runs per outcome, the runs still
// running, and the runs of a rule within its share of Runs (Runs over the
// number of rules in the index, at least Keep); then, while the total is
// over Bytes, the oldest of whatever is left, protected or not (running
// runs last). The share is what keeps one rule's flood — a loop of rules
// ran 850,640 runs in 20 s — from evicting every other rule's history:
// before it, 5 of a healthy rule's 100 runs were kept.
func (p Retention) Victims(index []Meta) []string {
	p = p.withDefaults()
	runs := slices.Clone(index)
	slices.SortFunc(runs, func(a, b Meta) int {
		return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.ID, b.ID))
	})
	protected := make([]bool, len(runs))
	seen := map[[2]string]int{}
	var total int64
	for i := len(runs) - 1; i >= 0; i-- {
		m := runs[i]
		total += m.Bytes
		k := [2]string{m.Rule, m.Outcome}
		if seen[k] < p.Keep || m.Outcome == Running {
			protected[i] = true
		}
		seen[k]++
	}
	perRule := map[string]int{}
	for _, m := range runs {
		perRule[m.Rule]++
	}
	share := p.share(len(perRule))
	count := len(runs)
	gone := make([]bool, len(runs))
	var out []string
	take := func(i int) {
		gone[i] = true
		out = append(out, runs[i].ID)
		count--
		total -= runs[i].Bytes
		perRule[runs[i].Rule]--
	}
	for i := range runs {
		if !protected[i] && (total > p.Bytes || count > p.Runs && perRule[runs[i].Rule] > share) {
			take(i)
		}
	}
	for _, lastRunning := range []bool{false, true} {
		for i := range runs {
			if total <= p.Bytes {
				return out
			}
			if !gone[i] && (runs[i].Outcome == Running) == lastRunning {
				take(i)
			}
		}
	}
	return out
}
