package observe

import (
	"net/http"
	"strconv"
	"time"
)

// ChangesPoll is how often Changes looks at its number: a console's view
// follows the engine within a quarter second, and a quiet engine costs a
// watcher four reads of a few counters a second.
const ChangesPoll = 250 * time.Millisecond

// changesKeepAlive is how long a quiet stream goes without a line: long
// enough to cost nothing, short enough that a proxy or a phone that
// dropped the connection is found out and the page reconnects.
const changesKeepAlive = 15 * time.Second

// Changes streams, as NDJSON, {"changes":N} — N being what changes
// returns (engine.Engine.Changes: a number that grows whenever what the
// engine reports does) — once when the client connects and again each
// time N differs, looking every poll, and every 15 s even when it does
// not. A watcher (the console) reads the line as "look again": the
// stream says when, the API's ordinary endpoints say what, so the page
// never rebuilds what did not change and never waits on a timer for what
// did. It stops when the client goes away or quit is closed; the
// goroutine is the request's.
func Changes(changes func() uint64, poll time.Duration, quit <-chan struct{}) http.Handler {
	if poll <= 0 {
		poll = ChangesPoll
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fl, ok := w.(http.Flusher)
		if !ok {
			http.Error(w, "streaming unsupported", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		tick := time.NewTicker(poll)
		defer tick.Stop()
		var buf []byte
		send := func(n uint64) bool {
			buf = strconv.AppendUint(append(buf[:0], `{"changes":`...), n, 10)
			buf = append(buf, "}\n"...)
			if _, err := w.Write(buf); err != nil {
				return false
			}
			fl.Flush()
			return true
		}
		last := changes()
		if !send(last) {
			return
		}
		sent := time.Now()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-quit:
				return
			case <-tick.C:
				n := changes()
				if n == last && time.Since(sent) < changesKeepAlive {
					continue
				}
				last, sent = n, time.Now()
				if !send(n) {
					return
				}
			}
		}
	})
}
