// Package schematest reads YAML files as an editor's schema validator
// does and checks them against ruled's JSON Schemas (internal/schema):
// the schema tests of host/rules and sdk/ruletest/scenario share it. It
// owns no schema and nothing that runs outside a test.
package schematest
