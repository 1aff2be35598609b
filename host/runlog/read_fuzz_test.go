package runlog

import (
	"io"
	"runtime"
	"testing"
)

// rawReader serves one run's raw entries, whatever they hold.
type rawReader struct {
	run     string
	entries [][]byte
}

func (r rawReader) Index() ([]Meta, error) {
	return []Meta{{ID: r.run, Rule: "x", Outcome: OK}}, nil
}

func (r rawReader) Entries(run string) ([][]byte, error) {
	if run == r.run {
		return r.entries, nil
	}
	return nil, nil
}

func (r rawReader) LastSeq(string) (int, error) { return 0, nil }

// FuzzReadEntries: entries a store hands back, whatever their bytes (a
// torn write, another version, garbage), read into a tree, a list and a
// rendering without a panic, and within a small multiple of their size in
// memory. Sub-runs pointing back at their parent do not loop.
func FuzzReadEntries(f *testing.F) {
	f.Add([]byte(`{"id":"r","rule":"x","topic":"t","started":"2026-11-30T08:00:00Z","at":1,"outcome":"ok"}`),
		[]byte(`{"seq":1,"kind":"step","started":"2026-11-30T08:00:00Z","outcome":"open","children":["r","y"]}`))
	f.Add([]byte(`{"seq":"1"}`), []byte(`{"seq":999999999999,"kind":"`))
	f.Add([]byte(`[]`), []byte(`{"started":"not a time"}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		r := rawReader{run: "r", entries: [][]byte{a, b}}
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		rows, err := Tree(r, "r")
		if err == nil {
			Render(io.Discard, rows, false)
			Render(io.Discard, rows, true)
		}
		List(r, Filter{})
		runtime.ReadMemStats(&m1)
		if n, limit := m1.TotalAlloc-m0.TotalAlloc, uint64(64*(len(a)+len(b))+64<<10); n > limit {
			t.Errorf("%d bytes allocated for %d bytes of entries (limit %d)", n, len(a)+len(b), limit)
		}
	})
}

// TestReadInvalidUTF8: an entry carrying invalid UTF-8 (a plugin's error
// text, which the writer passes through) is read, its bad bytes replaced.
func TestReadInvalidUTF8(t *testing.T) {
	r := rawReader{run: "r", entries: [][]byte{
		[]byte(`{"id":"r","rule":"x","topic":"t","started":"2026-11-30T08:00:00Z","at":1,"outcome":"failed","error":"bad ` + "\xff\xfe" + ` here"}`),
		[]byte(`{"seq":1,"kind":"step","started":"2026-11-30T08:00:00Z","outcome":"failed","error":"step ` + "\xd5\xd5\xd5" + ` broke"}`),
	}}
	ex, nodes, err := ReadRun(r, "r")
	if err != nil || ex == nil || len(nodes) != 1 {
		t.Fatalf("read %+v %v, %v; want the run and its node", ex, nodes, err)
	}
	if ex.Error != "bad \uFFFD here" || nodes[0].Error != "step \uFFFD broke" {
		t.Errorf("errors %q and %q", ex.Error, nodes[0].Error)
	}
}
