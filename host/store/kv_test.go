package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/internal/redistest"
)

// kvWant is what Get should find for a scope's key afterwards.
type kvWant struct {
	scope, key string
	value      string // ignored when !found
	found      bool
}

func TestKV(t *testing.T) {
	tooLarge := store.ErrQuota
	big := strings.Repeat("x", 90)
	tests := []struct {
		name  string
		quota store.Quota
		run   func(kv KV) error
		err   error // what run's last step must fail with, if anything
		want  []kvWant
	}{
		{name: "missing", run: func(kv KV) error { return nil },
			want: []kvWant{{"p", "k", "", false}}},
		{name: "set", run: func(kv KV) error { return kv.Set(ctx, "p", "k", []byte("v")) },
			want: []kvWant{{"p", "k", "v", true}}},
		{name: "overwrite", run: func(kv KV) error {
			return first(kv.Set(ctx, "p", "k", []byte("v1")), kv.Set(ctx, "p", "k", []byte("v2")))
		}, want: []kvWant{{"p", "k", "v2", true}}},
		{name: "empty value is found", run: func(kv KV) error { return kv.Set(ctx, "p", "k", nil) },
			want: []kvWant{{"p", "k", "", true}}},
		{name: "binary", run: func(kv KV) error { return kv.Set(ctx, "p", "\x00k\xff", []byte{0, 0xff}) },
			want: []kvWant{{"p", "\x00k\xff", "\x00\xff", true}}},
		{name: "delete", run: func(kv KV) error {
			return first(kv.Set(ctx, "p", "k", []byte("v")), kv.Set(ctx, "p", "j", []byte("w")), kv.Delete(ctx, "p", "k"))
		}, want: []kvWant{{"p", "k", "", false}, {"p", "j", "w", true}}},
		{name: "delete missing", run: func(kv KV) error {
			return first(kv.Delete(ctx, "p", "k"), kv.Set(ctx, "p", "j", []byte("w")), kv.Delete(ctx, "p", "k"))
		}, want: []kvWant{{"p", "j", "w", true}}},
		{name: "delete last, set again", run: func(kv KV) error {
			return first(kv.Set(ctx, "p", "k", []byte("v")), kv.Delete(ctx, "p", "k"), kv.Set(ctx, "p", "j", []byte("w")))
		}, want: []kvWant{{"p", "k", "", false}, {"p", "j", "w", true}}},
		{name: "scopes isolated", run: func(kv KV) error {
			return first(kv.Set(ctx, "a", "k", []byte("A")), kv.Set(ctx, "b", "k", []byte("B")),
				kv.Set(ctx, "b", "only-b", []byte("B")), kv.Delete(ctx, "a", "only-b"))
		}, want: []kvWant{{"a", "k", "A", true}, {"b", "k", "B", true}, {"a", "only-b", "", false}, {"b", "only-b", "B", true}}},
		{name: "scope is not a key prefix", run: func(kv KV) error {
			return kv.Set(ctx, "a:b", "c", []byte("v"))
		}, want: []kvWant{{"a", "b:c", "", false}, {"a:b", "c", "v", true}}},
		{name: "empty key refused", run: func(kv KV) error { return kv.Set(ctx, "p", "", []byte("v")) },
			err: errAny, want: []kvWant{{"p", "", "", false}}},

		{name: "quota: keys", quota: store.Quota{Keys: 2}, run: func(kv KV) error {
			return first(kv.Set(ctx, "p", "a", nil), kv.Set(ctx, "p", "b", nil), kv.Set(ctx, "p", "c", nil))
		}, err: tooLarge, want: []kvWant{{"p", "a", "", true}, {"p", "c", "", false}}},
		{name: "quota: keys, overwrite at the limit", quota: store.Quota{Keys: 2}, run: func(kv KV) error {
			return first(kv.Set(ctx, "p", "a", nil), kv.Set(ctx, "p", "b", nil), kv.Set(ctx, "p", "a", []byte("v")))
		}, want: []kvWant{{"p", "a", "v", true}}},
		{name: "quota: keys, freed by delete", quota: store.Quota{Keys: 2}, run: func(kv KV) error {
			return first(kv.Set(ctx, "p", "a", nil), kv.Set(ctx, "p", "b", nil),
				kv.Delete(ctx, "p", "a"), kv.Set(ctx, "p", "c", nil))
		}, want: []kvWant{{"p", "c", "", true}, {"p", "a", "", false}}},
		{name: "quota: keys, per scope", quota: store.Quota{Keys: 1}, run: func(kv KV) error {
			return first(kv.Set(ctx, "p", "a", nil), kv.Set(ctx, "q", "a", nil))
		}, want: []kvWant{{"p", "a", "", true}, {"q", "a", "", true}}},
		{name: "quota: bytes count key and value", quota: store.Quota{Bytes: 100}, run: func(kv KV) error {
			// 1+90, then 2+9 = 102 > 100
			return first(kv.Set(ctx, "p", "a", []byte(big)), kv.Set(ctx, "p", "bb", []byte("123456789")))
		}, err: tooLarge, want: []kvWant{{"p", "a", big, true}, {"p", "bb", "", false}}},
		{name: "quota: bytes, exactly full", quota: store.Quota{Bytes: 100}, run: func(kv KV) error {
			return first(kv.Set(ctx, "p", "a", []byte(big)), kv.Set(ctx, "p", "bb", []byte("1234567")))
		}, want: []kvWant{{"p", "bb", "1234567", true}}},
		{name: "quota: bytes, overwrite counts the new value only", quota: store.Quota{Bytes: 100}, run: func(kv KV) error {
			return first(kv.Set(ctx, "p", "a", []byte(big)), kv.Set(ctx, "p", "a", []byte(strings.Repeat("y", 99))))
		}, want: []kvWant{{"p", "a", strings.Repeat("y", 99), true}}},
		{name: "quota: bytes, overwrite too big", quota: store.Quota{Bytes: 100}, run: func(kv KV) error {
			return first(kv.Set(ctx, "p", "a", []byte(big)), kv.Set(ctx, "p", "a", []byte(strings.Repeat("y", 100))))
		}, err: tooLarge, want: []kvWant{{"p", "a", big, true}}},
		{name: "quota: bytes, freed by delete", quota: store.Quota{Bytes: 100}, run: func(kv KV) error {
			return first(kv.Set(ctx, "p", "a", []byte(big)), kv.Delete(ctx, "p", "a"), kv.Set(ctx, "p", "b", []byte(big)))
		}, want: []kvWant{{"p", "b", big, true}}},
		{name: "quota: one value over", quota: store.Quota{Bytes: 10}, run: func(kv KV) error {
			return kv.Set(ctx, "p", "a", []byte(big))
		}, err: tooLarge, want: []kvWant{{"p", "a", "", false}}},
		{name: "quota: unlimited", quota: store.Quota{Keys: -1, Bytes: -1}, run: func(kv KV) error {
			noSync(kv)
			for i := range 1500 {
				if err := kv.Set(ctx, "p", fmt.Sprint(i), []byte("v")); err != nil {
					return err
				}
			}
			return nil
		}, want: []kvWant{{"p", "1499", "v", true}}},
		{name: "quota: default keys", run: func(kv KV) error {
			noSync(kv)
			for i := range store.DefaultKVKeys + 1 {
				if err := kv.Set(ctx, "p", fmt.Sprint(i), nil); err != nil {
					return err
				}
			}
			return nil
		}, err: tooLarge, want: []kvWant{{"p", "999", "", true}, {"p", "1000", "", false}}},
		{name: "quota: default bytes", run: func(kv KV) error {
			return first(kv.Set(ctx, "p", "a", make([]byte, store.DefaultKVBytes-1)), kv.Set(ctx, "p", "b", nil))
		}, err: tooLarge, want: []kvWant{{"p", "b", "", false}}},
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					_, kv := be.open(t, tc.quota)
					err := tc.run(kv)
					switch {
					case tc.err == nil && err != nil:
						t.Fatalf("got %v; want no error", err)
					case tc.err == errAny && err == nil, tc.err != nil && tc.err != errAny && !errors.Is(err, tc.err):
						t.Fatalf("got error %v; want %v", err, tc.err)
					case err != nil && !strings.HasPrefix(err.Error(), "store: "):
						t.Errorf("error %q lacks the package prefix", err)
					}
					for _, w := range tc.want {
						v, found, err := kv.Get(ctx, w.scope, w.key)
						if err != nil {
							t.Fatal(err)
						}
						if found != w.found || found && string(v) != w.value {
							t.Errorf("Get(%q, %q) = %.20q, %v; want %.20q, %v", w.scope, w.key, v, found, w.value, w.found)
						}
						if found && v == nil {
							t.Errorf("Get(%q, %q) found a nil slice", w.scope, w.key)
						}
					}
				})
			}
		})
	}
}

