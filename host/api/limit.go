package api

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Limiter bounds how many requests each client (by remote IP) makes: a
// token bucket per client, Rate tokens a second up to Burst. A request
// without a token is answered 429 with Retry-After and counted; nothing
// else happens to it. It guards the TCP API, where the network can reach
// the daemon; the unix socket (mode 0600, the device's own tools) is not
// limited.
//
// Clients are forgotten once their bucket is full again, and at most
// MaxClients are tracked: past that, unknown clients share one bucket, so
// a flood of spoofed addresses cannot grow the map without bound.
type Limiter struct {
	Rate  float64 // tokens per second. default: DefaultRate
	Burst int     // bucket size. default: DefaultBurst
	// Now is the clock. default: time.Now.
	Now func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
	refused atomic.Uint64
}

// Limiter defaults: generous for an operator's scripts and a console
// polling every second, far below what would keep a device's two cores busy.
const (
	DefaultRate  = 50
	DefaultBurst = 100
	MaxClients   = 4096
)

type bucket struct {
	tokens float64
	at     time.Time
}

const overflowClient = "\x00others"

// Allow takes a token for client, or says how long until one is there.
func (l *Limiter) Allow(client string) (bool, time.Duration) {
	rate, burst := l.Rate, float64(l.Burst)
	if rate <= 0 {
		rate = DefaultRate
	}
	if burst <= 0 {
		burst = DefaultBurst
	}
	now := time.Now()
	if l.Now != nil {
		now = l.Now()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buckets == nil {
		l.buckets = map[string]*bucket{}
	}
	b := l.buckets[client]
	if b == nil {
		// MaxClients-1 clients of their own, and the shared bucket.
		if len(l.buckets) >= MaxClients-1 {
			l.sweep(now, rate, burst)
		}
		if len(l.buckets) >= MaxClients-1 {
			client = overflowClient
			b = l.buckets[client]
		}
		if b == nil {
			b = &bucket{tokens: burst, at: now}
			l.buckets[client] = b
		}
	}
	b.tokens = math.Min(burst, b.tokens+now.Sub(b.at).Seconds()*rate)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	l.refused.Add(1)
	return false, time.Duration((1 - b.tokens) / rate * float64(time.Second))
}

// sweep forgets the clients whose bucket has refilled.
func (l *Limiter) sweep(now time.Time, rate, burst float64) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*rate >= burst {
			delete(l.buckets, k)
		}
	}
}

// Refused counts the requests turned away.
func (l *Limiter) Refused() uint64 { return l.refused.Load() }

// Wrap returns h behind the limiter.
func (l *Limiter) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			client = r.RemoteAddr
		}
		if ok, wait := l.Allow(client); !ok {
			secs := int(math.Ceil(wait.Seconds()))
			w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
			http.Error(w, fmt.Sprintf("api: too many requests from %s: retry in %v", client, wait.Round(time.Millisecond)),
				http.StatusTooManyRequests)
			return
		}
		h.ServeHTTP(w, r)
	})
}
