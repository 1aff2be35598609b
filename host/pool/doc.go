// Package pool runs jobs on a fixed set of workers, taking them from one
// queue ordered by priority band (band 0 first) with per-key fairness inside
// a band (the keys take turns, each in its own arrival order), so a rule
// flooding one band cannot starve a band above it, and one busy vehicle
// cannot starve another within a band.
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