var errAny = errors.New("any error")

// noSync makes a test that writes a thousand keys take milliseconds rather
// than seconds on bbolt; what it tests is not the fsync.
func noSync(kv KV) {
	if b, ok := kv.(*store.Bolt); ok {
		store.SetNoSync(b, true)
	}
}

// TestKVLayout: a scope is the hash ruled:kv:<scope> in both backends, and
// a scope emptied is gone.
func TestKVLayout(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			h, kv := be.open(t, store.Quota{})
			if err := first(kv.Set(ctx, "p", "a", []byte("12")), kv.Set(ctx, "p", "bb", []byte("345"))); err != nil {
				t.Fatal(err)
			}
			got, err := h.HGetAll(store.KVPrefix + "p")
			if err != nil {
				t.Fatal(err)
			}
			if got["a"] != "12" || got["bb"] != "345" {
				t.Errorf("HGetAll(ruled:kv:p) = %q", got)
			}
			if n, ok := got[""]; ok && n != "8" { // Redis's byte count
				t.Errorf("byte count = %s; want 8", n)
			}
			if err := first(kv.Delete(ctx, "p", "a"), kv.Delete(ctx, "p", "bb")); err != nil {
				t.Fatal(err)
			}
			if got, _ := h.HGetAll(store.KVPrefix + "p"); len(got) != 0 {
				t.Errorf("after deleting every key: %q; want the scope gone", got)
			}
		})
	}
}

