package runlog

import (
	"fmt"
	"testing"
)

func TestVictims(t *testing.T) {
	// runs are given oldest first: id, rule, outcome, bytes.
	type run struct {
		id, rule, outcome string
		bytes             int64
	}
	tests := []struct {
		name   string
		policy Retention
		runs   []run
		want   string
	}{
		{"under every bound", Retention{Runs: 5, Keep: 1, Bytes: 1000},
			[]run{{"a", "x", OK, 10}, {"b", "x", OK, 10}}, "[]"},
		{"by count, oldest first", Retention{Runs: 2, Keep: 1, Bytes: 1000},
			[]run{{"a", "x", OK, 10}, {"b", "x", OK, 10}, {"c", "x", OK, 10}, {"d", "x", OK, 10}}, "[a b]"},
		{"by outcome: a busy rule keeps its one failure", Retention{Runs: 2, Keep: 1, Bytes: 1000},
			[]run{{"f", "x", Failed, 10}, {"a", "x", OK, 10}, {"b", "x", OK, 10}, {"c", "x", OK, 10}}, "[a b]"},
		{"by outcome, per rule", Retention{Runs: 1, Keep: 1, Bytes: 1000},
			[]run{{"a", "x", OK, 10}, {"b", "y", OK, 10}, {"c", "x", OK, 10}}, "[a]"},
		{"running runs are kept", Retention{Runs: 1, Keep: 1, Bytes: 1000},
			[]run{{"w", "x", Running, 10}, {"v", "x", Running, 10}, {"a", "x", OK, 10}}, "[]"},
		{"by bytes, unprotected first", Retention{Runs: 100, Keep: 1, Bytes: 25},
			[]run{{"f", "x", Failed, 10}, {"a", "x", OK, 10}, {"b", "x", OK, 10}, {"c", "x", OK, 10}}, "[a b]"},
		{"bytes is hard: protected runs go too, running last", Retention{Runs: 100, Keep: 5, Bytes: 15},
			[]run{{"w", "x", Running, 10}, {"f", "x", Failed, 10}, {"a", "x", OK, 10}}, "[f a]"},
		{"a rule within its share keeps its old runs; the flooding rule gives way", Retention{Runs: 4, Keep: 1, Bytes: 1000},
			[]run{{"h1", "healthy", OK, 10}, {"h2", "healthy", OK, 10}, {"l1", "loop", OK, 10}, {"l2", "loop", OK, 10},
				{"l3", "loop", OK, 10}, {"l4", "loop", OK, 10}}, "[l1 l2]"},
		{"bytes is hard, to the last run", Retention{Runs: 100, Keep: 5, Bytes: 5},
			[]run{{"w", "x", Running, 10}, {"f", "x", Failed, 10}, {"a", "x", OK, 10}}, "[f a w]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var index []Meta
			for i, r := range tc.runs {
				index = append(index, Meta{ID: r.id, Rule: r.rule, Outcome: r.outcome, At: int64(i), Bytes: r.bytes})
			}
			// Index order must not matter.
			for i, j := 0, len(index)-1; i < j; i, j = i+1, j-1 {
				index[i], index[j] = index[j], index[i]
			}
			if got := fmt.Sprint(tc.policy.Victims(index)); got != tc.want {
				t.Errorf("victims %s; want %s", got, tc.want)
			}
		})
	}
}
