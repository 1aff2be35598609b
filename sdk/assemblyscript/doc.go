// Package assemblyscript is the AssemblyScript SDK's package files, for
// `ruled new plugin --lang as`, which writes them into a new plugin's
// ruled-sdk/ directory and installs the SDK from there (npm's file:
// dependency): nothing is fetched but AssemblyScript itself.
package assemblyscript