// TestKVQuotaLowered: a store reopened with a smaller quota still lets a
// plugin shrink or delete what it holds, and refuses only growth.
func TestKVQuotaLowered(t *testing.T) {
	path := t.TempDir() + "/ruled.db"
	b := openBolt(t, path, store.BoltOptions{})
	fill(t, b)
	_ = b.Close()
	assertLowered(t, openBolt(t, path, store.BoltOptions{KVQuota: store.Quota{Keys: 2, Bytes: 20}}))

	srv := redistest.Start(t)
	fill(t, openRedis(t, srv.URL(), store.RedisOptions{}))
	assertLowered(t, openRedis(t, srv.URL(), store.RedisOptions{KVQuota: store.Quota{Keys: 2, Bytes: 20}}))
}

// fill puts 3 keys and 30 bytes in scope p.
func fill(t *testing.T, kv KV) {
	for _, k := range []string{"a", "b", "c"} {
		if err := kv.Set(ctx, "p", k, []byte(strings.Repeat(k, 9))); err != nil {
			t.Fatal(err)
		}
	}
}

func assertLowered(t *testing.T, kv KV) {
	t.Helper()
	if err := kv.Set(ctx, "p", "a", []byte("short")); err != nil {
		t.Errorf("shrinking a value over quota: %v", err)
	}
	if err := kv.Set(ctx, "p", "b", []byte(strings.Repeat("b", 10))); !errors.Is(err, store.ErrQuota) {
		t.Errorf("growing a value over quota: got %v; want ErrTooLarge", err)
	}
	if err := kv.Set(ctx, "p", "d", nil); !errors.Is(err, store.ErrQuota) {
		t.Errorf("a new key over quota: got %v; want ErrTooLarge", err)
	}
	if err := kv.Delete(ctx, "p", "c"); err != nil {
		t.Errorf("deleting over quota: %v", err)
	}
}

// TestKVConcurrent: writers racing for the last of a quota; exactly the
// quota's worth win, and the usage the store keeps agrees with what it holds.
func TestKVConcurrent(t *testing.T) {
	const writers, each = 8, 25
	tests := []struct {
		name  string
		quota store.Quota
		value []byte // with 4-byte keys
		want  int    // keys that fit
	}{
		{"keys", store.Quota{Keys: 50, Bytes: -1}, []byte("v"), 50},
		{"bytes", store.Quota{Keys: -1, Bytes: 37 * 14}, make([]byte, 10), 37},
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					h, kv := be.open(t, tc.quota)
					var ok, refused atomic.Int32
					var wg sync.WaitGroup
					for w := range writers {
						wg.Go(func() {
							for i := range each {
								err := kv.Set(ctx, "p", fmt.Sprintf("%d:%02d", w, i), tc.value)
								switch {
								case err == nil:
									ok.Add(1)
								case errors.Is(err, store.ErrQuota):
									refused.Add(1)
								default:
									t.Error(err)
								}
								if i%5 == 4 { // an overwrite never counts twice
									if err := kv.Set(ctx, "p", fmt.Sprintf("%d:%02d", w, i-1), tc.value); err != nil &&
										!errors.Is(err, store.ErrQuota) {
										t.Error(err)
									}
								}
							}
						})
					}
					wg.Wait()
					if int(ok.Load()) != tc.want || int(refused.Load()) != writers*each-tc.want {
						t.Errorf("%d written, %d refused; want %d, %d", ok.Load(), refused.Load(), tc.want, writers*each-tc.want)
					}
					found := 0
					for w := range writers {
						for i := range each {
							v, f, err := kv.Get(ctx, "p", fmt.Sprintf("%d:%02d", w, i))
							if err != nil {
								t.Fatal(err)
							}
							if f {
								found++
								if !bytes.Equal(v, tc.value) {
									t.Errorf("value %q", v)
								}
							}
						}
					}
					if found != tc.want {
						t.Errorf("%d keys stored; want %d", found, tc.want)
					}
					all, err := h.HGetAll(store.KVPrefix + "p")
					if err != nil {
						t.Fatal(err)
					}
					sum := 0
					for k, v := range all {
						if k != "" {
							sum += len(k) + len(v)
						}
					}
					if n, ok := all[""]; ok && n != fmt.Sprint(sum) { // Redis's byte count
						t.Errorf("byte count %s; the scope holds %d", n, sum)
					}
				})
			}
		})
	}
}
