package reload

import "time"

// Refresher calls its function every interval and whenever kicked, one
// call at a time, on its own goroutine; kicks during a call fold into one
// more call after it.
type Refresher struct {
	kick chan struct{}
	stop chan struct{}
	done chan struct{}
}

// Refresh starts calling fn every interval (never, when interval ≤ 0) and
// on Kick. Close stops it.
func Refresh(interval time.Duration, fn func()) *Refresher {
	r := &Refresher{kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	var tick <-chan time.Time
	var t *time.Ticker
	if interval > 0 {
		t = time.NewTicker(interval)
		tick = t.C
	}
	go func() {
		defer close(r.done)
		if t != nil {
			defer t.Stop()
		}
		for {
			select {
			case <-r.stop:
				return
			case <-tick:
			case <-r.kick:
			}
			fn()
		}
	}()
	return r
}

// Kick asks for a call now; one already asked for is enough.
func (r *Refresher) Kick() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Close stops the refresher and waits for a call in progress.
func (r *Refresher) Close() error {
	close(r.stop)
	<-r.done
	return nil
}
