package rules

import (
	"github.com/ruled-dev/ruled/host/sun"
	"github.com/ruled-dev/ruled/internal/schema"
)

// The rule file's JSON Schema, for editors: VS Code's YAML extension (and
// any language server that reads a yaml-language-server comment or a
// schema mapping) completes keys, shows each one's documentation and flags
// a misspelt key or a wrong type as the author types. The parser stays the
// judge: the schema says what each key may look like, not everything lint
// checks (references to steps and plugins, expressions, cross-field rules
// such as durable needing after).
//
// It is generated from the parser's own key tables (ruleKeys, stepKeys …)
// and their enums, with a shape and a sentence for each key below: a key
// added to a table and not here makes Schema panic, and the committed file
// (docs/schema/rules.schema.json) is held to Schema by a test.

// SchemaID is where the rule file schema is published.
const SchemaID = "https://raw.githubusercontent.com/ruled-dev/ruled/main/docs/schema/rules.schema.json"

type obj = schema.Object

var (
	durationSchema = schema.Duration
	patternSchema  = obj{"type": "string", "minLength": 1,
		"description": "a topic pattern: segments joined by '.', * for one segment, a final > for one or more"}
	nameSchema = obj{"type": "string", "pattern": `^[a-z0-9][a-z0-9_-]*$`, "maxLength": maxName}
	doSchema   = obj{"type": "string", "pattern": `^[^.\s]+\.[^.\s]+$`,
		"description": "plugin.function: the plugin's file name without .wasm, and one of its functions"}
	withSchema  = obj{"type": "object", "description": "the function's config: any YAML mapping; {{path}} placeholders are filled per call"}
	pathsSchema = obj{"oneOf": []any{obj{"type": "string"}, obj{"type": "array", "items": obj{"type": "string"}, "minItems": 1}},
		"description": "event field paths (vehicle, pos.lat): one, or a list"}
	intMin  = schema.Int
	closed  = schema.Closed
	enum    = schema.Enum
	withDoc = schema.Doc
)

// conditionSchema is a when: an expression, or a condition plugin's call.
func conditionSchema(doc string) obj {
	return obj{"description": doc, "oneOf": []any{
		obj{"type": "string", "description": "an expression of expr-lang's subset: battery < 20 && !charging"},
		closed(conditionKeys, map[string]obj{
			"do":   doSchema,
			"with": withSchema,
		}, "do"),
	}}
}

// retrySchema is a retry: a number of attempts or the whole policy.
func retrySchema(doc string) obj {
	return obj{"description": doc, "oneOf": []any{
		obj{"type": "integer", "minimum": 1, "maximum": MaxAttempts, "description": "attempts, counting the first, with the default waits"},
		closed(retryKeys, map[string]obj{
			"attempts":    intMin(1, "every try, the first included (1 to 100)"),
			"backoff":     durationSchema,
			"max-backoff": durationSchema,
			"factor":      obj{"type": "number", "minimum": 1, "maximum": 10, "description": "each wait is this many times the one before (default 2)"},
			"jitter":      obj{"type": "number", "minimum": 0, "maximum": 1, "description": "up to this share taken off each wait (default 0.2)"},
		}, "attempts"),
	}}
}

