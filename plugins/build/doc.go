// Package build is the first-party plugins as built (expr, publish, log,
// fire, http), for `ruled new rules`, which copies those its rules use
// into a new rule set's plugins directory.
package build
