package store_test

import (
	"context"
	"maps"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ruled-dev/ruled/host/store"
	"github.com/ruled-dev/ruled/internal/redistest"
)

func TestOpenRedisErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := l.Addr().String() // nothing listens once closed
	l.Close()
	tests := []struct {
		name, url string
		want      string // the error contains it
		permanent bool   // retrying will not help
	}{
		{"scheme", "http://127.0.0.1:6379", "store: redis url: redis: invalid URL scheme: http", true},
		{"bad port, password kept out", "redis://user:s3cret@127.0.0.1:port", "store: redis url: ", true},
		{"nothing listening", "redis://" + deadAddr, "store: redis at " + deadAddr + ": ", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r, err := store.OpenRedis(tc.url, store.RedisOptions{Timeout: 2 * time.Second})
			if err == nil {
				r.Close()
				t.Fatal("OpenRedis succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q; want it to contain %q", err, tc.want)
			}
			if store.Permanent(err) != tc.permanent {
				t.Errorf("Permanent(%v) = %v", err, !tc.permanent)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error %q shows the password", err)
			}
			t.Log(err)
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("OpenRedis took %s to fail", took)
			}
		})
	}
}

func TestOpenRedisWrongPassword(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Config{Args: []string{"--requirepass", "right"}})
	_, err := store.OpenRedis("redis://:wrong@"+srv.Addr(), store.RedisOptions{})
	if err == nil || !strings.Contains(err.Error(), "store: redis at "+srv.Addr()) || strings.Contains(err.Error(), "wrong") {
		t.Errorf("got %v; want an error naming the address and not the password", err)
	}
	if !store.Permanent(err) {
		t.Errorf("Permanent(%v) = false; a wrong password is not cured by waiting", err)
	}
	r := openRedis(t, "redis://:right@"+srv.Addr()+"/3", store.RedisOptions{})
	if v, err := r.Do("PING"); err != nil || v != "PONG" {
		t.Errorf("PING = %v, %v", v, err)
	}
}

func TestCommanderDo(t *testing.T) {
	r := openRedis(t, redistest.Start(t).URL(), store.RedisOptions{})
	for _, f := range []string{"a", "b", "c", "d"} {
		if err := r.HSet(pending, f, []byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		cmd  string
		args []any
		want any
		err  string
	}{
		{"fields spread", "HDEL", []any{pending, "a", "nope"}, int64(1), ""},
		{"fields as a []string", "HDEL", []any{pending, []string{"b", "c"}}, int64(2), ""},
		{"missing field", "HDEL", []any{pending, "a"}, int64(0), ""},
		{"nil reply", "GET", []any{"ruled:nothing"}, nil, ""},
		{"status reply", "PING", nil, "PONG", ""},
		{"server error", "NOSUCHCOMMAND", nil, nil, "store: redis NOSUCHCOMMAND: ERR unknown command"},
		{"wrong type", "GET", []any{pending}, nil, "WRONGTYPE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.Do(tc.cmd, tc.args...)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, %v; want error %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Do(%s %v) = %#v, %v; want %#v", tc.cmd, tc.args, got, err, tc.want)
			}
		})
	}
	if got, err := r.HGetAll(pending); err != nil || !maps.Equal(got, map[string]string{"d": "d"}) {
		t.Errorf("HGetAll = %q, %v", got, err)
	}
}

// TestRedisRestart: a pending record written to a server with appendfsync
// always survives the server's SIGKILL, and the store reconnects by itself.
func TestRedisRestart(t *testing.T) {
	srv := redistest.StartWith(t, redistest.Config{Persistent: true})
	r := openRedis(t, srv.URL(), store.RedisOptions{})
	h := clientHasher{r}
	if err := first(h.HSet(pending, "run-1", `{"id":"run-1"}`), r.Set(ctx, "p", "k", []byte("v"))); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	if err := h.HSet(pending, "run-2", "x"); err == nil {
		t.Error("HSet succeeded with the server down")
	} else if !strings.HasPrefix(err.Error(), "store: redis hset ") {
		t.Errorf("error %q", err)
	}
	srv.Restart()
	got, err := h.HGetAll(pending)
	if err != nil || !maps.Equal(got, map[string]string{"run-1": `{"id":"run-1"}`}) {
		t.Errorf("HGetAll after restart = %q, %v", got, err)
	}
	if v, found, err := r.Get(ctx, "p", "k"); err != nil || !found || string(v) != "v" {
		t.Errorf("Get after restart = %q, %v, %v", v, found, err)
	}
	// The kv scripts were lost with the server's script cache; Run reloads them.
	if err := first(r.Set(ctx, "p", "j", []byte("w")), r.Delete(ctx, "p", "k")); err != nil {
		t.Error(err)
	}
}

// TestRedisTimeout: a Commander call against a server that does not answer
// gives up after the store's timeout; a KV call, at its context's deadline.
func TestRedisTimeout(t *testing.T) {
	srv := redistest.Start(t)
	r := openRedis(t, srv.URL(), store.RedisOptions{Timeout: 300 * time.Millisecond})
	if err := first(r.HSet(pending, "a", "1"), r.Set(ctx, "p", "k", nil)); err != nil {
		t.Fatal(err) // connections and scripts ready before the pause
	}
	other := openRedis(t, srv.URL(), store.RedisOptions{})
	if _, err := other.Do("CLIENT", "PAUSE", "3000", "ALL"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call func() error
	}{
		{"commander", func() error { return r.HSet(pending, "a", "2") }},
		{"kv with a deadline", func() error {
			ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			_, _, err := r.Get(ctx, "p", "k")
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			err := tc.call()
			took := time.Since(start)
			if err == nil || took > 1500*time.Millisecond {
				t.Errorf("got %v after %s; want a timeout after about 300ms", err, took)
			}
			t.Logf("%v after %s", err, took.Round(time.Millisecond))
		})
	}
}
