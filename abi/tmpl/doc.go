// Package tmpl fills `{{path}}` placeholders from an event: what rules
// write in a step's `with:` (`topic: alerts.{{vehicle}}`, `payload:
// {level: "{{battery}}"}`), for any Go plugin's config as for the
// first-party plugins'. A template is compiled once, when a step's config
// is configured, into literal bytes and placeholders, so a call only
// copies and looks up; it never parses JSON.
//
//	topic, err := tmpl.Text(cfg.String("topic", ""))   // "alerts.{{vehicle}}"
//	body, err := tmpl.JSON(payload)                     // from cfg.Decode("payload")
//	...
//	ruled.Publish(topic.String(in.Event), body.Render(nil, in.Event))
//
// In text a placeholder becomes the value's text (a string as it is,
// anything else as its JSON) and a missing path nothing; in a JSON
// template a string that is exactly one placeholder takes the value with
// its type (missing: null), and placeholders in longer strings splice text
// in, escaped. Keys come out sorted. The AssemblyScript SDK's templates
// (textTemplate, jsonTemplate) render the same bytes: plugins/tmpl_test.go
// holds them to it.
//
// It is part of the contract between host and plugins, as the view is: the
// host renders a rule's vars: with it, and `ruled lint` reads the same
// placeholders in every config. The Go SDK's package tmpl is this one
// under its own name. It runs inside plugins (wasip1) and natively,
// imports only the standard library and abi, and owns no goroutine.
package tmpl
