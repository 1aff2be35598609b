// Package regular reads the files ruled is given to load — rule files,
// plugin modules, a config — only if they are regular files of a bounded
// size. A FIFO dropped in the rules directory blocked the reloader forever
// (an open for reading waits for a writer; SIGTERM then hung), a FIFO as a
// plugin kept the daemon from ever becoming ready, and /dev/zero linked as
// a rule file took 1.86 GB in two seconds. It also writes the files a
// later start loads, whole or not at all (WriteFile). It owns no goroutine
// and no state.
package regular
