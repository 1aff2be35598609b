package task

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ruled-dev/ruled/host/keyspace"
)

// ErrStateNotFound is what StateStore.Load returns for a rule with no
// stored state; the rule starts Runnable.
var ErrStateNotFound = errors.New("task: state not found")

// StateStore persists rules' states. Since the rule is given on each call a
// single store serves every rule, and implementations must be safe for
// concurrent use.
//
// Adapted from the seed: a Load error other than ErrStateNotFound does not
// end the rule's task; Tasks sets the rule failed with the reason (a state
// that will not decode) or, for a store it cannot reach at all, reports the
// error so the daemon retries before starting the rules. A Store error
// refuses the transition, as in the seed.
type StateStore interface {
	Load(rule string) (*State, error)
	Store(rule string, s *State) error
}

// TasksHash is the datastore hash rule states are kept in, one field per
// rule id.
const TasksHash = keyspace.Tasks

// Hasher is the datastore surface HashStore needs (the same three
// operations the sequencer's pending store uses).
type Hasher interface {
	HSet(key, field string, value any) error
	HGetAll(key string) (map[string]string, error)
	HDel(key string, fields ...string) error
}

// HashStore keeps states as JSON in TasksHash.
type HashStore struct{ h Hasher }

// NewHashStore returns a StateStore over h.
func NewHashStore(h Hasher) *HashStore { return &HashStore{h: h} }

// Load reads one rule's state.
func (s *HashStore) Load(rule string) (*State, error) {
	all, err := s.LoadAll()
	if err != nil {
		return nil, err
	}
	st, ok := all[rule]
	if !ok {
		return nil, ErrStateNotFound
	}
	return st.State, st.Err
}

// Stored is one rule's stored state, or why it did not decode.
type Stored struct {
	State *State
	Err   error
}

// LoadAll reads every rule's state in one round trip, for start-up.
func (s *HashStore) LoadAll() (map[string]Stored, error) {
	all, err := s.h.HGetAll(TasksHash)
	if err != nil {
		return nil, fmt.Errorf("task: load states: %w", err)
	}
	out := make(map[string]Stored, len(all))
	for rule, v := range all {
		var st State
		if err := json.Unmarshal([]byte(v), &st); err != nil {
			out[rule] = Stored{Err: fmt.Errorf("state does not decode: %w", err)}
			continue
		}
		if !known(st.Code) {
			out[rule] = Stored{Err: fmt.Errorf("state %q is not one this ruled knows", st.Code)}
			continue
		}
		out[rule] = Stored{State: &st}
	}
	return out, nil
}

// Store writes a rule's state.
func (s *HashStore) Store(rule string, st *State) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := s.h.HSet(TasksHash, rule, b); err != nil {
		return fmt.Errorf("task: store state of %s: %w", rule, err)
	}
	return nil
}

func known(c StateCode) bool {
	for _, s := range States {
		if s == c {
			return true
		}
	}
	return false
}
