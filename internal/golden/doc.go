// Package golden compares a test's output with a file under testdata, or
// rewrites the file when the test runs with -rewrite: the expected text
// lives beside the test, reviewable in a diff, instead of in a string
// literal. Whole files (Check), or datadriven scripts of commands and
// their expected output (RunScript), the repository's one golden
// mechanism. It owns the -rewrite flag of the test binaries that import it
// (so a package with a -rewrite flag of its own must not), refuses to
// compare anything but whole files, and owns no goroutine. Tests only.
package golden