// triggerSchemas are a rule's triggers but a topic pattern: a schedule,
// a change, a window's close.
func triggerSchemas() (schedule, change, closes obj) {
	schedule = closed(scheduleKeys, map[string]obj{
		"schedule": {"type": "string", "description": "a five-field cron expression (minute hour day-of-month month day-of-week), or @daily and the like"},
		"every":    durationSchema,
		"sun":      enum("an event of the sun's day at the daemon's location: sunrise, sunset, dawn and dusk (civil), noon", sun.EventNames()...),
		"offset":   withDoc(schema.SignedDuration, "with sun: how long after the event (before, negative: -30m), at most 12h either way"),
		"timezone": {"type": "string", "description": "an IANA zone (Europe/Berlin), UTC or Local (default: the daemon's)"},
		"missed":   enum("what an occurrence missed while down does: once (the latest, default), skip, all", missedNames[:]...),
		"within":   durationSchema,
	})
	schedule["description"] = "a schedule: {schedule: cron}, {every: duration} or {sun: sunset, offset: -30m}"
	scalar := obj{"type": []any{"string", "number", "boolean", "null"}}
	values := obj{"oneOf": []any{scalar, obj{"type": "array", "minItems": 1, "items": scalar}}}
	change = closed(changeKeys, map[string]obj{
		"topic":      patternSchema,
		"changes":    {"description": "the state's field whose value must change, or true for any change", "oneOf": []any{obj{"type": "string"}, obj{"const": true}}},
		"from":       withDoc(values, "the values the field had (any of them)"),
		"to":         withDoc(values, "the values the field has now (any of them)"),
		"above":      {"type": "number", "description": "a threshold: the rule runs when the field's number crosses above this (not on each report above it)"},
		"below":      {"type": "number", "description": "a threshold: the rule runs when the field's number crosses below this; with above, a range"},
		"hysteresis": {"type": "number", "exclusiveMinimum": 0, "description": "with above or below: how far back across the line the number must go before the threshold fires again"},
		"for":        withDoc(durationSchema, "a hold: the rule runs once the field has kept its new value this long (per entity; across restarts)"),
	}, "topic", "changes")
	change["description"] = "a change of an entity's state: {topic, changes, from, to}"
	closes = closed(windowCloseKeys, map[string]obj{
		"window": withDoc(nameSchema, "a tumbling window's name (windows:)"),
		"closed": {"const": true, "description": "runs when each of the window's periods closes, per key, with its aggregates"},
	}, "window", "closed")
	closes["description"] = "a tumbling window's close: {window, closed: true}"
	return schedule, change, closes
}

// windowSchema is one window definition.
func windowSchema() obj {
	_, change, _ := triggerSchemas()
	w := closed(windowKeys, map[string]obj{
		"name":        withDoc(nameSchema, "required: the window's name, unique across the rules directory"),
		"description": {"type": "string", "description": "what the window is for"},
		"on": {"description": "required: the events it counts: a topic pattern, a change (without for: or hysteresis:), or a list of them",
			"oneOf": []any{patternSchema, change, obj{"type": "array", "minItems": 1, "items": obj{"oneOf": []any{patternSchema, change}}}}},
		"key":      {"type": "string", "description": "the event field the window keeps a value per (a device); left out: one"},
		"field":    {"type": "string", "description": "the event field whose number it aggregates (sum, avg, min, max, first, last); left out: it counts events"},
		"time":     {"type": "string", "description": "the event field holding its own time (RFC 3339, or Unix seconds); left out: when it arrived"},
		"last":     {"type": "string", "description": "a sliding window's length (15m), or a count window's events (100 events)"},
		"every":    {"type": "string", "description": "a tumbling window's period: a duration on the epoch's grid (1h), or day or week from local midnight"},
		"timezone": {"type": "string", "description": "with every: day or week, an IANA zone (default: the daemon's)"},
		"buckets":  withMax(intMin(1, "a sliding window's buckets (default 60): its far edge moves by last/buckets"), MaxWindowBuckets),
		"max-keys": withMax(intMin(1, "the keys the window holds; a new key past it is refused (default 10000)"), MaxWindowKeys),
	}, "name", "on")
	w["description"] = "a window: counts, sums, averages over time per key, read by rules as a state ({window: NAME})"
	return w
}

