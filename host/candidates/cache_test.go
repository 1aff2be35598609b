package candidates

import (
	"fmt"
	"testing"
)

func ids(c *Cache) string {
	var out []string
	for {
		x, ok := c.Pop()
		if !ok {
			return fmt.Sprint(out)
		}
		out = append(out, fmt.Sprintf("%d/%d/%s", x.Shard, x.Band, x.ID))
	}
}

func TestCache(t *testing.T) {
	tests := []struct {
		name string
		do   func(c *Cache) int // returns the last Replace's discarded
		want string
		disc int
	}{
		{"one shard pops in its order", func(c *Cache) int {
			return c.Replace(0, []Candidate{{0, 3, "a", "1"}, {0, 3, "b", "2"}, {0, 3, "a", "3"}})
		}, "[0/3/1 0/3/2 0/3/3]", 0},
		{"the best band first across shards", func(c *Cache) int {
			c.Replace(1, []Candidate{{1, 5, "k", "x"}, {1, 5, "k", "y"}})
			return c.Replace(2, []Candidate{{2, 0, "k", "z"}})
		}, "[2/0/z 1/5/x 1/5/y]", 0},
		{"a push replaces what was not popped, and says how many", func(c *Cache) int {
			c.Replace(0, []Candidate{{0, 5, "k", "old1"}, {0, 5, "k", "old2"}})
			return c.Replace(0, []Candidate{{0, 5, "k", "new"}})
		}, "[0/5/new]", 2},
		{"an empty push empties the shard", func(c *Cache) int {
			c.Replace(0, []Candidate{{0, 5, "k", "a"}})
			c.Replace(1, []Candidate{{1, 5, "k", "b"}})
			return c.Replace(0, nil)
		}, "[1/5/b]", 1},
		{"a tie in band goes to the lower shard", func(c *Cache) int {
			c.Replace(3, []Candidate{{3, 1, "k", "c"}})
			return c.Replace(1, []Candidate{{1, 1, "k", "a"}})
		}, "[1/1/a 3/1/c]", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			disc := tc.do(c)
			if disc != tc.disc {
				t.Errorf("discarded %d; want %d", disc, tc.disc)
			}
			if got := ids(c); got != tc.want {
				t.Errorf("popped %s; want %s", got, tc.want)
			}
			if c.Len() != 0 {
				t.Errorf("%d left", c.Len())
			}
		})
	}
}

func TestReadySignals(t *testing.T) {
	c := New()
	select {
	case <-c.Ready():
		t.Fatal("ready with nothing pushed")
	default:
	}
	c.Replace(0, []Candidate{{0, 0, "k", "a"}, {0, 0, "k", "b"}})
	<-c.Ready()
	c.Pop()
	select {
	case <-c.Ready(): // one is still there
	default:
		t.Fatal("not ready with a candidate left")
	}
}
