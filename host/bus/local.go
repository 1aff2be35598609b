package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// Local is the in-process bus of the embedded default: Publish hands the
// event to every subscriber, in subscription order, on the publisher's own
// goroutine, and returns when the last one has.
//
// That makes a subscriber's handler part of the publisher's latency, so a
// handler must not block or do the work itself: the one ruled installs (the
// rule runner) only matches topics and queues work on its pool, then returns.
// A handler that needs more must hand the event to a goroutine of its own.
//
// The zero Local is ready to use. It is safe for concurrent use and owns no
// goroutine. Events published concurrently reach each subscriber in no
// defined order; one publisher's events arrive in the order it published them.
type Local struct {
	mu   sync.Mutex                  // serialises Subscribe and cancel
	subs atomic.Pointer[[]*localSub] // copy-on-write: Publish takes no lock
}

type localSub struct {
	h   func(*Event)
	off atomic.Bool
}

// Publish delivers e to every subscriber. It refuses a nil event and a topic
// ingest may not publish (CheckTopic: reserved ruled.* topics, wildcards), and
// returns ctx's error if ctx is done before delivery starts; once started,
// delivery is not interrupted. Having no subscriber is not an error.
//
// A handler may call Subscribe or a cancel func: Publish holds no lock while
// it delivers.
func (l *Local) Publish(ctx context.Context, e *Event) error {
	if err := checkPublish(e); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bus: publish: %w", err)
	}
	if p := l.subs.Load(); p != nil {
		for _, s := range *p {
			if !s.off.Load() {
				s.h(e)
			}
		}
	}
	return nil
}

// Subscribe adds h after the existing subscribers; h must not be nil. The
// returned cancel removes it; calling cancel again does nothing. After cancel
// returns, no Publish that starts later calls h, but one already delivering
// may still call it once: cancel does not wait, so that a handler may cancel
// itself.
func (l *Local) Subscribe(h func(*Event)) (cancel func()) {
	if h == nil {
		panic("bus: Local.Subscribe with a nil handler")
	}
	s := &localSub{h: h}
	l.mu.Lock()
	var next []*localSub
	if p := l.subs.Load(); p != nil {
		next = slices.Clone(*p)
	}
	next = append(next, s)
	l.subs.Store(&next)
	l.mu.Unlock()
	return func() { l.unsubscribe(s) }
}

func (l *Local) unsubscribe(s *localSub) {
	if s.off.Swap(true) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.subs.Load()
	next := slices.DeleteFunc(slices.Clone(*p), func(x *localSub) bool { return x == s })
	l.subs.Store(&next)
}

// checkPublish is what both buses refuse to carry: nothing, or a topic
// ingest and plugins may not publish, so that a hand-built Event cannot slip
// a reserved topic past the Decoder.
func checkPublish(e *Event) error {
	if e == nil {
		return errors.New("bus: publish a nil event")
	}
	if err := CheckTopic(e.Topic); err != nil {
		return fmt.Errorf("bus: publish: %w", err)
	}
	return nil
}
