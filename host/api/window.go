package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// Windows is what GET /v1/windows/{name} reads: the rule files' windows
// (the daemon's window table).
type Windows interface {
	// Window is window name's value for key as JSON (its aggregates);
	// false when no window of that name is defined.
	Window(name, key string) ([]byte, bool)
	// Keys is up to limit of window name's keys, in order, and how many
	// it holds; false when no window of that name is defined.
	Keys(name string, limit int) ([]string, int, bool)
}

// WindowValue is GET /v1/windows/{name}?key=K's answer.
type WindowValue struct {
	Window string          `json:"window"`
	Key    string          `json:"key"`
	Value  json.RawMessage `json:"value"`
}

// WindowKeys is GET /v1/windows/{name}'s answer without a key.
type WindowKeys struct {
	Window string   `json:"window"`
	Keys   []string `json:"keys"`
	Total  int      `json:"total"`
}

// serveWindows serves GET /v1/windows/{name}: with ?key=K (or key= for a
// window of one value) its value for the key; without, its keys (?limit=,
// DefaultStateLimit; the count of all in total). Without windows kept
// it answers 404, saying so.
func serveWindows(mux *http.ServeMux, s Windows) {
	mux.HandleFunc("GET /v1/windows/{name}", func(w http.ResponseWriter, r *http.Request) {
		if s == nil {
			http.Error(w, "no window is kept here", http.StatusNotFound)
			return
		}
		name := r.PathValue("name")
		q := r.URL.Query()
		if q.Has("key") {
			b, ok := s.Window(name, q.Get("key"))
			if !ok {
				http.Error(w, fmt.Sprintf("no window %q is defined", name), http.StatusNotFound)
				return
			}
			writeJSON(w, WindowValue{Window: name, Key: q.Get("key"), Value: b})
			return
		}
		limit := DefaultStateLimit
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxStateLimit {
				http.Error(w, fmt.Sprintf("limit: want 1 to %d", MaxStateLimit), http.StatusBadRequest)
				return
			}
			limit = n
		}
		keys, total, ok := s.Keys(name, limit)
		if !ok {
			http.Error(w, fmt.Sprintf("no window %q is defined", name), http.StatusNotFound)
			return
		}
		if keys == nil {
			keys = []string{}
		}
		writeJSON(w, WindowKeys{Window: name, Keys: keys, Total: total})
	})
}
