// Package plugins holds ruled's first-party plugins. They are ordinary
// plugins: they reach the host only through ABI v1, and they pass through
// the same grants and limits as a third party's.
//
//   - publish, log, fire (publish/index.ts, log/index.ts, fire/index.ts):
//     actions written with the AssemblyScript SDK, their templates the
//     SDK's (sdk/assemblyscript/assembly/tmpl.ts). The builds are committed
//     in build/ so that `make run` needs no node; `make plugins-as`
//     rebuilds them and `make test` checks they match their source. A
//     module is about 40 KB, where the Go builds they replace were 2.3 MB
//     each and cost tens of MB of memory once compiled and instantiated
//     (issue 24's figures are in RATIONALE.md).
//   - expr (expr/index.ts): conditions written as expressions, the subset of
//     expr-lang host/exprcheck defines, parsed once per config.
//   - http (http/index.ts): an action that sends an HTTP request through the
//     host's allow-list.
//
// The tests here hold them to their references: TestExprDifferential to
// expr-lang, TestTemplatesMatchGo to the Go SDK's templates (sdk/go/tmpl).
package plugins
