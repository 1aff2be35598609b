package pool

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/ruled-dev/ruled/host/planner"
)

// TestSamePolicyAsThePlanner: the pool orders its queue by the policy the
// fleet's planner plans cycles by (host/planner), with a capacity of one a
// pick: strict priority by band, and within a band max-min fair shares
// over the keys with work queued. The pool keeps its O(1) round robin on
// the device's hot path rather than calling planner.Share for every job;
// this checks that the two agree. For random workloads queued behind a
// held worker: the bands run in order, and after any L jobs of a band
// each key has had what planner.Share gives it of L slots, give or take
// the one slot its rotation hands out.
func TestSamePolicyAsThePlanner(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 7))
		p, release := blocked(t, Config{Capacity: 10000})
		type job struct {
			band int
			key  string
		}
		var mu sync.Mutex
		var ran []job
		var wg sync.WaitGroup
		counts := map[int]map[string]int{}
		for range 20 + rng.IntN(200) {
			j := job{band: []int{0, 3, 5}[rng.IntN(3)], key: fmt.Sprint("k", rng.IntN(8))}
			if counts[j.band] == nil {
				counts[j.band] = map[string]int{}
			}
			counts[j.band][j.key]++
			wg.Add(1)
			p.Submit(Job{Band: j.band, Key: j.key, Run: func() {
				mu.Lock()
				ran = append(ran, j)
				mu.Unlock()
				wg.Done()
			}})
		}
		release()
		wg.Wait()
		if !slices.IsSortedFunc(ran, func(a, b job) int { return a.band - b.band }) {
			t.Fatalf("seed %d: bands out of order: %v", seed, ran)
		}
		for band, want := range counts {
			var tallies []planner.Tally
			for k, n := range want {
				tallies = append(tallies, planner.Tally{Key: k, Count: n})
			}
			served := map[string]int{}
			l := 0
			for _, j := range ran {
				if j.band != band {
					continue
				}
				served[j.key]++
				l++
				fair := map[string]int{}
				for _, g := range planner.Share(l, tallies, 0) {
					fair[g.Key] = g.N
				}
				for k := range want {
					if d := served[k] - fair[k]; d > 1 || d < -1 {
						t.Fatalf("seed %d band %d: after %d jobs key %s had %d; max-min fair is %d (served %v, fair %v)",
							seed, band, l, k, served[k], fair[k], served, fair)
					}
				}
			}
		}
	}
}
