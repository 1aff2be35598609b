// Package schema builds the JSON Schemas (draft-07) of ruled's YAML
// files — rule files (host/rules) and scenario files
// (sdk/ruletest/scenario) — from their parsers' own key tables, for
// editors that complete and check YAML as it is typed.
//
// It owns the few constructors those schemas share: an object closed to
// exactly a parser's keys (a key with no schema, or a schema for a key the
// parser does not take, panics: the two cannot drift), enums, durations,
// and the rendering. It refuses to know any file's keys, and to validate
// anything (tests do, with a validator an editor's would agree with).
package schema
