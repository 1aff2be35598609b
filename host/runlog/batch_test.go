package runlog

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// key is a record's key and the entry it was given, as the test writes
// them: "run/seq=entry".
func keysOf(recs []Record, src []int) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = fmt.Sprintf("%s/%d=%d", r.Run, r.Seq, src[i])
	}
	return out
}

// fill finds the keys of a batch of execs and nodes as Log.commit does,
// and appends their records to recs and src.
func fill(b *batch, execs []Run, nodes []Node, recs []Record, src []int) ([]Record, []int) {
	b.reset()
	for i := range execs {
		b.exec(execs[i].ID, i)
	}
	for i := range nodes {
		b.node(nodes[i].Run, nodes[i].Seq, i)
	}
	return b.records(recs, src, execs)
}

func TestBatchKeys(t *testing.T) {
	type ent struct {
		run string
		seq int // 0: an exec entry
	}
	for _, tc := range []struct {
		name string
		in   []ent
		want []string // run/seq=index of its latest entry (into execs or nodes)
	}{
		{"empty", nil, []string{}},
		{"a run as the runner writes it",
			[]ent{{"a", 0}, {"a", 1}, {"a", 2}, {"a", 2}, {"a", 3}, {"a", 3}, {"a", 0}},
			[]string{"a/0=1", "a/1=0", "a/2=2", "a/3=4"}},
		{"two runs interleaved, grouped by first seen",
			[]ent{{"a", 0}, {"b", 0}, {"b", 1}, {"a", 1}, {"a", 2}, {"b", 1}, {"a", 2}, {"b", 0}},
			[]string{"a/0=0", "a/1=1", "a/2=4", "b/0=2", "b/1=3"}},
		{"a node closed after later ones opened",
			[]ent{{"a", 3}, {"a", 4}, {"a", 5}, {"a", 3}},
			[]string{"a/3=3", "a/4=1", "a/5=2"}},
		{"a lower node first seen after a higher one",
			[]ent{{"a", 5}, {"a", 2}, {"a", 2}},
			[]string{"a/5=0", "a/2=2"}},
		{"three runs, past the two recent ones",
			[]ent{{"a", 1}, {"b", 1}, {"c", 1}, {"a", 1}, {"b", 2}, {"c", 1}},
			[]string{"a/1=3", "b/1=1", "b/2=4", "c/1=5"}},
		{"nodes before the run's exec",
			[]ent{{"a", 1}, {"a", 0}},
			[]string{"a/0=0", "a/1=0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var execs []Run
			var nodes []Node
			for _, e := range tc.in {
				if e.seq == 0 {
					execs = append(execs, Run{ID: e.run})
				} else {
					nodes = append(nodes, Node{Run: e.run, Seq: e.seq})
				}
			}
			b := newBatch()
			b.reset()
			b.node("stale", 1, 0) // what a reset must forget
			recs, src := fill(b, execs, nodes, nil, nil)
			if got := keysOf(recs, src); !slices.Equal(got, tc.want) {
				t.Errorf("records %v; want %v", got, tc.want)
			}
		})
	}
}

// TestBatchMatchesMap: over random batches — runs interleaved, nodes
// written again in and out of order, buffers reused batch to batch — each
// key gets one record, with its latest entry, a run's records together
// with its exec first, as a map by key finds them.
func TestBatchMatchesMap(t *testing.T) {
	b := newBatch()
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var execs []Run
		var nodes []Node
		runs := 1 + rng.IntN(12)
		for range rng.IntN(200) {
			run := fmt.Sprintf("r%d", rng.IntN(runs))
			if rng.IntN(6) == 0 {
				execs = append(execs, Run{ID: run})
			} else {
				nodes = append(nodes, Node{Run: run, Seq: 1 + rng.IntN(1+rng.IntN(40))})
			}
		}
		want := map[string]int{}
		for i, e := range execs {
			want[e.ID+"/0"] = i
		}
		for i, n := range nodes {
			want[fmt.Sprintf("%s/%d", n.Run, n.Seq)] = i
		}
		recs, src := fill(b, execs, nodes, nil, nil)
		if len(recs) != len(want) {
			t.Fatalf("seed %d: %d records for %d keys", seed, len(recs), len(want))
		}
		done := map[string]bool{} // runs whose records have ended
		for i, r := range recs {
			k := fmt.Sprintf("%s/%d", r.Run, r.Seq)
			if j, ok := want[k]; !ok || j != src[i] {
				t.Fatalf("seed %d: record %s has entry %d; its latest is %d (%v)", seed, k, src[i], j, ok)
			}
			delete(want, k)
			if i > 0 && recs[i-1].Run != r.Run {
				done[recs[i-1].Run] = true
			}
			if done[r.Run] {
				t.Fatalf("seed %d: run %s's records are not together: %v", seed, r.Run, keysOf(recs, src))
			}
			if r.Seq == 0 && i > 0 && recs[i-1].Run == r.Run {
				t.Fatalf("seed %d: run %s's exec is not its first record", seed, r.Run)
			}
		}
	}
}

// BenchmarkBatchKeys is the writer's finding of keys for a batch of 400
// runs as two workers write them (interleaved in pairs): an exec opened
// and ended, a trigger, a condition and three steps opened then closed.
func BenchmarkBatchKeys(b *testing.B) {
	var execs []Run
	var nodes []Node
	ids := make([]string, 400)
	for i := range ids {
		ids[i] = fmt.Sprintf("%032x", i)
	}
	for i := 0; i < len(ids); i += 2 {
		for _, id := range ids[i : i+2] {
			execs = append(execs, Run{ID: id})
			nodes = append(nodes, Node{Run: id, Seq: 1}, Node{Run: id, Seq: 2})
		}
		for s := 3; s <= 5; s++ {
			for range 2 {
				for _, id := range ids[i : i+2] {
					nodes = append(nodes, Node{Run: id, Seq: s})
				}
			}
		}
		for _, id := range ids[i : i+2] {
			execs = append(execs, Run{ID: id})
		}
	}
	k := newBatch()
	var recs []Record
	var src []int
	b.ResetTimer()
	for range b.N {
		recs, src = fill(k, execs, nodes, recs[:0], src[:0])
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/run")
}
