// Command soak is the crash soak's plugin (cmd/ruled/soak_test.go): its
// action logs its effect, "FIRED <tag><n>", and then stays busy for ms
// milliseconds, so that a SIGKILL often lands after the effect and before
// the step's record is removed — the window in which at-least-once
// delivery repeats an action.
package main

import (
	"time"

	ruled "github.com/ruled-dev/ruled/sdk/go"
)

func main() {}

func init() {
	ruled.Plugin("soak", "1")
	ruled.Action("effect", func(cfg ruled.Config) (ruled.DoFunc, error) {
		busy := time.Duration(cfg.Int("ms", 100)) * time.Millisecond
		tag := cfg.String("tag", "") // which step of a chain
		return func(in *ruled.Input) ([]byte, error) {
			n, _ := in.Event.String("n")
			ruled.Log(ruled.LevelInfo, "FIRED "+tag+n+" key "+in.Key())
			// The host's clock: a guest's own (WASI) clock is not the
			// machine's under wazero.
			for end := ruled.Now().Add(busy); ruled.Now().Before(end); {
			}
			return nil, nil
		}, nil
	})
}
