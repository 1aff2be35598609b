package seq

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/ruled-dev/ruled/host/keyspace"
)

// PendingHash is the datastore hash durable steps are recorded in. One field
// per waiting step, keyed by the run's id.
const PendingHash = keyspace.Pending

// PendingVersion is the record format Put writes. Version 1 is the seed's
// format (a step by index, no remaining delay or write time); Load still
// reads it.
const PendingVersion = 2

// Pending is one step waiting out its after delay, written down so a service
// restart during the wait does not lose it. Rule and Step are what replay
// needs to find the step again; Iter is the repeat pass the run was on, so a
// replayed run finishes the passes it had left. Event is the trigger, because
// a step's when is evaluated against whatever fired its own run.
//
// FireAt is when the step is due, not when it was recorded: replay works out
// the remaining delay from it, and drops a record too far past due to be
// worth running. WrittenAt and Remaining say the same thing relative to the
// write, which is what lets replay tell a clock that jumped from a step that
// is overdue.
//
// Fingerprint is what the step was configured to do when the record was
// written. A user is free to edit their rule file while the service is down,
// and a name is only a name: without the fingerprint, rewriting a step would
// have the record fire whatever ended up under that name instead. Digest is
// the module the step called.
type Pending struct {
	Version   int    `json:"v,omitempty"`
	ID        string `json:"id"`
	Rule      string `json:"rule"`
	Source    string `json:"source"` // the trigger's topic
	Step      string `json:"step-name,omitempty"`
	StepIndex int    `json:"step"`
	Iter      int    `json:"iter"`
	// Attempt is the attempt the step makes when due, for the wait before
	// a retry (2 and up); 0 for a step's after.
	Attempt     int    `json:"attempt,omitempty"`
	FireAt      int64  `json:"fire-at"`                // unix milliseconds
	WrittenAt   int64  `json:"written-at,omitempty"`   // unix milliseconds
	Remaining   int64  `json:"remaining-ms,omitempty"` // the delay left when written
	Fingerprint string `json:"fingerprint"`
	Digest      string `json:"digest,omitempty"`
	Key         string `json:"key,omitempty"` // the run's concurrency key
	EventID     string `json:"event-id,omitempty"`
	EventTime   int64  `json:"event-time,omitempty"` // unix nanoseconds
	// Event is the trigger's JSON, Hops its bus.Event.Hops.
	Event json.RawMessage `json:"event"`
	// WaitKey is the key a run parked on a wait-for is listed under
	// (recordedWaitKey): a replay lists it without decoding Event.
	WaitKey string `json:"wait-key,omitempty"`
	Hops    int    `json:"hops,omitempty"`
	// Trace is the trigger's bus.Event.Trace: a replayed run goes on in
	// its trace.
	Trace string `json:"trace,omitempty"`
	// Started is when the run started (unix milliseconds), Parent the run
	// that fired it, Node the last node number it used in the execution
	// log and DelayNode the node it waits in: a replayed run keeps its
	// tree whole, continuing its numbering instead of overwriting nodes.
	Started   int64  `json:"started,omitempty"`
	Parent    string `json:"parent,omitempty"`
	Node      int    `json:"node,omitempty"`
	DelayNode int    `json:"delay-node,omitempty"`
	// Debounce, when set, makes the record a trigger held by its rule's
	// debounce rather than a run's step: when its burst began (unix
	// milliseconds); FireAt is when its quiet period ends.
	Debounce int64 `json:"debounce,omitempty"`
	// Finally, when set, makes the record a run that ended (how: completed,
	// failed, cancelled, restarted, dropped) and runs its finally steps;
	// replayed, they run again from the first.
	Finally string `json:"finally,omitempty"`
	// Steps are the outputs of the run's steps so far, by step name (a
	// JSON object of objects): a step replayed after a restart sees what
	// its run's earlier steps returned, not what they would return now.
	Steps json.RawMessage `json:"steps,omitempty"`
	// Vars are the run's variables as they were worked out when it
	// started, so that a replayed step sees them as its run did.
	Vars json.RawMessage `json:"vars,omitempty"`
	// Previous is the run's trigger's previous state, for a rule that
	// reads it (bus.Event.Prior): the state before the trigger, not the
	// state before whatever came since.
	Previous json.RawMessage `json:"previous,omitempty"`
}

