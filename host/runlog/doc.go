// Package runlog is the execution log (ARCHITECTURE.md, "Where the design came from"): every run as a tree of
// nodes — its trigger, its condition, each step with the module that ran
// it, delays, cancels, drops with their reason, and the sub-runs its
// actions fired — written while the run goes, so a run in progress shows
// the node it stands at, and read back as a flat, depth-marked list a
// client renders by indenting (Tree, Render).
//
// It owns the entries (Run, Node), their keys (ruled:log:<run>:exec and
// ruled:log:<run>:n:<seq, six digits>) and the writer (Log): a bounded
// queue in front of one goroutine that stages batches and commits them by
// key — or, to a store that needs no staging (Appender: the device's
// segment log), hands each batch over with every entry's run and node
// number — so a run never waits on the log: when the queue is full an
// entry is dropped and counted. It owns retention (Retention: runs, per rule and
// outcome, bytes; Index, the runs a pass chooses from, which an Appender
// keeps over its own runs) and the reading (Tree, List).
//
// A killed process loses what the writer had not written: the last Flush
// interval's entries and a batch in flight. Unended says what the next
// start makes of a run the log has as running and nothing resumes:
// Unlogged when it was waiting in a durable delay (its record is gone, so
// it went on), Interrupted otherwise.
//
// It refuses to write: the stores (host/store's SegmentLog, RedisLog and
// BoltLog) derive where an entry goes from its key (or its record's run
// and number) alone and refuse any outside the log. It knows nothing of rules or plugins: the sequencer tells it what
// happened (host/seq's Tracer), in its own words.
package runlog
