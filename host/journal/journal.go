package journal

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/keyspace"
	"github.com/ruled-dev/ruled/internal/traceparent"
)

// Hash is the datastore hash the journal keeps its entries in.
const Hash = keyspace.Journal

// TookHash keeps which rules took an entry that waits for others still:
// "<entry>\x00<rule>". An entry was one set of rules, deleted when the
// last took it; a start re-admitted it to every rule that held no record
// for it, those that had taken it and ended their runs included — under
// load, with one rule's trigger queued behind hundreds, a kill before
// the last took it ran the others again under new run ids at every start
// (issue 37: one event's step ten times in a soak at 4x the workers'
// pace). A mark is written (by the deleter, off the caller's path) when a
// rule takes an entry others wait for; none for an entry of one rule,
// whose acknowledgement deletes it.
const TookHash = keyspace.JournalTook

// SeenPrefix starts the fields of Hash that keep the source keys of
// entries deleted within SeenFor: SeenPrefix, the entry's write as 16 hex
// digits of unix nanoseconds, ":" and the key → the write in decimal. An
// entry's key was known only while the entry was: a message its rules had
// taken (the entry deleted) and whose acknowledgement a broker restart
// lost came back to the next process after a kill as a new message, and
// ran again under new ids (a soak: 26 times in 149 kills and 33 broker
// restarts). In the entries' hash, so that a batch's keys are written in
// the commit that deletes its entries (SetDeleter). Named by time, so
// that the keys a commit adds and the ones it lets go sit on a few pages
// of the store, not on as many as there are keys. A field of an earlier
// ruled, SeenPrefix and the key alone, is still read.
const SeenPrefix = "seen:"

// SetDeleter is a store that writes and removes fields of a hash in one
// write (one bbolt commit, one Redis MULTI): both of ruled's stores are.
type SetDeleter interface {
	HSetDel(key string, fields []string, values [][]byte, del []string) error
}

// Version is the entry format Add writes.
const Version = 1

// Hasher is the datastore surface the journal needs (both of ruled's stores
// have it).
type Hasher interface {
	HSet(key, field string, value any) error
	HGetAll(key string) (map[string]string, error)
	HDel(key string, fields ...string) error
}

// Logger is where the journal says what it could not do.
type Logger interface {
	Warn(msg string, args ...any)
	Error(msg string, args ...any)
}

// Entry is one acknowledged event and the rules it waits for.
type Entry struct {
	Version int    `json:"v"`
	ID      string `json:"-"` // the hash field
	// Rules are the rules the event was acknowledged for: those with a
	// durable step that its topic triggered.
	Rules   []string        `json:"rules"`
	EventID string          `json:"event-id"`
	Topic   string          `json:"topic"`
	Time    int64           `json:"time"` // unix nanoseconds
	Event   json.RawMessage `json:"event"`
	// Written is when the entry was written (unix nanoseconds): the order a
	// start re-admits entries in.
	Written int64 `json:"written"`
	// Key is the source's identity of the message (bus.Event.Key), for
	// Seen; "": none.
	Key string `json:"key,omitempty"`
	// Hops is the event's bus.Event.Hops: a loop of rules keeps counting
	// across a restart.
	Hops int `json:"hops,omitempty"`
	// Trace is the event's bus.Event.Trace: a run re-admitted at a start
	// is still a span of the trace its event came with.
	Trace string `json:"trace,omitempty"`
}

// Rebuild returns the event as the bus first carried it: same id, topic,
// time and JSON, its view decoded again.
func (e Entry) Rebuild() (*bus.Event, error) {
	ev, err := bus.Rebuild(e.EventID, e.Topic, time.Unix(0, e.Time), []byte(e.Event))
	if err != nil {
		return nil, fmt.Errorf("journal: entry %s: %w", e.ID, err)
	}
	ev.Hops = min(max(e.Hops, 0), bus.MaxHops+1)
	ev.Trace = traceparent.Canonical(e.Trace) // as written, unless the store's copy was changed
	return ev, nil
}

