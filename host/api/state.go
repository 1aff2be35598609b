package api

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/ruled-dev/ruled/host/status"
)

// States is what GET /v1/state reads: the entities' states (the daemon's
// state table).
type States interface {
	// States is up to limit entities whose ids start with prefix, in id
	// order, and how many there are in all.
	States(prefix string, limit int) ([]status.Entity, int)
	// State is one entity's state.
	State(id string) (status.Entity, bool)
	// Forget removes one entity's state, from the store too before it
	// returns; false when there was none (DELETE /v1/state/{id}).
	Forget(id string) (bool, error)
}

// Bounds of GET /v1/state's answer: the table holds up to 10,000
// entities by default, and a list of all is not what a page needs.
const (
	DefaultStateLimit = 1000
	MaxStateLimit     = 10_000
)

// ParseStateQuery reads GET /v1/state's prefix and limit.
func ParseStateQuery(q url.Values) (prefix string, limit int, err error) {
	prefix, limit = q.Get("prefix"), DefaultStateLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 || n > MaxStateLimit {
			return "", 0, fmt.Errorf("limit %q: want a number from 1 to %d", s, MaxStateLimit)
		}
		limit = n
	}
	return prefix, limit, nil
}

// serveStates serves GET /v1/state (?prefix=, ?limit=; the count of all
// that matched in X-Ruled-Total), GET /v1/state/{id} and DELETE
// /v1/state/{id} (204, or 404 for none). Without a state table they
// answer 404, saying so.
func serveStates(mux *http.ServeMux, s States) {
	off := func(w http.ResponseWriter) {
		http.Error(w, "no entity state is kept here (state.max-entities is -1)", http.StatusNotFound)
	}
	mux.HandleFunc("GET /v1/state", func(w http.ResponseWriter, r *http.Request) {
		if s == nil {
			off(w)
			return
		}
		prefix, limit, err := ParseStateQuery(r.URL.Query())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		list, total := s.States(prefix, limit)
		if list == nil {
			list = []status.Entity{}
		}
		w.Header().Set(TotalHeader, strconv.Itoa(total))
		writeJSON(w, list)
	})
	mux.HandleFunc("GET /v1/state/{id...}", func(w http.ResponseWriter, r *http.Request) {
		if s == nil {
			off(w)
			return
		}
		id := r.PathValue("id")
		e, ok := s.State(id)
		if !ok {
			http.Error(w, fmt.Sprintf("no entity %q has a state", id), http.StatusNotFound)
			return
		}
		writeJSON(w, e)
	})
	mux.HandleFunc("DELETE /v1/state/{id...}", func(w http.ResponseWriter, r *http.Request) {
		if s == nil {
			off(w)
			return
		}
		id := r.PathValue("id")
		switch ok, err := s.Forget(id); {
		case err != nil:
			http.Error(w, fmt.Sprintf("entity %q is forgotten here; the store did not take it yet (%v): a restart before it does brings it back", id, err), http.StatusServiceUnavailable)
		case !ok:
			http.Error(w, fmt.Sprintf("no entity %q has a state", id), http.StatusNotFound)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})
}
