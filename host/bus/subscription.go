package bus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// subscribeWait bounds Subscribe's wait for Redis when its ctx has no deadline.
const subscribeWait = 10 * time.Second

// Subscription is one subscription to a Redis bus channel. It owns one
// goroutine, which receives, decodes and calls the handler; Close stops it.
//
// Live says whether it is subscribed now. After a loss (Redis restarted,
// the connection dropped) go-redis resubscribes; once Redis has confirmed,
// the subscription is live again and pings on its own connection. Redis
// answers commands in order, so when the pong comes back every message
// Redis took before the ping has been delivered — or was taken while the
// subscription was down, and is lost to it. RedisConfig.Resumed hears of
// that moment, with the time the ping was sent: whatever a process
// published and saw return before it, and has not received, never will be.
type Subscription struct {
	ps       *redis.PubSub
	channel  string
	log      Logger
	resumed  func(channel string, before time.Time)
	stop     context.CancelFunc
	done     chan struct{}
	once     sync.Once
	live     atomic.Bool
	marker   string    // the pending resume ping's payload
	markerAt time.Time // when it was sent
	markers  int
}

// Live reports whether the subscription is subscribed now: false from the
// moment a loss shows until Redis has confirmed it again.
func (s *Subscription) Live() bool { return s.live.Load() }

func (r *Redis) subscribe(ctx context.Context, channel string, deliver func(*redis.Message)) (*Subscription, error) {
	if _, ok := ctx.Deadline(); !ok {
		// go-redis bounds reads by deadlines, not by cancellation.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, subscribeWait)
		defer cancel()
	}
	ps := r.client.Subscribe(ctx, channel)
	// go-redis sends SUBSCRIBE without waiting: wait for the confirmation,
	// so that the caller knows it will receive what is published next.
	for {
		msg, err := ps.Receive(ctx)
		if err != nil {
			ps.Close()
			return nil, fmt.Errorf("bus: subscribe to redis channel %s: %w", channel, err)
		}
		if _, ok := msg.(*redis.Subscription); ok {
			break
		}
	}
	runCtx, stop := context.WithCancel(context.Background())
	s := &Subscription{ps: ps, channel: channel, log: r.cfg.Logger, resumed: r.cfg.Resumed, stop: stop, done: make(chan struct{})}
	s.live.Store(true)
	go s.run(runCtx, deliver)
	return s, nil
}

// Close ends the subscription and returns once its goroutine has exited, so
// the handler is not called after Close returns. It must not be called from
// the handler, which the goroutine is running: that would wait forever.
// Closing again does nothing.
func (s *Subscription) Close() error {
	var err error
	s.once.Do(func() {
		s.stop() // first: a reconnect in progress gives up
		if cerr := s.ps.Close(); cerr != nil {
			err = fmt.Errorf("bus: close redis subscription %s: %w", s.channel, cerr)
		}
		<-s.done
	})
	return err
}

// run receives until Close. go-redis replaces a broken connection and
// resubscribes on the next receive; run only paces the retries and says
// when events may have been lost.
func (s *Subscription) run(ctx context.Context, deliver func(*redis.Message)) {
	defer close(s.done)
	var (
		wait   time.Duration // before retrying after an error; 0 while healthy
		pinged bool          // and no answer yet
	)
	timer := time.NewTimer(0)
	<-timer.C
	for {
		msg, err := s.ps.ReceiveTimeout(ctx, pingAfter)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if isTimeout(err) && wait == 0 && !pinged {
				// Quiet: ping, so that a dead connection fails and is
				// replaced. The pong comes back through ReceiveTimeout.
				s.ps.Ping(ctx)
				pinged = true
				continue
			}
			s.live.Store(false)
			s.marker = ""
			if wait == 0 {
				s.log.Warn("bus: redis subscription lost; events published until it is back are lost", "channel", s.channel, "error", err.Error())
				wait = 20 * time.Millisecond
			} else {
				// Short: while it is down, a publisher that checks Live
				// refuses what it would publish.
				wait = min(2*wait, 250*time.Millisecond)
			}
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
			continue
		}
		pinged = false
		if wait != 0 {
			s.log.Info("bus: redis subscription back", "channel", s.channel)
			wait = 0
		}
		switch m := msg.(type) {
		case *redis.Message:
			deliver(m)
		case *redis.Subscription:
			if m.Kind == "subscribe" && !s.live.Load() {
				s.live.Store(true)
				s.markers++
				s.marker = "ruled-resumed-" + strconv.Itoa(s.markers)
				s.markerAt = time.Now()
				if err := s.ps.Ping(ctx, s.marker); err != nil {
					s.marker = "" // the connection went again: the next confirmation pings anew
				}
			}
		case *redis.Pong:
			if s.marker != "" && m.Payload == s.marker {
				s.marker = ""
				if s.resumed != nil {
					s.resumed(s.channel, s.markerAt)
				}
			}
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
