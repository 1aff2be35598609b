// Package reload says when the engine reads its rules and plugins again:
// a Watcher over the rules and plugins directories (fsnotify, debounced,
// and run at the lowest thread priority so a reload does not compete with
// the workers serving rules), and a Refresher that reads them every
// interval and when kicked (another process announced a change, or a
// deployment moved).
//
// It owns timing only: which files changed, when to try again a file
// whose plugin is backing off. What a reload does — parse, compile,
// swap — is the caller's function. Each type owns one goroutine, stopped
// by its Close.
package reload
