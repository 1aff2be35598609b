// Command zoo is a Go plugin that misbehaves on purpose, for the wasm
// host's tests: what real Go code does when it panics, runs out of memory,
// spins, or tries the file system.
package main

import (
	"os"

	ruled "github.com/ruled-dev/ruled/sdk/go"
)

func main() {}

var (
	sink [][]byte
	n    uint64
)

func cond(f func(ruled.Event) (bool, error)) ruled.ConfigureCondition {
	return func(ruled.Config) (ruled.WhenFunc, error) { return f, nil }
}

func init() {
	ruled.Plugin("gozoo", "0")
	ruled.Condition("ok", cond(func(ev ruled.Event) (bool, error) { return ev.Has("x"), nil }))
	ruled.Condition("panic", cond(func(ruled.Event) (bool, error) { panic("boom") }))
	ruled.Condition("nil_map", cond(func(ruled.Event) (bool, error) {
		var m map[string]int
		m["x"] = 1
		return false, nil
	}))
	ruled.Condition("oom", cond(func(ruled.Event) (bool, error) {
		for {
			sink = append(sink, make([]byte, 1<<20))
		}
	}))
	ruled.Condition("spin", cond(func(ruled.Event) (bool, error) {
		for {
			n++
		}
	}))
	// flood logs lines lines of 1 KiB through ruled_log and as many to
	// stderr, then a line that would forge one of its own and colour the
	// terminal: a plugin's log must be bounded and cleaned.
	ruled.Action("flood", func(cfg ruled.Config) (ruled.DoFunc, error) {
		lines := int(cfg.Int("lines", 1000))
		return func(*ruled.Input) ([]byte, error) {
			line := make([]byte, 1024)
			for i := range line {
				line[i] = 'x'
			}
			for range lines {
				ruled.Log(ruled.LevelInfo, string(line))
				os.Stderr.Write(append(line, '\n'))
			}
			ruled.Log(ruled.LevelWarn, "\x1b[31mred\n2026-01-01T00:00:00Z [ERROR] forged: line")
			return nil, nil
		}, nil
	})
	ruled.Action("read_file", func(ruled.Config) (ruled.DoFunc, error) {
		return func(*ruled.Input) ([]byte, error) {
			b, err := os.ReadFile("/etc/passwd")
			if err != nil {
				return nil, ruled.NewError("read_file: " + err.Error())
			}
			return b, nil
		}, nil
	})
	// busy keeps the call going for ms milliseconds of the host's clock: a
	// step a test can kill its process in the middle of.
	ruled.Action("busy", func(cfg ruled.Config) (ruled.DoFunc, error) {
		ms := cfg.Int("ms", 1000)
		return func(*ruled.Input) ([]byte, error) {
			start := ruled.Now()
			for ruled.Now().Sub(start).Milliseconds() < ms {
				n++
			}
			return nil, nil
		}, nil
	})
	ruled.Action("env", func(ruled.Config) (ruled.DoFunc, error) {
		return func(*ruled.Input) ([]byte, error) {
			return []byte("HOME=" + os.Getenv("HOME") + " PATH=" + os.Getenv("PATH") + " args=" + string(rune('0'+len(os.Args)))), nil
		}, nil
	})
}
