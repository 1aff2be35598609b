package scenario

import (
	"time"

	"github.com/ruled-dev/ruled/abi"
	"github.com/ruled-dev/ruled/host/status"
	"github.com/ruled-dev/ruled/internal/schema"
	"github.com/ruled-dev/ruled/sdk/ruletest"
)

// SchemaID is where the scenario file schema is published.
const SchemaID = "https://raw.githubusercontent.com/ruled-dev/ruled/main/docs/schema/scenario.schema.json"

type obj = schema.Object

// Schema is the scenario file's JSON Schema (draft-07), for editors,
// generated from the parser's key tables (scenarioKeys, stepKeys …) and
// enums; the committed docs/schema/scenario.schema.json is held to it. A
// file is one scenario a YAML document; a later document inherits the
// rules, plugins, grants, start, replay-window and http it does not set.
func Schema() []byte {
	str := func(doc string) obj { return obj{"type": "string", "description": doc} }
	at := schema.Doc(schema.Duration, "when, on the virtual clock from the scenario's start (1m, 2h30m)")
	count := schema.Int(0, "how many times (0: never)")
	paths := obj{"type": "object", "additionalProperties": obj{"type": "string"}}
	event := schema.OneOf("an event: a mapping with a topic, or its JSON as a string",
		obj{"type": "object", "required": []string{"topic"}, "properties": obj{"topic": obj{"type": "string", "minLength": 1}}},
		obj{"type": "string"})
	answers := obj{"type": "array", "description": "the HTTP stub's answers, by URL (a plugin's requests go nowhere else)",
		"items": schema.Closed(answerKeys, map[string]obj{
			"url":    str("the URL answered (a path ending in * answers every URL under it)"),
			"status": obj{"type": "integer", "minimum": 100, "maximum": 599},
			"body":   str("the body answered"),
		}, "url")}
	listOf := func(item obj) obj { return schema.OneOf("one, or a list", item, obj{"type": "array", "items": item}) }
	num := obj{"type": []any{"number", "null"}, "description": "the aggregate read (null: nil, as avg without events)"}
	expect := schema.Closed(expectKeys, map[string]obj{
		"published": listOf(schema.Closed(publishedKeys, map[string]obj{
			"topic": str("the topic published"), "count": count, "payload": obj{"description": "a subset of the payload"}, "at": at,
		}, "topic")),
		"requests": listOf(schema.Closed(requestKeys, map[string]obj{
			"url": str("the URL requested"), "method": str("GET, POST …"), "count": count,
			"headers": paths, "body": obj{"description": "a subset of the body (JSON), or its text"}, "at": at,
		}, "url")),
		"actions": listOf(schema.Closed(actionKeys, map[string]obj{
			"do": str("plugin.function"), "step": str("the step's name"), "rule": str("the rule's id"), "count": count,
			"config": obj{"description": "a subset of the step's config"}, "event": obj{"description": "a subset of the event"},
			"keys": schema.Enum("the idempotency keys of the calls: same (a retry's) or distinct", "same", "distinct"),
		})),
		"states": obj{"type": "object", "description": "rule: state (runnable, paused, sleeping, fault, failed, killed, completed)",
			"additionalProperties": obj{"type": "string"}},
		"runs": obj{"type": "object", "description": "rule: {outcome: count} (ok, failed, cancelled, dropped …)",
			"additionalProperties": obj{"type": "object", "additionalProperties": count}},
		"stats": obj{"type": "object", "description": "rule: {counter: value}",
			"additionalProperties": obj{"type": "object", "propertyNames": obj{"enum": StatNames}, "additionalProperties": obj{"type": "integer"}}},
		"windows": listOf(schema.Closed(windowKeys, map[string]obj{
			"window": str("the window's name"), "key": str("the key (left out: a window of one value)"),
			"count": num, "sum": num, "avg": num, "min": num, "max": num, "first": num, "last": num, "per_second": num, "per_minute": num,
		}, "window")),
		"tree": listOf(schema.Closed(treeKeys, map[string]obj{
			"rule": str("the rule whose first matching run is compared"), "outcome": str("its outcome (ok, failed …)"),
			"is": str("the run's tree, as ruled log tree prints it with stable ids (docs/scenarios.md)"),
		}, "rule", "is")),
	})
	stepProps := map[string]obj{
		"at":      at,
		"publish": listOf(event),
		"advance": schema.Doc(schema.Duration, "moves the virtual clock on"),
		"restart": schema.OneOf("stops the daemon and starts it again on the same store; {down: 25s}: after that long",
			obj{"const": true}, schema.Closed([]string{"down"}, map[string]obj{"down": schema.Duration}, "down")),
		"down":           schema.Doc(schema.Duration, "the daemon is down this long, then starts again"),
		"set-clock":      schema.Doc(schema.SignedDuration, "sets the wall clock forward or back"),
		"replace-plugin": obj{"type": "object", "description": "plugin: a new .wasm file, as a hot reload would", "additionalProperties": obj{"type": "string"}},
		"replace-rules":  str("a rules directory the daemon reloads instead"),
		"http":           answers,
		"command": schema.Closed(commandKeys, map[string]obj{
			"rule": str("the rule's id"), "do": schema.Enum("the command", status.Commands...),
			"for": schema.Duration, "until": str("an RFC 3339 time"),
		}, "rule", "do"),
		"replay": schema.OneOf("a capture file of ruled record, or {capture, ignore}", str("the capture file"),
			schema.Closed(replayKeys, map[string]obj{"capture": str("the capture file"),
				"ignore": obj{"type": "array", "items": obj{"type": "string"}, "description": "payload fields not compared"}}, "capture")),
		"expect": expect,
	}
	step := schema.Closed(stepKeys, stepProps)
	step["description"] = "one thing a scenario does: one action (" + kindsText() + "), at at: when given"
	grants := obj{"type": "object", "description": "plugin: [capabilities]",
		"additionalProperties": obj{"type": "array", "items": obj{"enum": capabilities()}}}
	root := schema.Closed(scenarioKeys, map[string]obj{
		"name":          str("what the scenario shows"),
		"rules":         str("the rules directory, relative to this file"),
		"plugins":       obj{"type": "object", "description": "plugin name: its .wasm file, relative to this file", "additionalProperties": obj{"type": "string"}},
		"grants":        grants,
		"start":         str("the virtual clock's start, RFC 3339 (default " + ruletest.DefaultStart.Format(time.RFC3339) + ")"),
		"replay-window": schema.Duration,
		"location": schema.Closed(locationKeys, map[string]obj{
			"latitude":  {"type": "number", "minimum": -90, "maximum": 90, "description": "degrees north (south negative)"},
			"longitude": {"type": "number", "minimum": -180, "maximum": 180, "description": "degrees east (west negative)"},
			"elevation": {"type": "number", "minimum": 0, "description": "metres above the land around (a hilltop, a tower)"},
		}, "latitude", "longitude"),
		"http":  answers,
		"steps": obj{"type": "array", "items": step, "minItems": 1},
	}, "name")
	return schema.Render(SchemaID, "ruled scenario file", "One scenario a YAML document (ruled test; docs/scenarios.md).", nil, root)
}

func kindsText() string {
	s := ""
	for i, k := range Kinds {
		if i > 0 {
			s += ", "
		}
		s += k
	}
	return s
}

func capabilities() []string {
	var out []string
	for _, c := range abi.Capabilities {
		out = append(out, string(c))
	}
	return out
}
