package planner

import (
	"fmt"
	"testing"
)

func TestShare(t *testing.T) {
	tests := []struct {
		name     string
		capacity int
		tallies  []Tally
		start    int
		want     string
	}{
		{"equal shares", 10, []Tally{{"a", 10}, {"b", 10}}, 0, "[{a 5} {b 5}]"},
		{"a short key gives the rest to the others", 10, []Tally{{"a", 1}, {"b", 10}, {"c", 10}}, 0, "[{a 1} {b 5} {c 4}]"},
		{"the leftover goes in turn", 10, []Tally{{"a", 10}, {"b", 10}, {"c", 10}}, 1, "[{b 4} {c 3} {a 3}]"},
		{"fewer slots than keys: one each, in turn", 2, []Tally{{"a", 5}, {"b", 5}, {"c", 5}}, 2, "[{c 1} {a 1}]"},
		{"less work than capacity: all of it", 100, []Tally{{"a", 3}, {"b", 7}}, 0, "[{a 3} {b 7}]"},
		{"keys with nothing are left out", 4, []Tally{{"a", 0}, {"b", 9}}, 0, "[{b 4}]"},
		{"no capacity", 0, []Tally{{"a", 3}}, 0, "[]"},
		{"no keys", 5, nil, 0, "[]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Share(tc.capacity, tc.tallies, tc.start)
			if s := fmt.Sprint(got); s != tc.want && !(tc.want == "[]" && len(got) == 0) {
				t.Errorf("Share(%d, %v, %d) = %s; want %s", tc.capacity, tc.tallies, tc.start, s, tc.want)
			}
			total := 0
			for _, g := range got {
				total += g.N
			}
			if total > tc.capacity {
				t.Errorf("granted %d over a capacity of %d", total, tc.capacity)
			}
		})
	}
}

// TestStrictPriorityAcrossShards: a shard whose band is worse than another
// shard's is planned nothing; once the better band is served and reported
// gone, it is served again.
func TestStrictPriorityAcrossShards(t *testing.T) {
	board := NewBoard()
	p := New(board, func() int { return 8 })
	flood := []Tally{{"bulk", 8}}
	if pl := p.Plan(1, 5, flood); pl.Total() != 8 {
		t.Fatalf("alone, band 5 got %d", pl.Total())
	}
	if pl := p.Plan(0, 0, []Tally{{"urgent", 1}}); pl.Total() != 1 || pl.GlobalBand != 0 {
		t.Fatalf("band 0: %+v", pl)
	}
	if pl := p.Plan(1, 5, flood); pl.Total() != 0 || pl.Band != 5 || pl.GlobalBand != 0 {
		t.Fatalf("band 5 under a band-0 shard was planned %+v; want nothing", pl)
	}
	p.Plan(0, NoBand, nil) // shard 0 has nothing due any more
	if pl := p.Plan(1, 5, flood); pl.Total() != 8 {
		t.Fatalf("band 5 after band 0 drained got %d", pl.Total())
	}
	board.Forget(1)
	if board.Best() != NoBand {
		t.Errorf("best %d after forgetting the only due shard", board.Best())
	}
}

// TestFairOverCycles: two keys saturating one band, at a capacity that does
// not divide evenly, get shares within 10% of equal over many cycles, and a
// key with a single item is served in the first cycle it is due, beside a
// key with a deep backlog.
func TestFairOverCycles(t *testing.T) {
	p := New(NewBoard(), func() int { return 3 })
	got := map[string]int{}
	for range 1000 {
		for _, g := range p.Plan(0, 2, []Tally{{"s-1", 3}, {"s-2", 3}}).Grants {
			got[g.Key] += g.N
		}
	}
	a, b := float64(got["s-1"]), float64(got["s-2"])
	if d := (a - b) / ((a + b) / 2); d > 0.1 || d < -0.1 {
		t.Errorf("shares %v: %.1f%% apart; want within 10%%", got, 100*d)
	}
	pl := p.Plan(0, 2, []Tally{{"deep", 3}, {"one", 1}})
	for _, g := range pl.Grants {
		if g.Key == "one" && g.N == 1 {
			return
		}
	}
	t.Errorf("a key with one item beside a deep backlog was planned %+v", pl.Grants)
}

func ExampleShare() {
	// Ten slots, three vehicles: s-9 has one step due, the others many.
	fmt.Println(Share(10, []Tally{{"s-1", 50}, {"s-2", 50}, {"s-9", 1}}, 0))
	// Output: [{s-1 5} {s-2 4} {s-9 1}]
}
