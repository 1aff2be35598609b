// Package reload says when the engine reads its rules and plugins again:
// a Watcher over the rules and plugins directories (fsnotify, debounced,
// and run at the lowest thread priority so a reload does not compete with
// the workers serving rules), and a Refresher that reads them every
// interval and when kicked (another process announced a change, or a
// deployment moved).
//
// Around them, what tells a process to reload: the announcement on the
// control channel that another process's rules changed (Announce,
// FromElsewhere), and deployed mode, whose Deployed writes what `ruled
// deploy` put in Redis into the directories the engine loads (Sync).
//
// It owns timing and the files' arrival only: which files changed, when
// to try again a file whose plugin is backing off. What a reload does —
// parse, compile, swap — is the caller's function. The Watcher and the
// Refresher each own one goroutine, stopped by its Close; Deployed owns
// none.
package reload