// Due is FireAt as a time.
func (p *Pending) Due() time.Time { return time.UnixMilli(p.FireAt) }

// Hasher is the datastore surface the pending store needs. Depending on
// three operations rather than a whole client keeps the store testable, and
// keeps the package free of the datastore library.
type Hasher interface {
	HSet(key, field string, value any) error
	HGetAll(key string) (map[string]string, error)
	HDel(key string, fields ...string) error
}

// Commander is what NewClientHasher needs from a datastore client: the two
// hash operations the client has methods for, plus the raw command
// interface, because it has no HDel of its own.
type Commander interface {
	HSet(key, field string, value any) error
	HGetAll(key string) (map[string]string, error)
	Do(cmd string, args ...any) (any, error)
}

// NewClientHasher adapts a datastore client to Hasher.
func NewClientHasher(c Commander) Hasher { return clientHasher{c} }

type clientHasher struct{ Commander }

func (c clientHasher) HDel(key string, fields ...string) error {
	if len(fields) == 0 {
		return nil
	}
	args := make([]any, 0, len(fields)+1)
	args = append(args, key)
	for _, f := range fields {
		args = append(args, f)
	}
	_, err := c.Do("HDEL", args...)
	return err
}

var _ Hasher = clientHasher{}

// PendingStore reads and writes the pending records. There is no sweep and
// no expiry: a record is written when a durable step is scheduled and
// removed when it resolves, so a scooter with nothing running writes nothing
// at all.
type PendingStore struct {
	h   Hasher
	log Logger
	// hashOf, when set (Placement.HashOf), names the hash a record goes
	// in; where remembers, by run id, the hash of each record written or
	// loaded under it, so Drop (which has only the id) finds it.
	hashOf func(rule, key string) string
	where  sync.Map
	// mu guards digestOf and digests: the module digest of each record
	// written or loaded here that has one, by run id, and how many
	// records name each digest (Digests). Kept as records come and go, so
	// that knowing which modules records pin (the module store's
	// collection, `ruled status`) reads a map of digests, not every
	// record (issue 38: three reads of 100,000 records at a start).
	mu       sync.Mutex
	digestOf map[string]string
	digests  map[string]int
	// unread are the hashes whose last load failed: what records there
	// pin is not known (Known).
	unread map[string]bool
}

// NewPendingStore returns a store over h, filing each record under the
// hash p.HashOf names for its rule and concurrency key (nil: PendingHash),
// so a process taking a place over replays that place's records and no
// one else's (LoadHash). The zero Placement is a single process's.
func NewPendingStore(h Hasher, p Placement, log Logger) *PendingStore {
	return &PendingStore{h: h, log: log, hashOf: p.HashOf}
}

// hash is where a record of rule and key goes.
func (s *PendingStore) hash(rule, key string) string {
	if s.hashOf == nil {
		return PendingHash
	}
	return s.hashOf(rule, key)
}

// hashOfID is where the record of run id is.
func (s *PendingStore) hashOfID(id string) string {
	if h, ok := s.where.Load(id); ok {
		return h.(string)
	}
	return PendingHash
}

// Put writes a record. It overwrites whatever the run's id held before,
// which is what a run reaching its second durable step wants: one run has at
// most one step waiting at a time.
func (s *PendingStore) Put(p Pending) error { return s.PutWith(p, nil) }

// PutWith is Put with the write made by write (nil: the store's HSet), on
// the hash and field Put would use: a fleet writes a run's first record
// in the script that also marks the run's item done (host/placement).
func (s *PendingStore) PutWith(p Pending, write func(hash, field string, value []byte) error) error {
	if len(p.Event) == 0 {
		// A run whose trigger was lost (RereadError) is not written as if
		// {} were its trigger: what its record holds stays, and fails a
		// replay the same way.
		return fmt.Errorf("seq: write pending %s: the run has no trigger to keep", p.ID)
	}
	p.Version = PendingVersion
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("seq: encode pending %s: %w", p.ID, err)
	}
	h := s.hash(p.Rule, p.Key)
	if write == nil {
		err = s.h.HSet(h, p.ID, b)
	} else {
		err = write(h, p.ID, b)
	}
	if err != nil {
		return fmt.Errorf("seq: write pending %s: %w", p.ID, err)
	}
	if h != PendingHash {
		s.where.Store(p.ID, h)
	}
	s.track(p.ID, p.Digest)
	return nil
}

