package testkit

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// ErrDown is what a Hasher answers while it is down.
var ErrDown = errors.New("store down")

// Hasher is a hash-of-hashes in memory.
type Hasher struct {
	mu   sync.Mutex
	m    map[string]map[string]string
	down bool
	lose bool // the next HSet applies and then fails
	sets int  // HSets that applied
	dels int  // HDel calls that applied
	// gate, while not nil, holds every write (HoldWrites); entered hears
	// of each write it holds.
	gate, entered chan struct{}
}

// SetDown makes every call fail with ErrDown (true) or answer again.
func (h *Hasher) SetDown(down bool) { h.mu.Lock(); h.down = down; h.mu.Unlock() }

// Hold makes every call wait until release is called: a store busy with
// a commit.
func (h *Hasher) Hold() (release func()) {
	h.mu.Lock()
	return h.mu.Unlock
}

// HoldWrites makes every HSet and HDel wait until release is called,
// and tells entered (buffered: it keeps up to 16 untold) of each that
// waits: a test knows a write has begun without polling for it.
func (h *Hasher) HoldWrites() (entered <-chan struct{}, release func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gate, h.entered = make(chan struct{}), make(chan struct{}, 16)
	gate := h.gate
	return h.entered, sync.OnceFunc(func() {
		h.mu.Lock()
		if h.gate == gate {
			h.gate = nil
		}
		h.mu.Unlock()
		close(gate)
	})
}

// held waits while writes are held (HoldWrites).
func (h *Hasher) held() {
	h.mu.Lock()
	gate, entered := h.gate, h.entered
	h.mu.Unlock()
	if gate == nil {
		return
	}
	select {
	case entered <- struct{}{}:
	default:
	}
	<-gate
}

// LoseNextAnswer makes the next HSet apply and then fail: the store took
// the write and went away before it answered.
func (h *Hasher) LoseNextAnswer() { h.mu.Lock(); h.lose = true; h.mu.Unlock() }

// HSet sets field of key to value ([]byte or string).
func (h *Hasher) HSet(key, field string, value any) error {
	h.held()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down {
		return ErrDown
	}
	var v string
	switch x := value.(type) {
	case []byte:
		v = string(x)
	case string:
		v = x
	default:
		return fmt.Errorf("testkit: HSet of a %T", value)
	}
	if h.m == nil {
		h.m = map[string]map[string]string{}
	}
	if h.m[key] == nil {
		h.m[key] = map[string]string{}
	}
	h.m[key][field] = v
	h.sets++
	if h.lose {
		h.lose = false
		return errors.New("connection reset after the write")
	}
	return nil
}

// HGetAll returns a copy of key's fields.
func (h *Hasher) HGetAll(key string) (map[string]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down {
		return nil, ErrDown
	}
	out := map[string]string{}
	for k, v := range h.m[key] {
		out[k] = v
	}
	return out, nil
}

// HDel deletes fields of key.
func (h *Hasher) HDel(key string, fields ...string) error {
	h.held()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down {
		return ErrDown
	}
	for _, f := range fields {
		delete(h.m[key], f)
	}
	h.dels++
	return nil
}

// HSetDel sets fields to values and deletes del, in one write: the
// stores' batch (store.Bolt.HSetDel, store.Redis.HSetDel).
func (h *Hasher) HSetDel(key string, fields []string, values [][]byte, del []string) error {
	h.held()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down {
		return ErrDown
	}
	if h.m == nil {
		h.m = map[string]map[string]string{}
	}
	if h.m[key] == nil {
		h.m[key] = map[string]string{}
	}
	for i, f := range fields {
		h.m[key][f] = string(values[i])
	}
	for _, f := range del {
		delete(h.m[key], f)
	}
	// One write, as HSet and HDel count theirs (Sets, Dels): a batch is
	// one call to the store.
	if len(fields) > 0 {
		h.sets++
	}
	if len(del) > 0 {
		h.dels++
	}
	return nil
}

// Len is how many fields key holds, read past any outage.
func (h *Hasher) Len(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.m[key])
}

// Total is how many fields all keys hold, read past any outage.
func (h *Hasher) Total() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, m := range h.m {
		n += len(m)
	}
	return n
}

// Snapshot is a copy of the store as it is now: what a process killed at
// this moment leaves for the next one, while the killed one's late writes
// go on landing in h.
func (h *Hasher) Snapshot() *Hasher {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := &Hasher{m: map[string]map[string]string{}}
	for k, m := range h.m {
		c.m[k] = map[string]string{}
		for f, v := range m {
			c.m[k][f] = v
		}
	}
	return c
}

// Sets and Dels count the HSet and HDel calls that applied.
func (h *Hasher) Sets() int { h.mu.Lock(); defer h.mu.Unlock(); return h.sets }
func (h *Hasher) Dels() int { h.mu.Lock(); defer h.mu.Unlock(); return h.dels }

// Log records what is logged, one line per call: the level, the message
// and its arguments.
type Log struct {
	mu    sync.Mutex
	lines []string
	tb    interface{ Log(args ...any) } // also told each line, when set (LogTo)
}

// LogTo is a Log that also writes each line to tb's log (a *testing.T),
// shown when the test fails or runs verbose.
func LogTo(tb interface{ Log(args ...any) }) *Log { return &Log{tb: tb} }

func (l *Log) add(level, msg string, args []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	line := level + " " + msg
	if len(args) > 0 {
		line += " " + fmt.Sprint(args)
	}
	l.lines = append(l.lines, line)
	if l.tb != nil {
		l.tb.Log(line)
	}
}

func (l *Log) Debug(msg string, args ...any) { l.add("DEBUG", msg, args) }
func (l *Log) Info(msg string, args ...any)  { l.add("INFO", msg, args) }
func (l *Log) Warn(msg string, args ...any)  { l.add("WARN", msg, args) }
func (l *Log) Error(msg string, args ...any) { l.add("ERROR", msg, args) }

// Lines returns a copy of the lines so far.
func (l *Log) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// Count is how many lines contain sub.
func (l *Log) Count(sub string) int {
	n := 0
	for _, s := range l.Lines() {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

// Has reports whether a line contains sub.
func (l *Log) Has(sub string) bool { return l.Count(sub) > 0 }

// String is every line, one per line.
func (l *Log) String() string { return strings.Join(l.Lines(), "\n") }

// Eventually waits up to 20 seconds for cond, failing the test with what
// it waited for: the one poll loop tests of goroutines and processes share.
func Eventually(t interface {
	Helper()
	Fatalf(format string, args ...any)
}, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
