package store

import (
	"errors"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

// MaxGroup is the most writes one commit takes: a transaction's pages
// are held in memory until it commits, and a caller waits for the whole
// group's fsync, so a burst is cut into groups of this size.
const MaxGroup = 256

// group commits writes that arrive together in one bbolt transaction and
// one fsync (group commit): a write waits for the commit in progress, and
// every write that arrived meanwhile goes in the next. No caller is told
// its write is done before the commit that holds it has been synced.
//
// The writer that finds no commit in progress leads: it commits what is
// queued, its own write included, and hands the lead to the first writer
// still queued, so no caller commits for others for longer than one
// group. No goroutine is kept: the lead is always a caller's.
//
// Why not bbolt's DB.Batch: it waits up to MaxBatchDelay (10 ms) for a
// group to fill, which a lone write on a device pays every time, and it
// retries a group whose function failed by running the functions again
// on their caller's goroutine. Here a lone write commits at once (the wait
// is only for a commit already in progress), and a failing write is taken
// out of its group and answered with its own error; the others are
// committed without it.
type group struct {
	mu      sync.Mutex
	queue   []*write
	leading bool

	commits, writes atomic.Uint64
}

// write is one caller's function and where its result goes.
type write struct {
	fn   func(*bolt.Tx) error
	done chan error // errLead: commit the queue yourself
}

// errLead tells a queued writer that the lead is its.
var errLead = errors.New("lead")

// do runs fn in a transaction shared with the writes queued beside it
// and returns once that transaction is on the disk (nil), or fn's error,
// or the commit's.
func (g *group) do(db *bolt.DB, fn func(*bolt.Tx) error) error {
	w := &write{fn: fn, done: make(chan error, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, w)
	if g.leading {
		g.mu.Unlock()
		if err := <-w.done; err != errLead {
			return err
		}
		g.mu.Lock()
	} else {
		g.leading = true
	}
	// Leading: commit what is queued (w is in it), then pass the lead on.
	n := min(len(g.queue), MaxGroup)
	ws := g.queue[:n:n]
	g.queue = g.queue[n:]
	g.mu.Unlock()
	g.commitOrHandOn(db, ws)
	return <-w.done
}

// errPanicked answers the writes of a group whose commit panicked.
var errPanicked = errors.New("store: a write of its group panicked")

// commitOrHandOn commits ws, then hands the lead to the first writer
// queued since — also when a write's function panics (a caller that
// recovers, as net/http does, must not leave every later write waiting
// for a lead that never comes): then ws are answered with errPanicked
// and the panic goes on.
func (g *group) commitOrHandOn(db *bolt.DB, ws []*write) {
	defer func() {
		p := recover()
		if p != nil {
			for _, w := range ws {
				select { // one already answered keeps its answer
				case w.done <- errPanicked:
				default:
				}
			}
		}
		g.mu.Lock()
		if len(g.queue) > 0 {
			g.queue[0].done <- errLead
		} else {
			g.leading = false
			g.queue = nil
		}
		g.mu.Unlock()
		if p != nil {
			panic(p)
		}
	}()
	g.commit(db, ws)
}

// commit runs ws in one transaction and answers each. A write whose
// function fails is answered with its error and the rest committed
// without it: the transaction cannot take back one write's changes.
func (g *group) commit(db *bolt.DB, ws []*write) {
	for len(ws) > 0 {
		failed := -1
		var ferr error
		err := db.Update(func(tx *bolt.Tx) error {
			changed := false
			for i, w := range ws {
				switch err := w.fn(tx); {
				case err == nil:
					changed = true
				case err != errNoChange:
					failed, ferr = i, err
					return err
				}
			}
			if !changed {
				return errNoChange
			}
			return nil
		})
		if failed >= 0 {
			ws[failed].done <- ferr
			ws = append(ws[:failed:failed], ws[failed+1:]...)
			continue
		}
		if err == errNoChange {
			err = nil
		} else if err == nil {
			g.commits.Add(1)
			g.writes.Add(uint64(len(ws)))
		}
		for _, w := range ws {
			w.done <- err
		}
		return
	}
}

// Commits reports how many write transactions the store committed and how
// many writes they held: the second over the first is the mean group.
func (b *Bolt) Commits() (commits, writes uint64) {
	return b.group.commits.Load(), b.group.writes.Load()
}
