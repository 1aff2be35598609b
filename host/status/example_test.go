package status_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/ruled-dev/ruled/host/status"
)

// ExampleCommand decodes an operator's command as the API and the
// control topic receive it, and checks it against the commands a rule
// takes. Who sent it is never read from the body.
func ExampleCommand() {
	var c status.Command
	err := json.Unmarshal([]byte(`{"command":"sleep","for":"90m","By":"me"}`), &c)
	fmt.Println(c.Command, c.For, c.By == "", err, slices.Contains(status.Commands, c.Command))
	// Output: sleep 90m true <nil> true
}

// ExampleErrUnknownRule: the engine's errors are matched with errors.Is
// whatever wraps them; the API answers 404 for this one.
func ExampleErrUnknownRule() {
	err := fmt.Errorf("pause %q: %w", "low-battery", status.ErrUnknownRule)
	fmt.Println(errors.Is(err, status.ErrUnknownRule))
	fmt.Println(err)
	// Output:
	// true
	// pause "low-battery": no such rule
}
