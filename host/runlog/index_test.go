package runlog

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestIndexMatchesVictims: the incremental index chooses exactly what
// Retention.Victims, the rule stated plainly, chooses from the same runs —
// over random runs added in and out of order, updated (a run ends, grows,
// its start is learned late), removed by a pass (Take) and deleted
// outright (Remove), under policies that bind by count, by outcome and by
// bytes.
func TestIndexMatchesVictims(t *testing.T) {
	policies := []Retention{
		{Runs: 20, Keep: 2, Bytes: 1 << 30},
		{Runs: 50, Keep: 5, Bytes: 3000},
		{Runs: 1000, Keep: 1, Bytes: 500},
		{Runs: 5, Keep: 10, Bytes: 1 << 30},
	}
	rules := []string{"a", "b", "c"}
	outcomes := []string{Running, OK, Failed, Cancelled}
	for seed := range 50 {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		p := policies[seed%len(policies)]
		x := newKeyedIndex(nil)
		all := map[string]Meta{}
		for step := range 400 {
			switch r := rng.IntN(11); {
			case r < 6 || len(all) == 0: // a new run, mostly in order
				at := int64(step)
				if rng.IntN(8) == 0 {
					at -= int64(rng.IntN(50))
				}
				if rng.IntN(40) == 0 { // far back: past the walk from the end
					at -= int64(100 + rng.IntN(300))
				}
				m := Meta{ID: fmt.Sprintf("r%04d", step), Rule: rules[rng.IntN(len(rules))],
					Outcome: Running, At: at, Bytes: int64(10 + rng.IntN(90))}
				all[m.ID] = m
				x.put(m)
			case r < 9: // one ends or grows, or its start moves
				ids := keys(all)
				m := all[ids[rng.IntN(len(ids))]]
				m.Outcome = outcomes[rng.IntN(len(outcomes))]
				m.Bytes += int64(rng.IntN(40))
				if rng.IntN(10) == 0 {
					m.At += int64(rng.IntN(20)) - 10
				}
				all[m.ID] = m
				x.put(m)
			case r < 10: // a retention pass
				var ms []Meta
				for _, m := range all {
					ms = append(ms, m)
				}
				want := p.Victims(ms)
				var got []string
				for _, m := range x.Take(p) {
					got = append(got, m.ID)
					delete(x.byID, m.ID)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d policy %+v: index chose %v; Victims %v", seed, step, p, got, want)
				}
				for _, id := range got {
					delete(all, id)
				}
			default: // a few runs deleted outright
				var doomed []*Meta
				ids := keys(all)
				rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
				for _, id := range ids[:min(len(ids), rng.IntN(4))] {
					doomed = append(doomed, x.byID[id])
					delete(x.byID, id)
					delete(all, id)
				}
				x.Remove(doomed)
			}
			var bytes int64
			for _, m := range all {
				bytes += m.Bytes
			}
			if x.Len() != len(all) || x.Bytes() != bytes {
				t.Fatalf("seed %d step %d: index holds %d runs, %d bytes; want %d, %d", seed, step, x.Len(), x.Bytes(), len(all), bytes)
			}
		}
	}
}

func keys(m map[string]Meta) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func BenchmarkRetentionPass(b *testing.B) {
	ms := make([]Meta, 5100)
	for i := range ms {
		ms[i] = Meta{ID: fmt.Sprintf("r%06d", i), Rule: "bench", Outcome: OK, At: int64(i), Bytes: 700}
	}
	p := Retention{}
	b.Run("Victims", func(b *testing.B) {
		for range b.N {
			p.Victims(ms)
		}
	})
	b.Run("index", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			x := newKeyedIndex(ms)
			b.StartTimer()
			x.Take(p)
		}
	})
}