// ruleSchema is one rule.
func ruleSchema() obj {
	schedule, change, closes := triggerSchemas()
	trigger := obj{"oneOf": []any{patternSchema, schedule, change, closes}}
	steps := obj{"type": "array", "minItems": 1, "items": stepSchema(), "description": "what a run does, in order; at least one"}
	props := map[string]obj{
		"id":          withDoc(nameSchema, "required: the rule's id, unique across the rules directory (lower case, digits, - and _)"),
		"description": {"type": "string", "description": "what the rule is for, shown by ruled rule show and the console"},
		"on": {"description": "required: what triggers the rule: a topic pattern, a schedule, a change, a window's close, or a list of them",
			"oneOf": []any{patternSchema, schedule, change, closes, obj{"type": "array", "minItems": 1, "items": trigger}}},
		"when":     conditionSchema("the rule's condition, asked of every trigger: a run starts only when it holds"),
		"mode":     enum("what a trigger does while a run of its key is live: single (default: ignored), restart, queue, parallel", modeNames[:]...),
		"max":      intMin(1, "queue: runs live and waiting; parallel: runs at once (default 10)"),
		"max-keys": withMax(intMin(1, "keys that hold something of the rule at once (runs, queued or throttled triggers, a cooldown, a debounce); a new key past it is refused (default 10000)"), MaxMaxKeys),
		"cooldown": withDoc(durationSchema, "a key's triggers are ignored this long after its run starts"),
		"debounce": {"description": "one run, with the last trigger, once a key's triggers stop for this long",
			"oneOf": []any{durationSchema, closed(debounceKeys, map[string]obj{"for": durationSchema, "max-wait": durationSchema}, "for")}},
		"throttle": withDoc(closed(throttleKeys, map[string]obj{
			"limit":  intMin(1, "runs a key may start every per"),
			"per":    durationSchema,
			"burst":  intMin(1, "runs at once after a quiet time (default limit)"),
			"excess": enum("a trigger past the limit: queue (default: waits its turn) or drop", "queue", "drop"),
		}, "limit", "per"), "bounds how often a key's runs start"),
		"repeat": {"description": "runs the steps again: a number of passes, or {passes, interval}", "oneOf": []any{
			intMin(1, "passes in all"),
			closed(repeatKeys, map[string]obj{"passes": intMin(1, "passes in all (default 1)"), "interval": durationSchema}),
		}},
		"cancel-on": {"description": "events that end the rule's live runs: a pattern, a list of them, or a list of {topic, match}", "oneOf": []any{
			patternSchema,
			obj{"type": "array", "minItems": 1, "items": obj{"oneOf": []any{patternSchema,
				closed(cancelKeys, map[string]obj{"topic": patternSchema, "match": pathsSchema}, "topic")}}},
			closed(cancelKeys, map[string]obj{"topic": patternSchema, "match": pathsSchema}, "topic"),
		}},
		"priority":         intMin(0, "the rule's band: 0 is served first"),
		"key":              {"type": "string", "description": "the event field path runs are counted by (concurrency, cooldown, fairness); \"\" for the whole rule"},
		"on-plugin-change": enum("a step waiting across a change of its plugin: pin (default: the module it was scheduled with), upgrade, drop", pluginChangeNames[:]...),
		"once":             {"type": "boolean", "description": "the rule completes after its first successful run"},
		"on-error": withDoc(closed(onErrorKeys, map[string]obj{
			"max":    intMin(1, "errors within within that fail the rule (default 8)"),
			"within": durationSchema,
			"sleep":  durationSchema,
		}), "the rule's error budget"),
		"on-pause": {"description": "a trigger while the rule is paused or asleep: drop, hold, or {hold: N}", "oneOf": []any{
			enum("drop or hold", "drop", "hold"),
			closed([]string{"hold"}, map[string]obj{"hold": intMin(1, "triggers held at most")}, "hold"),
		}},
		"retry": retrySchema("every step's retry (a step's own replaces it)"),
		"vars": {"type": "object", "description": "the rule's variables, worked out from the trigger when a run starts ({{path}} templates); steps read vars.<name>",
			"propertyNames": nameSchema},
		"states": {"type": "object", "description": "the entities' states the rule reads, by name (states.<name>.<path>), read when each call is made; a missing or stale state is nil",
			"propertyNames": nameSchema, "maxProperties": MaxStateReads,
			"additionalProperties": obj{"oneOf": []any{
				obj{"type": "string", "minLength": 1, "maxLength": MaxEntityID, "description": "an entity id: a topic, or <topic>/<key>; {{path}} placeholders are the trigger's"},
				closed(stateReadKeys, map[string]obj{
					"entity":  {"type": "string", "minLength": 1, "maxLength": MaxEntityID, "description": "an entity id: a topic, or <topic>/<key>; {{path}} placeholders are the trigger's"},
					"max-age": withDoc(durationSchema, "how long after its last report the state counts as missing"),
					"window":  withDoc(nameSchema, "a window's name (windows:): the read is its aggregates, states.<name>.count, .avg …"),
					"key":     {"type": "string", "minLength": 1, "maxLength": MaxEntityID, "description": "with window: the key to read ({{path}} from the trigger); left out: the trigger's value of the window's key"},
				}),
			}}},
		"max-age": withDoc(durationSchema, "how long after its last report a state the rule reads counts as missing (a read's own max-age replaces it)"),
		"steps":   steps,
		"finally": {"type": "array", "minItems": 1, "items": finallySchema(), "description": "steps run when a run ends, for any reason but the daemon stopping"},
	}
	r := closed(ruleKeys, props, "id", "on")
	r["description"] = "a rule: which topics trigger it, under which condition, and which steps it runs"
	return r
}