// Stats counts what the journal did since it was made.
type Stats struct {
	Written      uint64 `json:"written"`      // entries written (events journaled)
	Acknowledged uint64 `json:"acknowledged"` // entries deleted because every rule took them
	Open         int64  `json:"open"`         // entries written or loaded and not yet deleted
	Failed       uint64 `json:"failed"`       // writes and batch deletes the store refused
}

// Journal writes entries synchronously and deletes acknowledged ones in
// batches on its own goroutine, which Close stops. It is safe for
// concurrent use.
type Journal struct {
	h   Hasher
	log Logger

	mu   sync.Mutex
	acks []string
	// took are marks to write (TookHash fields); marks are the marks
	// written or loaded, by entry, deleted with it.
	took  []string
	marks map[string][]string
	// seen are the keys of messages journaled lately (Seen), seenOrder
	// them oldest first.
	seen      map[string]time.Time
	seenOrder []string
	// keyOf is the source key of each entry that has one, and when it was
	// written: kept in a SeenPrefix field when the entry goes. unseen are
	// keys Seen forgot; fieldOf is the field that keeps each key in the
	// store, deleted once Seen forgot its key.
	keyOf   map[string]keyedAt
	unseen  []string
	fieldOf map[string]string
	// unsure are entries whose write failed and may have landed all the
	// same (a store that went away before it answered): the event was
	// refused, so they are deleted like acknowledged ones, uncounted.
	unsure []string
	wake   chan struct{}
	quit   chan struct{}
	done   chan struct{}
	close  sync.Once

	written, acked, failed atomic.Uint64
	open                   atomic.Int64
}

// keyedAt is an entry's source key and the time of its write.
type keyedAt struct {
	key string
	at  int64 // unix nanoseconds
}

// retryAfter is how long the deleter waits after the store refused a batch.
const retryAfter = time.Second

// New returns a journal over h and starts its deleter.
func New(h Hasher, log Logger) *Journal {
	j := &Journal{h: h, log: log, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
		marks: map[string][]string{}, keyOf: map[string]keyedAt{}, fieldOf: map[string]string{}}
	go j.deleter()
	return j
}

