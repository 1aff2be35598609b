package wasm

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// TestHostileStopsAndHoldsNoOne: the guests that once got past the
// deadline or froze the whole process (testdata/hostile: a memory.fill
// loop after a grow — one fuel unit a 32 MiB fill, it never stopped —, a
// 2^40 call tree with and without a grow, a spin after a grow) stop within
// twice their deadline with GOMAXPROCS 1 and 2, and meanwhile the rest of
// the process runs: a goroutine ticking every 5 ms is never held for as
// long as the deadline. A garbage collection waits for compiled guest code,
// which cannot be preempted, and holds every goroutine meanwhile, the
// deadline's timer included; the checkpoint every
// instrument.CheckpointUnits takes the guest through Go, where it can be
// stopped. A grow to 34 MiB held every goroutine too, while wazero
// cleared the new pages in a Go slice: memory is now reserved up front
// (linmem.go). Unbounded recursion of big frames — many locals, or few
// locals and many values held on the operand stack across the call — ends
// at the stack bound, within the memory the plugin is allowed.
func TestHostileStopsAndHoldsNoOne(t *testing.T) {
	if testing.Short() {
		t.Skip("runs each runaway to its deadline")
	}
	const deadline = time.Second
	for _, procs := range []int{1, 2} {
		t.Run("GOMAXPROCS="+string(rune('0'+procs)), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			e := newEnv(t)
			m := e.load(t, filepath.Join("testdata", "hostile", "hostile.wasm"),
				Options{Name: "hostile", Limits: Limits{Timeout: deadline, MemoryPages: 1024}})
			straight := e.load(t, filepath.Join("testdata", "hostile", "straight.wasm"),
				Options{Name: "straight", Limits: Limits{Timeout: deadline}})
			for _, tc := range []struct {
				mod   *Module
				fn    string
				cause Cause
			}{
				{m, "fillspin", CauseDeadline},
				{m, "growtree", CauseDeadline},
				{m, "spingrow", CauseDeadline},
				{m, "tree", CauseDeadline},
				{m, "deepframes", CauseMemory},
				{m, "valuestack", CauseMemory},
				{straight, "divs", CauseDeadline},
				{straight, "adds", CauseDeadline},
				{straight, "calls", CauseDeadline},
			} {
				h := configure(t, tc.mod, tc.fn, "")
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				done := make(chan error, 1)
				start := time.Now()
				go func() { _, err := h.When(context.Background(), call(t, sampleEvent)); done <- err }()
				var worst time.Duration
				last := time.Now()
				var err error
			wait:
				for {
					select {
					case err = <-done:
						break wait
					case <-time.After(5 * time.Millisecond):
						now := time.Now()
						worst = max(worst, now.Sub(last))
						last = now
					}
				}
				took := time.Since(start)
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				h.Close()
				// A runaway stops at its deadline, or a little before on its
				// fuel (the budget is the deadline at the slowest kind of
				// work's rate, with headroom).
				var ce *CallError
				if !errors.As(err, &ce) || ce.Cause != tc.cause && !(tc.cause == CauseDeadline && ce.Cause == CauseFuel) {
					t.Fatalf("%s: %v; want %v", tc.fn, err, tc.cause)
				}
				if took > deadline*3/2 {
					t.Errorf("%s: stopped after %v; want within 1.5× the deadline of %v", tc.fn, took, deadline)
				}
				if worst >= deadline {
					t.Errorf("%s: the process was held for %v (a 5 ms ticker's longest gap); want less than the deadline", tc.fn, worst)
				}
				grew := int64(after.Sys) - int64(before.Sys)
				t.Logf("%s: %v after %v, ticker's longest gap %v, Go's memory from the OS %+d MiB",
					tc.fn, ce.Cause, took.Round(time.Millisecond), worst.Round(time.Millisecond), grew>>20)
				// The interpreter keeps frames on the Go heap and stops at
				// 2,000 of them: a frame holding many operand values across
				// its call reaches that bound before the slots bound does,
				// and is as contained. The compiler has no such frame count.
				bound := strings.Contains(ce.Text, "call stack past its bound") ||
					e.rt.Interpreter() && strings.Contains(ce.Text, "the runtime's bound")
				if tc.cause == CauseMemory && (!bound || grew > 64<<20) {
					t.Errorf("%s: %q, %d MiB more from the OS; want the stack bound, within the plugin's 64 MiB",
						tc.fn, ce.Text, grew>>20)
				}
			}
		})
	}
	debug.FreeOSMemory()
}

