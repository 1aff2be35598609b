package ruled

import (
	"time"

	"github.com/ruled-dev/ruled/abi"
)

// Value is one value of an event or config, as the view holds it.
type Value = abi.Value

// Event is the event a call was triggered by. It reads fields from the view
// the host built once for every rule the event triggers, so reading a field
// parses nothing and allocates nothing (String copies; Bytes does not).
//
// A path names a field: keys joined by dots, array elements by their index
// ("data.value", "tags.0"); see abi/ABI.md §4.
//
// It also reads the run's context: "steps.<name>.<path>" is the output of
// the earlier step called name, "vars.<name>" the rule's variable,
// "states.<name>.<path>" a state the rule reads, "previous.<path>" the
// trigger's entity's state before it and "sun.<path>" the sun's place
// (ABI 1.4); such a path is never the event's (abi.CallInput.Find).
// Templates (package tmpl) see them the same way.
//
// An Event is valid only during the call it was passed to.
type Event struct {
	in *abi.CallInput
}

// Find returns the value at path.
func (e Event) Find(path string) (Value, bool) { return e.in.Find(path) }

// Has reports whether the event has a value at path (null included).
func (e Event) Has(path string) bool { _, ok := e.in.Find(path); return ok }

// Kind is the JSON type at path, 0 when there is none.
func (e Event) Kind(path string) abi.ValueKind {
	v, _ := e.in.Find(path)
	return v.Kind()
}

// Equal reports whether the string at path is s, without allocating.
func (e Event) Equal(path, s string) bool {
	v, _ := e.in.Find(path)
	b, ok := v.Str()
	return ok && string(b) == s
}

// Bytes returns the string at path as a view into the call's input, valid
// until the call returns.
func (e Event) Bytes(path string) ([]byte, bool) {
	v, _ := e.in.Find(path)
	return v.Str()
}

// String returns a copy of the string at path ("" and false when there is no
// string there).
func (e Event) String(path string) (string, bool) {
	b, ok := e.Bytes(path)
	return string(b), ok
}

// Float returns the number at path.
func (e Event) Float(path string) (float64, bool) {
	v, _ := e.in.Find(path)
	return v.Float()
}

// Int returns the whole number at path.
func (e Event) Int(path string) (int64, bool) {
	v, _ := e.in.Find(path)
	return v.Int()
}

// Bool returns the bool at path.
func (e Event) Bool(path string) (bool, bool) {
	v, _ := e.in.Find(path)
	return v.Bool()
}

// Count returns the number of members of the object or array at path.
func (e Event) Count(path string) (int, bool) {
	v, _ := e.in.Find(path)
	return v.Count()
}

// Decode returns the value at path as plain Go values (map[string]any,
// []any, string, int64, float64, bool, nil). It allocates; use it for whole
// subtrees, and the typed accessors for single fields.
func (e Event) Decode(path string) (any, bool) { return e.in.Decode(path) }

// Topic is the topic the event arrived on.
func (e Event) Topic() string { return string(e.in.Topic) }

// Time is the event's time: the same on every evaluation of this event,
// replay included.
func (e Event) Time() time.Time { return time.Unix(0, e.in.Time) }

// Raw returns the event's JSON, fetched from the host on demand (the view
// does not carry it, because most conditions never look).
func (e Event) Raw() []byte { return eventRaw() }

// Input is what an action is called with: the event and the run it serves.
type Input struct {
	Event Event
}

// Rule is the id of the rule whose step this is.
func (in *Input) Rule() string { return string(in.Event.in.Rule) }

// Step is the step's name.
func (in *Input) Step() string { return string(in.Event.in.Step) }

// Run is the run's execution id.
func (in *Input) Run() string { return string(in.Event.in.Run) }

// Pass is the rule's repeat pass, from 0.
func (in *Input) Pass() int { return int(in.Event.in.Pass) }

// Key is the call's idempotency key: the same for every delivery of this
// step of this pass of this run. Actions run at least once; an action with an
// effect outside ruled should use Key to make a repeat harmless.
func (in *Input) Key() string { return string(in.Event.in.Key) }

// Attempt counts this step's tries, from 1: a step whose rule says retry:
// is called again after a failure with the same Key and the next Attempt.
// 0 from a host older than ABI 1.2.
func (in *Input) Attempt() int { return int(in.Event.in.Attempt) }

