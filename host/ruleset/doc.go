// Package ruleset owns the rules a process has loaded: an immutable Set
// (the compiled sequences by id, the topic → rule index, the problems) that
// readers use without locks, and the Loader that reads the rules directory
// again and replaces the Set whole.
//
// A reload parses only files whose content changed, keeps a file's
// previous rules while its new content does not parse, refuses a rule id
// defined twice, and keeps a rule's compiled sequence while what it was
// compiled from (Config.Def) is unchanged, so its live runs are untouched.
// Problems are logged once, when they appear, and at most
// maxLoggedProblems of them.
//
// It refuses what is not the rule set's: how a rule is bound to plugins
// (Config.Compile, Config.Def, the parser's Config.Catalog), and what a
// change does to runs and rule states (the caller acts on the Change Load
// returns). It owns no goroutine.
package ruleset