// TestStartSectionBounded: a module whose start section loops forever
// hung instantiation — `ruled call`, the daemon's start, and a running
// daemon's reload of the file — with no fuel and no timer. The section's
// function now runs as the first call, under the start-up budget: the load
// fails once InitTimeout is spent, naming the start section.
func TestStartSectionBounded(t *testing.T) {
	e := newEnv(t)
	start := time.Now()
	_, err := e.rt.LoadFile(context.Background(), filepath.Join("testdata", "hostile", "start_spin.wasm"),
		Options{Name: "start_spin", Limits: Limits{InitTimeout: 300 * time.Millisecond}})
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "the start section") {
		t.Fatalf("load: %v; want it refused at its start section", err)
	}
	if took > 5*time.Second {
		t.Errorf("the load took %v; want it stopped near its 300ms start-up budget", took)
	}
	t.Logf("%v, after %v", err, took.Round(time.Millisecond))
}

// TestPluginLogBounded: a plugin that logs 2,000 lines of 1 KiB a call
// (half through ruled_log, half on stderr) gets logLinesPerCall of them
// into the host's log, the rest dropped and counted, and the drop said
// once; a line with a newline and an ANSI escape reaches the log escaped,
// on one line.
func TestPluginLogBounded(t *testing.T) {
	e := newEnv(t)
	m := e.load(t, goPlugin(t, "host/wasm/testdata/zoo/go"), Options{Name: "gozoo", Limits: Limits{Timeout: 10 * time.Second}})
	h := configure(t, m, "flood", `{"lines":1000}`)
	defer h.Close()
	before := e.logs.count("xxxxxxxx")
	if _, err := h.Act(context.Background(), call(t, `{}`)); err != nil {
		t.Fatal(err)
	}
	logged := e.logs.count("xxxxxxxx") - before
	if logged > logLinesPerCall {
		t.Errorf("%d of the call's 2,000 lines logged; want at most %d", logged, logLinesPerCall)
	}
	if m.LogDropped() < 2000-logLinesPerCall {
		t.Errorf("%d lines counted dropped; want at least %d", m.LogDropped(), 2000-logLinesPerCall)
	}
	if n := e.logs.count("plugin log: lines dropped"); n != 1 {
		t.Errorf("the drop said %d times in one call; want once", n)
	}
	t.Logf("%d lines logged, %d dropped", logged, m.LogDropped())
	// The forged line came after the bound: a fresh call with few lines.
	h2 := configure(t, m, "flood", `{"lines":1}`)
	defer h2.Close()
	if _, err := h2.Act(context.Background(), call(t, `{}`)); err != nil {
		t.Fatal(err)
	}
	if e.logs.has("\x1b") || !e.logs.has(`\x1b[31mred\x0a2026-01-01T00:00:00Z [ERROR] forged: line`) {
		t.Errorf("the plugin's escape and newline reached the log raw, or not at all:\n%s", e.logs.tail(5))
	}
	// Calls that each drop lines say so at most once a second between
	// them (issue 38: ~700 such warnings a second at 1,500 runs/s).
	start := time.Now()
	for range 5 {
		if _, err := h.Act(context.Background(), call(t, `{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if n, most := e.logs.count("plugin log: lines dropped"), 2+int(time.Since(start)/time.Second); n > most {
		t.Errorf("the drop said %d times in 6 flooding calls over %v; want at most %d (once a second)", n, time.Since(start), most)
	}
}

func TestCleanText(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, a tab\there": "plain text, a tab\there",
		"two\nlines":              `two\x0alines`,
		"\x1b[31mred\x1b[0m":      `\x1b[31mred\x1b[0m`,
		"carriage\rreturn":        `carriage\x0dreturn`,
		"nul\x00":                 `nul\x00`,
		"line\u2028separator":     `line\u2028separator`,
		"c1\u0085next line":       `c1\u0085next line`,
		"bad \xff utf-8":          "bad \ufffd utf-8",
		"ünïcödé ✓":               "ünïcödé ✓",
	} {
		if got := CleanText(in); got != want {
			t.Errorf("CleanText(%q) = %q; want %q", in, got, want)
		}
	}
}