// stepSchema is one step: an action, or a wait-for.
func stepSchema() obj {
	wait := closed(waitKeys, map[string]obj{
		"topic":      patternSchema,
		"match":      pathsSchema,
		"when":       conditionSchema("a condition on the awaited event (and steps., vars.)"),
		"timeout":    withDoc(durationSchema, "required: how long to wait, at most 8784h"),
		"on-timeout": enum("when no event came: continue (default; steps.<name>.timeout is true) or stop", waitTimeoutNames[:]...),
	}, "topic", "timeout")
	s := closed(stepKeys, map[string]obj{
		"name":     withDoc(nameSchema, "unique in the rule; later steps read its output as steps.<name>"),
		"do":       doSchema,
		"with":     withSchema,
		"when":     conditionSchema("the step runs only when it holds"),
		"after":    withDoc(durationSchema, "waits this long after the step before"),
		"durable":  {"type": "boolean", "description": "the wait survives a restart (needs after)"},
		"on-error": enum("a failure, after its retries: stop (default: the run ends) or continue", stepOnErrorNames[:]...),
		"retry":    retrySchema("a failed action is tried again"),
		"wait-for": withDoc(wait, "waits for an event instead of running an action"),
	})
	s["description"] = "a step: do (an action) or wait-for (an event)"
	return s
}

func finallySchema() obj {
	return closed(finallyKeys, map[string]obj{
		"name": nameSchema,
		"do":   doSchema,
		"with": withSchema,
		"when": conditionSchema("the finally step runs only when it holds"),
	}, "do")
}

// Schema is the rule file's JSON Schema (draft-07), indented: a list of
// rules, or a mapping whose rules: is that list.
func Schema() []byte {
	list := obj{"type": "array", "items": obj{"$ref": "#/definitions/rule"}}
	return schema.Render(SchemaID, "ruled rule file", "A list of rules, or a mapping whose rules: is that list (docs/rules.md).",
		obj{"rule": ruleSchema(), "window": windowSchema()}, obj{"oneOf": []any{list, closed(fileKeys, map[string]obj{"rules": list,
			"windows": {"type": "array", "items": obj{"$ref": "#/definitions/window"}, "description": "windows the directory's rules read (states: {w: {window: NAME}})"}}),
			obj{"type": "null", "description": "an empty file"}}})
}

// withMax is an integer schema with a maximum.
func withMax(o schema.Object, max int) schema.Object {
	o["maximum"] = max
	return o
}