// track notes that run id's record names digest ("": none).
func (s *PendingStore) track(id, digest string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.digestOf[id]; ok {
		if old == digest {
			return
		}
		s.untrackLocked(id, old)
	}
	if digest == "" {
		return
	}
	if s.digestOf == nil {
		s.digestOf, s.digests = map[string]string{}, map[string]int{}
	}
	s.digestOf[id] = digest
	s.digests[digest]++
}

func (s *PendingStore) untrackLocked(id, digest string) {
	delete(s.digestOf, id)
	if s.digests[digest]--; s.digests[digest] <= 0 {
		delete(s.digests, digest)
	}
}

// Forget stops tracking run id's record without removing it: its place
// was let go (Runner.ReleaseWhere), and whoever holds it now replays it.
func (s *PendingStore) Forget(id string) {
	s.where.Delete(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if dg, ok := s.digestOf[id]; ok {
		s.untrackLocked(id, dg)
	}
}

// Known reports whether Digests counts every record this store loaded: no
// load has failed since (a module store collects nothing then, as a
// record it could not read may pin a module).
func (s *PendingStore) Known() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.unread) == 0
}

// Digests counts, by module digest, the records written or loaded by this
// store that name one: the modules the records pin.
func (s *PendingStore) Digests() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.digests))
	for dg, n := range s.digests {
		out[dg] = n
	}
	return out
}

// Drop removes a record. Removing one that is not there is not an error: the
// step that fires and the cancel that arrives at the same moment both aim at
// the same field, and only one of them can be first.
func (s *PendingStore) Drop(id string) error {
	if err := s.h.HDel(s.hashOfID(id), id); err != nil {
		return fmt.Errorf("seq: drop pending %s: %w", id, err)
	}
	s.Forget(id)
	return nil
}

// Load reads every record. A value that will not decode is logged and
// removed rather than returned or fatal: whatever wrote it is not going to
// write it better on the next boot, and leaving it in place turns one bad
// record into one log line per start forever.
func (s *PendingStore) Load() ([]Pending, error) { return s.LoadHash(PendingHash) }

// LoadHash is Load for the records filed under hash (a place's,
// Placement.HashOf).
func (s *PendingStore) LoadHash(hash string) ([]Pending, error) {
	// Sized first: a record is 350 bytes, and appending 100,000 of them
	// to a slice grown as it goes allocated 175 MB to keep 35 (issue 38).
	var out []Pending
	var bad []string
	names := map[string]string{}
	err := s.each(hash, func(n int) { out = make([]Pending, 0, n) }, func(id string, v []byte) {
		// Decoded in its place: a Pending is 350 bytes, copied twice
		// on its way there otherwise.
		out = append(out, Pending{})
		p := &out[len(out)-1]
		if err := decodeInto(id, v, p, names); err != nil {
			out = out[:len(out)-1]
			s.log.Warn("dropping a pending record that will not decode", "id", id, "error", err)
			bad = append(bad, id)
			return
		}
		if hash != PendingHash {
			s.where.Store(p.ID, hash)
		}
		s.track(p.ID, p.Digest)
	})
	s.mu.Lock()
	if err != nil {
		if s.unread == nil {
			s.unread = map[string]bool{}
		}
		s.unread[hash] = true
	} else {
		delete(s.unread, hash)
	}
	s.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("seq: load pending %s: %w", hash, err)
	}
	if len(bad) > 0 {
		if err := s.h.HDel(hash, bad...); err != nil {
			s.log.Error("cannot drop the undecodable records", "ids", bad, "error", err)
		}
	}
	return out, nil
}