// Add writes e as an entry waiting for rules and returns the entry's id.
// It returns once the store has it: the caller acknowledges e only then.
func (j *Journal) Add(e *bus.Event, rules []string) (string, error) {
	ids, err := j.AddAll([]*bus.Event{e}, [][]string{rules})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// MultiSetter is a store that writes several fields of a hash at once:
// one transaction (bbolt) or one command (Redis) for all of them. A store
// without it is written a field at a time.
type MultiSetter interface {
	HSetMany(key string, fields []string, values [][]byte) error
}

// AddAll is Add for several events at once (es[i] waiting for rules[i]),
// written together: one store write for the lot when the store is a
// MultiSetter, so a body of events pays one commit, not one an event
// (issue 39). It returns their entries' ids once the store has every one;
// on an error none is acknowledged, and any that may have landed are
// deleted like an acknowledged one.
func (j *Journal) AddAll(es []*bus.Event, rules [][]string) ([]string, error) {
	ids := make([]string, len(es))
	vals := make([][]byte, len(es))
	now := time.Now().UnixNano()
	for i, e := range es {
		en := Entry{Version: Version, ID: bus.NewID(), Rules: rules[i], EventID: e.ID, Topic: e.Topic,
			Time: e.Time.UnixNano(), Event: json.RawMessage(e.Raw), Written: now, Key: e.Key, Hops: e.Hops, Trace: e.Trace}
		b, err := json.Marshal(en)
		if err != nil {
			return nil, fmt.Errorf("journal: encode event %s: %w", e.ID, err)
		}
		ids[i], vals[i] = en.ID, b
	}
	var err error
	refused := 0 // the event whose write failed
	if m, ok := j.h.(MultiSetter); ok && len(es) > 1 {
		err = m.HSetMany(Hash, ids, vals)
	} else {
		for ; refused < len(es); refused++ {
			if err = j.h.HSet(Hash, ids[refused], vals[refused]); err != nil {
				break
			}
		}
	}
	if err != nil {
		j.failed.Add(1)
		// Refused to the caller, so it must not come back at the next
		// start: a write Redis took just before it went down (and whose
		// answer was lost) would be re-admitted there, an event run that
		// its sender was told to send again. Those written before the
		// refusal go the same way: the caller acknowledges none.
		j.mu.Lock()
		j.unsure = append(j.unsure, ids...)
		j.mu.Unlock()
		j.kick()
		return nil, fmt.Errorf("journal: write event %s: %w", es[refused].ID, err)
	}
	j.written.Add(uint64(len(es)))
	j.open.Add(int64(len(es)))
	at := time.Unix(0, now)
	for i, e := range es {
		j.rememberAt(e.Key, at)
		j.keyed(ids[i], e.Key, now)
	}
	return ids, nil
}

// SeenFor is how long Seen knows a message's key after its entry was
// written or loaded, and SeenMax how many keys it knows at most (the
// oldest forgotten first): a redelivery comes when the source reconnects,
// seconds after the delivery it repeats, not minutes.
const (
	SeenFor = 10 * time.Minute
	SeenMax = 10_000
)

// rememberAt notes key (an entry's Key), journaled at at, for Seen.
func (j *Journal) rememberAt(key string, at time.Time) {
	if key == "" {
		return
	}
	now := time.Now()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.seen == nil {
		j.seen = map[string]time.Time{}
	}
	for len(j.seenOrder) > 0 && (len(j.seenOrder) >= SeenMax || now.Sub(j.seen[j.seenOrder[0]]) > SeenFor) {
		delete(j.seen, j.seenOrder[0])
		j.unseen = append(j.unseen, j.seenOrder[0])
		j.seenOrder = j.seenOrder[1:]
	}
	if _, ok := j.seen[key]; !ok {
		j.seenOrder = append(j.seenOrder, key)
	}
	j.seen[key] = at
}

// keyed notes entry id's source key, kept in a SeenPrefix field when the
// entry is deleted.
func (j *Journal) keyed(id, key string, at int64) {
	if key == "" {
		return
	}
	j.mu.Lock()
	j.keyOf[id] = keyedAt{key, at}
	j.mu.Unlock()
}

// Seen reports whether a message of key was journaled within SeenFor —
// written by this process, or found at its start: a redelivery of a
// message already accepted (its acknowledgement lost to a kill or a
// broker restart), which must not start its runs again.
func (j *Journal) Seen(key string) bool {
	if key == "" {
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	at, ok := j.seen[key]
	return ok && time.Since(at) <= SeenFor
}

// Forget deletes an entry for an event written and then refused after all
// (its publish failed), which must not come back at the next start: queued
// like an acknowledgement, so a store that is away (the likely reason the
// publish failed) is tried again until it takes the deletion.
func (j *Journal) Forget(id string) { j.Ack(id) }

// Ack queues an entry's deletion. It never blocks and does no I/O, so a
// caller may hold its own locks: the sequencer acknowledges while it holds
// its runner's.
func (j *Journal) Ack(id string) {
	j.mu.Lock()
	j.acks = append(j.acks, id)
	j.mu.Unlock()
	j.kick()
}

// kick wakes the deleter.
func (j *Journal) kick() {
	select {
	case j.wake <- struct{}{}:
	default:
	}
}

// Waiter returns a function to call once per rule the entry waits for;
// the n-th call acknowledges the entry. Calls past the n-th do nothing, so a
// double acknowledgement cannot delete someone else's entry.
func (j *Journal) Waiter(id string, n int) func() {
	if n <= 0 {
		j.Ack(id)
		return func() {}
	}
	var left atomic.Int64
	left.Store(int64(n))
	return func() {
		if left.Add(-1) == 0 {
			j.Ack(id)
		}
	}
}

// Waiters is Waiter for an entry waiting for rules (a rule may be named
// twice: a wait and a trigger): one function per name, in order, to call
// when that name took the entry. A rule whose every name has taken it is
// marked (TookHash) while other rules still wait; the last call
// acknowledges the entry. Calls past the first of each function do
// nothing.
func (j *Journal) Waiters(id string, rules []string) []func() {
	if len(rules) == 0 {
		j.Ack(id)
		return nil
	}
	var mu sync.Mutex
	left := len(rules)
	per := map[string]int{}
	for _, r := range rules {
		per[r]++
	}
	out := make([]func(), len(rules))
	for i, r := range rules {
		var once sync.Once
		out[i] = func() {
			once.Do(func() {
				mu.Lock()
				left--
				per[r]--
				last, ruleDone := left == 0, per[r] == 0
				mu.Unlock()
				switch {
				case last:
					j.Ack(id)
				case ruleDone:
					j.Took(id, r)
				}
			})
		}
	}
	return out
}

// Took queues the mark that rule took entry id while other rules still
// wait for it: a start re-admits the entry to those only. It never
// blocks and does no I/O; the deleter writes it.
func (j *Journal) Took(id, rule string) {
	j.mu.Lock()
	j.took = append(j.took, id+"\x00"+rule)
	j.mu.Unlock()
	j.kick()
}

// Load reads every entry still in the store, oldest write first. An entry
// that will not decode is logged and deleted: nothing will read it better
// later.
func (j *Journal) Load() ([]Entry, error) {
	all, err := j.h.HGetAll(Hash)
	if err != nil {
		return nil, fmt.Errorf("journal: load: %w", err)
	}
	j.loadSeen(all) // first: the oldest are remembered first
	out := make([]Entry, 0, len(all))
	for id, v := range all {
		en, err := Decode(id, []byte(v))
		if err != nil {
			j.log.Warn("dropping a journal entry that will not decode", "id", id, "error", err)
			if err := j.h.HDel(Hash, id); err != nil {
				j.log.Error("cannot drop the undecodable journal entry", "id", id, "error", err)
			}
			continue
		}
		out = append(out, en)
		j.rememberAt(en.Key, time.Now())
		j.keyed(en.ID, en.Key, en.Written)
	}
	// What each entry's rules took already: they are not its rules any
	// more. An entry every rule of which took it goes; a mark of an entry
	// that is gone goes too.
	took, err := j.h.HGetAll(TookHash)
	if err != nil {
		return nil, fmt.Errorf("journal: load: %w", err)
	}
	byID := make(map[string]int, len(out))
	for i, en := range out {
		byID[en.ID] = i
	}
	var orphans []string
	j.mu.Lock()
	for f := range took {
		id, rule, _ := strings.Cut(f, "\x00")
		i, ok := byID[id]
		if !ok {
			orphans = append(orphans, f)
			continue
		}
		out[i].Rules = slices.DeleteFunc(out[i].Rules, func(r string) bool { return r == rule })
		j.marks[id] = append(j.marks[id], f)
	}
	j.mu.Unlock()
	if len(orphans) > 0 {
		if err := j.h.HDel(TookHash, orphans...); err != nil {
			j.log.Warn("cannot delete the marks of journal entries that are gone; tried again at the next start", "marks", len(orphans), "error", err)
		}
	}
	out = slices.DeleteFunc(out, func(en Entry) bool {
		if len(en.Rules) == 0 { // every rule took it: the kill came before its deletion
			j.Ack(en.ID)
			return true
		}
		return false
	})
	sortEntries(out)
	j.open.Store(int64(len(out)))
	return out, nil
}

// Decode reads one entry filed under id.
func Decode(id string, b []byte) (Entry, error) {
	var en Entry
	if err := json.Unmarshal(b, &en); err != nil {
		return en, err
	}
	en.ID = id
	switch {
	case en.Version > Version:
		return en, fmt.Errorf("entry format v%d is newer than this ruled (v%d)", en.Version, Version)
	case en.Version < 1:
		return en, errors.New("entry has no format version")
	case en.Topic == "" || len(en.Event) == 0:
		return en, errors.New("entry lacks its topic or event")
	}
	return en, nil
}

// Stats reports the counters.
func (j *Journal) Stats() Stats {
	return Stats{Written: j.written.Load(), Acknowledged: j.acked.Load(), Open: j.open.Load(), Failed: j.failed.Load()}
}

// Close deletes what was acknowledged so far and stops the deleter. An
// entry acknowledged after Close stays in the store until the next start
// finds its rules took it.
func (j *Journal) Close() {
	j.close.Do(func() {
		close(j.quit)
		<-j.done
	})
}

// deleter deletes acknowledged entries, all that arrived since its last
// batch in one store call: on bbolt one commit however many. A batch the
// store refuses is kept and tried again after retryAfter.
func (j *Journal) deleter() {
	defer close(j.done)
	for {
		select {
		case <-j.wake:
		case <-j.quit:
			j.flush()
			return
		}
		if !j.flush() {
			select {
			case <-time.After(retryAfter):
			case <-j.quit:
				j.flush()
				return
			}
			select { // try again even if nothing new arrives
			case j.wake <- struct{}{}:
			default:
			}
		}
	}
}

// flush writes the queued marks (Took), deletes the queued
// acknowledgements and then their marks, and reports whether the store
// took the deletions.
func (j *Journal) flush() bool {
	j.mu.Lock()
	ids, unsure, took := j.acks, j.unsure, j.took
	j.acks, j.unsure, j.took = nil, nil, nil
	acked := make(map[string]bool, len(ids))
	for _, id := range ids {
		acked[id] = true
	}
	// Marks of entries acknowledged in this batch are not written.
	var write []string
	for _, f := range took {
		if id, _, _ := strings.Cut(f, "\x00"); !acked[id] {
			write = append(write, f)
			j.marks[id] = append(j.marks[id], f)
		}
	}
	j.mu.Unlock()
	for i, f := range write {
		if err := j.h.HSet(TookHash, f, ""); err != nil {
			// Not written: the rule is re-admitted at the next start, as
			// before marks (at least once).
			j.failed.Add(1)
			j.log.Warn("cannot mark what a rule took of a journal entry; a start now runs it again", "marks", len(write)-i, "error", err)
			break
		}
	}
	b := j.seenOf(ids)
	if len(ids)+len(unsure)+len(b.forgot) == 0 {
		return true
	}
	if err := j.deleteKeeping(append(b.del, unsure...), b.fields, b.vals); err != nil {
		j.failed.Add(1)
		j.log.Warn("cannot delete acknowledged journal entries; will retry", "entries", len(ids)+len(unsure), "error", err)
		j.mu.Lock()
		j.acks = append(ids, j.acks...)
		j.unsure = append(unsure, j.unsure...)
		j.unseen = append(b.forgot, j.unseen...)
		j.mu.Unlock()
		return false
	}
	j.mu.Lock()
	for _, k := range b.forgot {
		if f, ok := j.fieldOf[k]; ok && b.gone[f] {
			delete(j.fieldOf, k)
		}
	}
	for i, f := range b.fields {
		j.fieldOf[b.keys[i]] = f
	}
	j.mu.Unlock()
	j.acked.Add(uint64(len(ids)))
	j.open.Add(-int64(len(ids)))
	// The entries are gone: their marks go after them (a mark left by a
	// failure here is an orphan the next start deletes).
	j.mu.Lock()
	var marks []string
	for _, id := range ids {
		marks = append(marks, j.marks[id]...)
		delete(j.marks, id)
		delete(j.keyOf, id)
	}
	for _, id := range unsure {
		delete(j.keyOf, id)
	}
	j.mu.Unlock()
	if len(marks) > 0 {
		if err := j.h.HDel(TookHash, marks...); err != nil {
			j.log.Warn("cannot delete the marks of acknowledged journal entries; the next start does", "marks", len(marks), "error", err)
		}
	}
	return true
}

// seenBatch is what a batch of deletions writes: the fields that keep
// the keys (of entries deleted whose key Seen still knows) and their
// values, and del deleted — the entries, and the fields of keys Seen
// forgot since the last batch (forgot) or keeps in a newer field.
type seenBatch struct {
	fields, keys []string
	vals         [][]byte
	del          []string
	gone         map[string]bool // del as a set
	forgot       []string
}

// seenOf plans the batch that deletes the entries ids: a field for each
// whose key Seen still knows, and the deletion of the fields of the keys
// Seen forgot. The plan takes effect in fieldOf once the store took it
// (flush).
func (j *Journal) seenOf(ids []string) seenBatch {
	j.mu.Lock()
	defer j.mu.Unlock()
	b := seenBatch{gone: map[string]bool{}, del: slices.Clip(ids)}
	for _, id := range ids {
		b.gone[id] = true
	}
	b.forgot, j.unseen = j.unseen, nil
	for _, k := range b.forgot {
		if _, again := j.seen[k]; again {
			continue // seen again since: its field is kept (or replaced below)
		}
		if f, ok := j.fieldOf[k]; ok && !b.gone[f] {
			b.del = append(b.del, f)
			b.gone[f] = true
		}
	}
	inBatch := map[string]int{} // key → its index in b.fields
	var ats []int64             // b.fields' writes
	for _, id := range ids {
		k, ok := j.keyOf[id]
		if _, known := j.seen[k.key]; !ok || !known {
			continue
		}
		if i, twice := inBatch[k.key]; twice { // two entries of one key: one field, the later's
			if k.at > ats[i] {
				b.fields[i], b.vals[i], ats[i] = seenField(k.at, k.key), strconv.AppendInt(nil, k.at, 10), k.at
			}
			continue
		}
		inBatch[k.key] = len(b.fields)
		ats = append(ats, k.at)
		if f, had := j.fieldOf[k.key]; had && !b.gone[f] {
			b.del = append(b.del, f) // one field a key: the newest
			b.gone[f] = true
		}
		b.fields, b.keys = append(b.fields, seenField(k.at, k.key)), append(b.keys, k.key)
		b.vals = append(b.vals, strconv.AppendInt(nil, k.at, 10))
	}
	return b
}

// seenField is the field that keeps key, of an entry written at at.
func seenField(at int64, key string) string {
	var t [8]byte
	binary.BigEndian.PutUint64(t[:], uint64(at))
	return SeenPrefix + hex.EncodeToString(t[:]) + ":" + key
}

// keyOfField is the key a SeenPrefix field keeps (rest: the field after
// the prefix), in either form.
func keyOfField(rest string) string {
	if len(rest) > 17 && rest[16] == ':' {
		if _, err := strconv.ParseUint(rest[:16], 16, 64); err == nil {
			return rest[17:]
		}
	}
	return rest // an earlier ruled's: the key alone
}

// deleteKeeping deletes the fields del and writes the fields that keep
// the keys: in one write on a SetDeleter, else the keys first, so that no
// crash between leaves an entry gone and its key unknown.
func (j *Journal) deleteKeeping(del, fields []string, vals [][]byte) error {
	if sd, ok := j.h.(SetDeleter); ok {
		return sd.HSetDel(Hash, fields, vals, del)
	}
	for i := range fields {
		if err := j.h.HSet(Hash, fields[i], vals[i]); err != nil {
			return err
		}
	}
	if len(del) == 0 {
		return nil
	}
	return j.h.HDel(Hash, del...)
}

// loadSeen takes the source keys kept in all (Hash's fields, SeenPrefix)
// out of it at a start: what was kept within SeenFor, Seen knows (oldest
// first, at most SeenMax), and what is older goes.
func (j *Journal) loadSeen(all map[string]string) {
	type kept struct {
		field, key string
		at         int64
	}
	var keep []kept
	var old []string
	now := time.Now()
	for f, v := range all {
		rest, ok := strings.CutPrefix(f, SeenPrefix)
		if !ok {
			continue
		}
		delete(all, f)
		k := keyOfField(rest)
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || k == "" || now.Sub(time.Unix(0, n)) > SeenFor {
			old = append(old, f)
			continue
		}
		keep = append(keep, kept{f, k, n})
	}
	slices.SortFunc(keep, func(a, b kept) int { return cmp.Compare(a.at, b.at) })
	for _, k := range keep {
		j.rememberAt(k.key, time.Unix(0, k.at))
		j.mu.Lock()
		if f, had := j.fieldOf[k.key]; had {
			old = append(old, f) // one field a key: the newest
		}
		j.fieldOf[k.key] = k.field
		j.mu.Unlock()
	}
	if len(old) > 0 {
		if err := j.h.HDel(Hash, old...); err != nil {
			j.log.Warn("cannot delete source keys past their time", "keys", len(old), "error", err)
		}
	}
}

// sortEntries orders entries by their write, so a start re-admits them in
// the order they were acknowledged.
func sortEntries(es []Entry) {
	slices.SortFunc(es, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Written, b.Written), cmp.Compare(a.ID, b.ID))
	})
}
