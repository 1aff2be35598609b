package runlog

import (
	"errors"
	"slices"
	"strings"
	"sync"
)

// memStore is a hand-written Store for the writer's logic: staging and
// final store in maps, a switch to fail, a gate to block commits.
type memStore struct {
	mu      sync.Mutex
	staged  map[string][]byte
	final   map[string]map[string][]byte // run → field → entry
	meta    map[string]Meta
	fail    error
	block   chan struct{} // Commit waits on it when set
	commits int
	deleted []string
}

func newMem() *memStore {
	return &memStore{staged: map[string][]byte{}, final: map[string]map[string][]byte{}, meta: map[string]Meta{}}
}

func (m *memStore) Stage(es []Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	for _, e := range es {
		m.staged[e.Key] = e.Value
	}
	return nil
}

func (m *memStore) Commit(keys []string) (int, []Meta, error) {
	if m.block != nil {
		<-m.block
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return 0, nil, m.fail
	}
	for _, k := range keys {
		if _, _, err := ParseKey(k); err != nil {
			return 0, nil, err
		}
	}
	touched := map[string]bool{}
	m.commits++
	n := 0
	for _, k := range keys {
		v, ok := m.staged[k]
		if !ok {
			continue
		}
		run, seq, _ := ParseKey(k)
		if m.final[run] == nil {
			m.final[run] = map[string][]byte{}
		}
		mt := m.meta[run]
		mt.ID = run
		mt.Bytes += int64(len(v) - len(m.final[run][Field(seq)]))
		if seq == 0 {
			var e struct {
				Rule, Outcome string
				At            int64
			}
			if jsonUnmarshal(v, &e) == nil {
				mt.Rule, mt.Outcome, mt.At = e.Rule, e.Outcome, e.At
			}
		}
		m.meta[run] = mt
		m.final[run][Field(seq)] = v
		delete(m.staged, k)
		touched[run] = true
		n++
	}
	var metas []Meta
	for run := range touched {
		metas = append(metas, m.meta[run])
	}
	return n, metas, nil
}

func (m *memStore) Staged() ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k := range m.staged {
		out = append(out, k)
	}
	return out, nil
}

func (m *memStore) Delete(runs []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range runs {
		delete(m.final, r)
		delete(m.meta, r)
		m.deleted = append(m.deleted, r)
	}
	return nil
}

func (m *memStore) Index() ([]Meta, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Meta
	for _, v := range m.meta {
		out = append(out, v)
	}
	return out, nil
}

func (m *memStore) Entries(run string) ([][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var fields []string
	for f := range m.final[run] {
		fields = append(fields, f)
	}
	slices.Sort(fields)
	var out [][]byte
	for _, f := range fields {
		out = append(out, m.final[run][f])
	}
	return out, nil
}

func (m *memStore) LastSeq(run string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	last := 0
	for f := range m.final[run] {
		if rest, ok := strings.CutPrefix(f, "n:"); ok {
			var n int
			for _, c := range rest {
				n = n*10 + int(c-'0')
			}
			last = max(last, n)
		}
	}
	return last, nil
}

// memAppender is memStore taking batches as an Appender: it keeps every
// batch it was handed, and indexes a run entry by the record's fields alone
// (its value is not parsed), as a store that trusts them would.
type memAppender struct {
	*memStore
	batches [][]Record
	retains int // Retain calls
}

func (m *memAppender) Append(recs []Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	for _, r := range recs {
		if !ValidRun(r.Run) {
			return errors.New("not a run")
		}
	}
	batch := make([]Record, len(recs))
	for i, r := range recs {
		r.Value = slices.Clone(r.Value) // the writer reuses its buffer
		batch[i] = r
		if m.final[r.Run] == nil {
			m.final[r.Run] = map[string][]byte{}
		}
		mt := m.meta[r.Run]
		mt.ID = r.Run
		mt.Bytes += int64(len(r.Value) - len(m.final[r.Run][Field(r.Seq)]))
		if r.Seq == 0 {
			mt.Rule, mt.Outcome, mt.At = r.Rule, r.Outcome, r.At
		}
		m.meta[r.Run] = mt
		m.final[r.Run][Field(r.Seq)] = r.Value
	}
	m.batches = append(m.batches, batch)
	m.commits++
	return nil
}

// Retain deletes what Retention.Victims, the rule stated plainly, chooses
// from the whole index: what an Appender's own Index must choose.
func (m *memAppender) Retain(p Retention) error {
	index, err := m.Index()
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.retains++
	m.mu.Unlock()
	return m.Delete(p.Victims(index))
}

func (m *memAppender) retained() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.retains
}

var errDown = errors.New("store down")
