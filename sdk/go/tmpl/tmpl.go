// Package tmpl is the Go SDK's templates: `{{path}}` placeholders in a
// step's config filled from the event and the run's context, for any Go
// plugin as for the first-party ones. It is package
// github.com/ruled-dev/ruled/abi/tmpl under the SDK's name (the host
// renders a rule's vars: with that package, and `ruled lint` reads the
// same placeholders); see its documentation for the rules of rendering.
//
//	topic, err := tmpl.Text(cfg.String("topic", ""))   // "alerts.{{vehicle}}"
//	body, err := tmpl.JSON(payload)                     // from cfg.Decode("payload")
//	...
//	ruled.Publish(topic.String(in.Event), body.Render(nil, in.Event))
package tmpl

import "github.com/ruled-dev/ruled/abi/tmpl"

// Source is where placeholders are looked up: an event (ruled.Event, which
// also reads the run's steps.<name> and vars.<name>) or a view.
type Source = tmpl.Source

// Template is a compiled template.
type Template = tmpl.Template

// Text compiles a text template such as "battery {{battery}}% on {{vehicle}}".
func Text(s string) (*Template, error) { return tmpl.Text(s) }

// JSON compiles a JSON value (as Decode gives it) into a template that
// renders JSON: a string that is exactly "{{path}}" becomes the value at
// path with its type; placeholders inside longer strings splice in text.
func JSON(v any) (*Template, error) { return tmpl.JSON(v) }

// AppendJSON encodes a value as Decode gives them, keys sorted.
func AppendJSON(dst []byte, v any) []byte { return tmpl.AppendJSON(dst, v) }