// localGetter is a Hasher that reads one field back from the device's
// own disk (store.Bolt): cheap enough to do under the runner's lock, and
// failing only when the disk does. A run parked over one keeps its
// trigger there and not in memory (cold, Runner.freezeLocked). Redis
// does not qualify and must not implement it: a read there is a network
// round trip under the lock, and fails whenever Redis is away.
type localGetter interface {
	HGet(key, field string) ([]byte, bool, error)
}

// Rereads reports whether a record can be read back by its run's id
// (Get) on the device itself.
func (s *PendingStore) Rereads() bool {
	_, ok := s.h.(localGetter)
	return ok
}

// Get reads back the record of run id, written or loaded through s. It
// is an error when there is none, or when it does not decode: the run it
// belongs to cannot go on as it was.
func (s *PendingStore) Get(id string) (Pending, error) {
	g, ok := s.h.(localGetter)
	if !ok {
		return Pending{}, fmt.Errorf("seq: read back the record of run %s: the store cannot", id)
	}
	v, ok, err := g.HGet(s.hashOfID(id), id)
	switch {
	case err != nil:
		return Pending{}, fmt.Errorf("seq: read back the record of run %s: %w", id, err)
	case !ok:
		return Pending{}, fmt.Errorf("seq: read back the record of run %s: it is gone", id)
	}
	p, err := decodePending(id, v)
	if err != nil {
		return Pending{}, fmt.Errorf("seq: read back the record of run %s: %w", id, err)
	}
	return p, nil
}

// hashScanner is a Hasher that hands over a hash's fields one at a time
// (store.Bolt): a start decodes 100,000 records without a map of all of
// them, each copied, beside what it decodes (issue 38: that map and its
// copies were a third of a restart's CPU and much of its peak).
type hashScanner interface {
	HScan(key string, fn func(field, value []byte) error) error
}

// each calls fn with every field of hash and its value, which fn must not
// keep; first, sized with about how many there are, for sizing what fn
// fills.
func (s *PendingStore) each(hash string, sized func(n int), fn func(id string, v []byte)) error {
	if hs, ok := s.h.(hashScanner); ok {
		// A pass over the keys without decoding a value costs a
		// fiftieth of the decoding's time.
		n := 0
		if err := hs.HScan(hash, func(k, v []byte) error { n++; return nil }); err != nil {
			return err
		}
		sized(n)
		return hs.HScan(hash, func(k, v []byte) error {
			fn(string(k), v)
			return nil
		})
	}
	all, err := s.h.HGetAll(hash)
	sized(len(all))
	for id, v := range all {
		fn(id, []byte(v))
	}
	return err
}

func decodePending(id string, b []byte) (Pending, error) {
	var p Pending
	err := decodeInto(id, b, &p, nil)
	return p, err
}

// decodeInto is decodePending into p, which is zero, with the strings
// many records share (their rule, topic, step, fingerprint and module)
// kept once in names, when not nil.
func decodeInto(id string, b []byte, p *Pending, names map[string]string) error {
	if !decodeFast(b, p, names) {
		*p = Pending{}
		if err := json.Unmarshal(b, p); err != nil {
			return err
		}
	}
	if p.Version == 0 {
		p.Version = 1 // the seed's format: no "v"
	}
	switch {
	case p.Version > PendingVersion:
		return fmt.Errorf("record format v%d is newer than this ruled (v%d)", p.Version, PendingVersion)
	case p.ID != id:
		return fmt.Errorf("record filed under %q names run %q", id, p.ID)
	case p.Rule == "" || p.FireAt == 0 || len(p.Event) == 0:
		return fmt.Errorf("record lacks its rule, due time or event")
	}
	return nil
}

// List reads every record that decodes, leaving the store as it is: for
// showing what waits, where Load (which removes what will not decode) is for
// replay.
func (s *PendingStore) List() ([]Pending, error) { return s.ListHash(PendingHash) }

// ListHash is List for the records filed under hash (a place's,
// Placement.HashOf).
func (s *PendingStore) ListHash(hash string) ([]Pending, error) {
	var out []Pending
	err := s.each(hash, func(n int) { out = make([]Pending, 0, n) }, func(id string, v []byte) {
		if p, err := decodePending(id, v); err == nil {
			out = append(out, p)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("seq: list pending: %w", err)
	}
	return out, nil
}
