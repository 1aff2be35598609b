package store_test

import (
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/ruled-dev/ruled/host/store"
)

const pending = "ruled:pending"

// multi is what both stores write many fields with (the journal, the
// MQTT outbox).
type multi interface {
	HSetMany(key string, fields []string, values [][]byte) error
	HSetDel(key string, fields []string, values [][]byte, del []string) error
}

func multiOf(h Hasher) multi {
	if c, ok := h.(clientHasher); ok {
		return c.Commander.(multi)
	}
	return h.(multi)
}

func TestHasher(t *testing.T) {
	binary := string([]byte{0, 1, 0xfe, 0xff, '\n', 0})
	tests := []struct {
		name string
		run  func(h Hasher) error
		want map[string]string // pending's fields afterwards
	}{
		{"missing hash", func(h Hasher) error { return nil }, map[string]string{}},
		{"set string and bytes", func(h Hasher) error {
			return first(h.HSet(pending, "a", "1"), h.HSet(pending, "b", []byte("2")))
		}, map[string]string{"a": "1", "b": "2"}},
		{"overwrite", func(h Hasher) error {
			return first(h.HSet(pending, "a", "1"), h.HSet(pending, "a", "22"))
		}, map[string]string{"a": "22"}},
		{"binary value kept as given", func(h Hasher) error {
			return h.HSet(pending, "a", []byte(binary))
		}, map[string]string{"a": binary}},
		{"empty value", func(h Hasher) error {
			return h.HSet(pending, "a", "")
		}, map[string]string{"a": ""}},
		{"hdel", func(h Hasher) error {
			return first(h.HSet(pending, "a", "1"), h.HSet(pending, "b", "2"), h.HDel(pending, "a"))
		}, map[string]string{"b": "2"}},
		{"hdel missing field", func(h Hasher) error {
			return first(h.HSet(pending, "a", "1"), h.HDel(pending, "nope"))
		}, map[string]string{"a": "1"}},
		{"hdel missing hash", func(h Hasher) error {
			return h.HDel(pending, "nope")
		}, map[string]string{}},
		{"hdel twice", func(h Hasher) error {
			return first(h.HSet(pending, "a", "1"), h.HDel(pending, "a"), h.HDel(pending, "a"))
		}, map[string]string{}},
		{"hdel several, some missing", func(h Hasher) error {
			return first(h.HSet(pending, "a", "1"), h.HSet(pending, "b", "2"), h.HSet(pending, "c", "3"),
				h.HDel(pending, "a", "nope", "c"))
		}, map[string]string{"b": "2"}},
		{"set after emptied", func(h Hasher) error {
			return first(h.HSet(pending, "a", "1"), h.HDel(pending, "a"), h.HSet(pending, "b", "2"))
		}, map[string]string{"b": "2"}},
		{"hsetmany", func(h Hasher) error {
			return first(h.HSet(pending, "a", "1"), multiOf(h).HSetMany(pending, []string{"a", "b"}, [][]byte{[]byte("11"), []byte("2")}))
		}, map[string]string{"a": "11", "b": "2"}},
		{"hsetdel sets and removes in one", func(h Hasher) error {
			return first(h.HSet(pending, "a", "1"), h.HSet(pending, "b", "2"),
				multiOf(h).HSetDel(pending, []string{"c"}, [][]byte{[]byte("3")}, []string{"a", "nope"}))
		}, map[string]string{"b": "2", "c": "3"}},
		{"hsetdel removes the last", func(h Hasher) error {
			return first(h.HSet(pending, "a", "1"), multiOf(h).HSetDel(pending, nil, nil, []string{"a"}), h.HSet(pending, "b", "2"))
		}, map[string]string{"b": "2"}},
		{"hsetdel of nothing", func(h Hasher) error {
			return first(h.HSet(pending, "a", "1"), multiOf(h).HSetDel(pending, nil, nil, nil))
		}, map[string]string{"a": "1"}},
		{"hashes isolated", func(h Hasher) error {
			return first(h.HSet(pending, "a", "1"), h.HSet("ruled:other", "a", "2"), h.HDel("ruled:other", "a"))
		}, map[string]string{"a": "1"}},
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					h, _ := be.open(t, store.Quota{})
					if err := tc.run(h); err != nil {
						t.Fatal(err)
					}
					got, err := h.HGetAll(pending)
					if err != nil {
						t.Fatal(err)
					}
					if !maps.Equal(got, tc.want) {
						t.Errorf("HGetAll = %q; want %q", got, tc.want)
					}
				})
			}
		})
	}
}

// TestHasherConcurrent: writers and deleters on one hash, as the pool's
// workers are; every write lands and nothing errs.
func TestHasherConcurrent(t *testing.T) {
	const writers, each = 8, 20
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			h, _ := be.open(t, store.Quota{})
			var wg sync.WaitGroup
			errs := make(chan error, writers*each*3)
			for w := range writers {
				wg.Go(func() {
					for i := range each {
						f := fmt.Sprintf("run-%d-%d", w, i)
						errs <- h.HSet(pending, f, `{"id":"`+f+`"}`)
						errs <- h.HSet(pending, "shared", f) // all writers on one field
						if i%2 == 1 {
							errs <- h.HDel(pending, f, "shared")
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			got, err := h.HGetAll(pending)
			if err != nil {
				t.Fatal(err)
			}
			delete(got, "shared") // last writer's, or deleted
			if len(got) != writers*each/2 {
				t.Errorf("%d fields left; want %d", len(got), writers*each/2)
			}
			for f, v := range got {
				if v != `{"id":"`+f+`"}` {
					t.Errorf("field %s = %q", f, v)
				}
			}
		})
	}
}

// first returns the first non-nil error.
func first(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
