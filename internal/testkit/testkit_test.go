package testkit

import (
	"errors"
	"sync"
	"testing"
)

func TestHasher(t *testing.T) {
	var h Hasher
	if err := h.HSet("k", "a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	h.HSet("k", "b", "2")
	h.HSet("other", "a", "x")
	if err := h.HSet("k", "c", 3); err == nil {
		t.Error("an HSet of an int applied")
	}
	if m, _ := h.HGetAll("k"); len(m) != 2 || m["a"] != "1" || m["b"] != "2" {
		t.Errorf("k holds %v", m)
	}
	h.SetDown(true)
	for _, err := range []error{h.HSet("k", "d", "4"), h.HDel("k", "a"), func() error { _, err := h.HGetAll("k"); return err }()} {
		if !errors.Is(err, ErrDown) {
			t.Errorf("down: %v, want ErrDown", err)
		}
	}
	if h.Len("k") != 2 {
		t.Errorf("Len %d while down, want 2", h.Len("k"))
	}
	h.SetDown(false)
	h.LoseNextAnswer()
	if err := h.HSet("k", "e", "5"); err == nil || h.Len("k") != 3 {
		t.Errorf("a lost answer: %v, %d fields; want an error and the write applied", err, h.Len("k"))
	}
	h.HDel("k", "a", "b")
	if h.Len("k") != 1 || h.Sets() != 4 || h.Dels() != 1 {
		t.Errorf("len %d, sets %d, dels %d", h.Len("k"), h.Sets(), h.Dels())
	}
}

func TestLog(t *testing.T) {
	var l Log
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Warn("refused", "n", i)
		}()
	}
	wg.Wait()
	l.Info("done")
	if l.Count("WARN refused") != 10 || !l.Has("INFO done") || len(l.Lines()) != 11 {
		t.Errorf("log:\n%s", l.String())
	}
}
