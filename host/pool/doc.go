// Package pool runs jobs on a fixed set of workers, taking them from one
// queue ordered by priority band (band 0 first); within a band, groups
// (the daemon's rules) share the workers by the time their jobs take — the
// group that has used the least worker time goes next — and within a
// group the keys take turns, each in its own arrival order. So a rule
// flooding one band cannot starve a band above it, a rule whose plugin
// takes 800 ms a call queues behind itself rather than in front of the
// rules beside it, and one busy vehicle cannot starve another within a
// rule. Each group's worker time, runs and longest wait are kept
// (Groups): a starved group shows there.
//
// The queue is woken on submit: no cadence, so an idle device adds no
// latency and wakes nothing. Only TrySubmit can be refused, when the queue
// holds Capacity jobs — it is what admission of a new trigger uses. Submit
// is never refused: the steps of runs already admitted, timer fires and
// replayed steps go through it, and their number is bounded by the runs
// admitted.
//
// The workers are the package's goroutines: New starts them and Stop ends
// them, after each finishes the job it is running.
package pool