// Permanent marks an action's error as one that trying again would repeat
// (a request the far end refused as invalid, a config the device rejects):
// the host does not retry the step, whatever its rule's retry: says. Other
// errors are retried as the rule says. errors.Is and errors.As see err
// through it.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Config is a step's config (its `with:` in the rule file). Configure
// functions read it once; its values are copied out, so what a configure
// function keeps stays valid.
type Config struct {
	fn string
	v  abi.View
}

// Function is the name of the function being configured.
func (c Config) Function() string { return c.fn }

// Has reports whether the config has a value at path.
func (c Config) Has(path string) bool { _, ok := c.v.Find(path); return ok }

// Find returns the value at path; its bytes are valid only during configure.
func (c Config) Find(path string) (Value, bool) { return c.v.Find(path) }

// Decode returns the value at path as plain Go values, like Event.Decode.
func (c Config) Decode(path string) (any, bool) { return c.v.Decode(path) }

// String returns the string at path, or def.
func (c Config) String(path, def string) string {
	v, _ := c.v.Find(path)
	if b, ok := v.Str(); ok {
		return string(b)
	}
	return def
}

// Float returns the number at path, or def.
func (c Config) Float(path string, def float64) float64 {
	v, _ := c.v.Find(path)
	if f, ok := v.Float(); ok {
		return f
	}
	return def
}

// Int returns the whole number at path, or def.
func (c Config) Int(path string, def int64) int64 {
	v, _ := c.v.Find(path)
	if n, ok := v.Int(); ok {
		return n
	}
	return def
}

// Bool returns the bool at path, or def.
func (c Config) Bool(path string, def bool) bool {
	v, _ := c.v.Find(path)
	if b, ok := v.Bool(); ok {
		return b
	}
	return def
}

// RequireString returns the string at path or the error every SDK uses
// for a missing key, `<function>: config needs "<path>"`, or for a value
// of another type, `<function>: config "<path>" must be a string, not the
// number 30`: an author who wrote `above: thirty` is told what is wrong
// with it, not that it is missing.
func (c Config) RequireString(path string) (string, error) {
	v, found := c.v.Find(path)
	if b, ok := v.Str(); ok {
		return string(b), nil
	}
	return "", c.needs(path, "a string", v, found)
}

// RequireFloat is RequireString for numbers.
func (c Config) RequireFloat(path string) (float64, error) {
	v, found := c.v.Find(path)
	if f, ok := v.Float(); ok {
		return f, nil
	}
	return 0, c.needs(path, "a number", v, found)
}

// RequireInt is RequireString for whole numbers.
func (c Config) RequireInt(path string) (int64, error) {
	v, found := c.v.Find(path)
	if n, ok := v.Int(); ok {
		return n, nil
	}
	return 0, c.needs(path, "a whole number", v, found)
}

func (c Config) needs(path, want string, v Value, found bool) error {
	if !found {
		return NewError(c.fn + `: config needs "` + path + `"`)
	}
	return NewError(c.fn + `: config "` + path + `" must be ` + want + `, not ` + valueText(v))
}

// valueText names a config value for an error: its type, and a short
// string or a number as written.
func valueText(v Value) string {
	switch v.Kind() {
	case abi.ValueString:
		b, _ := v.Str()
		if len(b) > 40 {
			return "a string of " + itoa(len(b)) + " bytes"
		}
		return `the string "` + string(b) + `"`
	case abi.ValueInt:
		n, _ := v.Int()
		return "the number " + itoa64(n)
	case abi.ValueFloat:
		return "a fractional number"
	case abi.ValueBool:
		if b, _ := v.Bool(); b {
			return "true"
		}
		return "false"
	case abi.ValueNull:
		return "null"
	case abi.ValueObject:
		return "an object"
	case abi.ValueArray:
		return "an array"
	}
	return "a value of " + v.Kind().String()
}

// Raw returns a copy of the config's JSON.
func (c Config) Raw() []byte {
	b, _ := c.v.Raw()
	return append([]byte(nil), b...)
}

// textError is an error with fixed text; NewError avoids fmt so that a plugin
// that does not format pays nothing for it.
type textError string

func (e textError) Error() string { return string(e) }

// NewError returns an error whose text is s, exactly as the host will show it.
func NewError(s string) error { return textError(s) }

func itoa(n int) string { return itoa64(int64(n)) }

// itoa64 avoids strconv, as package abi does, so that a plugin that never
// formats a number does not link it.
func itoa64(n int64) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	u := uint64(n)
	if n < 0 {
		u = uint64(-n)
	}
	for u > 0 {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
	}
	if n < 0 {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
