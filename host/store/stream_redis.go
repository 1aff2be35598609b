package store

import (
	"context"
	"errors"
	"fmt"
	"github.com/ruled-dev/ruled/host/keyspace"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Fleet mode's ingest stream and its consumer group (host/keyspace/KEYS.md).
const (
	IngestStream = keyspace.Ingest
	IngestGroup  = "ruled"
)

// RedisStream is fleet mode's ingest: an accepted event is an entry of one
// stream, read by every process through one consumer group, and
// acknowledged (and deleted) only after its admissions are in the shards'
// backlogs. An event is accepted when its XADD is: a process that dies
// holding entries it read leaves them pending, and another claims them
// once they have been idle long enough (Claim).
type RedisStream struct {
	c redis.UniversalClient
}

// Stream returns the ingest stream on this Redis.
func (r *Redis) Stream() *RedisStream { return &RedisStream{c: r.c} }

// StreamEntry is one accepted event as the stream holds it.
type StreamEntry struct {
	ID      string // the stream's id: unique, and stable across redeliveries
	EventID string
	Topic   string
	Time    time.Time
	Raw     []byte // the event's JSON
	Hops    int    // the event's hops (bus.Event.Hops)
	// Entity is the event's entity when it was appended with its state
	// (AppendChange); Prior the state the entity had before it, nil when
	// none; Refused says the fleet's states were full and kept none.
	Entity  string `json:",omitempty"`
	Prior   []byte `json:",omitempty"`
	Refused bool   `json:",omitempty"`
}

// Ensure creates the stream and its group if they are not there.
func (s *RedisStream) Ensure(ctx context.Context) error {
	err := s.c.XGroupCreateMkStream(ctx, IngestStream, IngestGroup, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("store: ingest stream: %w", err)
	}
	return nil
}

// Append adds an accepted event. It returns once Redis has it: the event is
// accepted then, and not before.
func (s *RedisStream) Append(ctx context.Context, eventID, topic string, at time.Time, hops int, raw []byte) (string, error) {
	values := []any{"id", eventID, "topic", topic, "time", at.UnixNano(), "event", raw}
	if hops > 0 {
		values = append(values, "hops", hops)
	}
	id, err := s.c.XAdd(ctx, &redis.XAddArgs{Stream: IngestStream, Values: values}).Result()
	if err != nil {
		return "", fmt.Errorf("store: ingest %s: %w", topic, err)
	}
	return id, nil
}

// appendChange appends an event (ARGV[4:]: the XADD's field-value
// pairs) with its entity's state: the state before it (KEYS[2], field
// ARGV[1]) goes into the entry as "prior", and the event's state
// (ARGV[3]) takes its place. A new entity past ARGV[2] entities is not
// kept: the entry says "refused". One script, so the stream's order is
// each entity's order of states.
var appendChange = redis.NewScript(`
local prior = redis.call('HGET', KEYS[2], ARGV[1])
local refused = false
if prior then
	redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
elseif redis.call('HLEN', KEYS[2]) < tonumber(ARGV[2]) then
	redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
else
	refused = true
end
local fields = {KEYS[1], '*'}
for i = 4, #ARGV do fields[#fields + 1] = ARGV[i] end
fields[#fields + 1] = 'entity'
fields[#fields + 1] = ARGV[1]
if prior then
	fields[#fields + 1] = 'prior'
	fields[#fields + 1] = prior
end
if refused then
	fields[#fields + 1] = 'refused'
	fields[#fields + 1] = '1'
end
return redis.call('XADD', unpack(fields))
`)

// AppendChange is Append for an event whose entity's state a rule
// watches (a change trigger, previous.): the entry carries the state
// the entity had before it, swapped for the event's state in one
// script, so two members accepting reports of one entity at once agree
// on which came first — the stream's order. At most maxEntities
// entities are kept (FleetStates); a new one past that is appended with
// Refused and no state.
func (s *RedisStream) AppendChange(ctx context.Context, eventID, topic string, at time.Time, hops int, raw []byte,
	entity string, state []byte, maxEntities int) (string, error) {
	args := []any{entity, maxEntities, state, "id", eventID, "topic", topic, "time", at.UnixNano(), "event", raw}
	if hops > 0 {
		args = append(args, "hops", hops)
	}
	id, err := appendChange.Run(ctx, s.c, []string{IngestStream, keyspace.FleetStates}, args...).Text()
	if err != nil {
		return "", fmt.Errorf("store: ingest %s: %w", topic, err)
	}
	return id, nil
}

// ForgetState removes an entity's state from the fleet's (ruled state
// rm): its next event has none before it.
func (s *RedisStream) ForgetState(ctx context.Context, entity string) (bool, error) {
	n, err := s.c.HDel(ctx, keyspace.FleetStates, entity).Result()
	if err != nil {
		return false, fmt.Errorf("store: forgetting %s: %w", entity, err)
	}
	return n > 0, nil
}

// Read delivers up to n new entries to consumer, waiting up to block for
// the first; none is not an error.
func (s *RedisStream) Read(ctx context.Context, consumer string, n int, block time.Duration) ([]StreamEntry, error) {
	res, err := s.c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: IngestGroup, Consumer: consumer,
		Streams: []string{IngestStream, ">"}, Count: int64(n), Block: block}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: ingest read: %w", err)
	}
	var out []StreamEntry
	for _, st := range res {
		out = append(out, entries(st.Messages)...)
	}
	return out, nil
}

// Claim takes over up to n entries another consumer read and has not
// acknowledged for minIdle: the events of a process that died between
// reading and admitting them.
func (s *RedisStream) Claim(ctx context.Context, consumer string, minIdle time.Duration, n int) ([]StreamEntry, error) {
	msgs, _, err := s.c.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: IngestStream, Group: IngestGroup,
		Consumer: consumer, MinIdle: minIdle, Start: "0-0", Count: int64(n)}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("store: ingest claim: %w", err)
	}
	return entries(msgs), nil
}

// Ack acknowledges entries whose admissions are in the backlogs, and
// deletes them: the stream holds only what is not admitted yet.
func (s *RedisStream) Ack(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	pipe := s.c.TxPipeline()
	pipe.XAck(ctx, IngestStream, IngestGroup, ids...)
	pipe.XDel(ctx, IngestStream, ids...)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("store: ingest ack: %w", err)
	}
	return nil
}

// Len is how many entries wait in the stream (read or not).
func (s *RedisStream) Len(ctx context.Context) (int64, error) {
	return s.c.XLen(ctx, IngestStream).Result()
}

func entries(msgs []redis.XMessage) []StreamEntry {
	out := make([]StreamEntry, 0, len(msgs))
	for _, m := range msgs {
		e := StreamEntry{ID: m.ID}
		e.EventID, _ = m.Values["id"].(string)
		e.Topic, _ = m.Values["topic"].(string)
		if ns, err := strconv.ParseInt(fmt.Sprint(m.Values["time"]), 10, 64); err == nil {
			e.Time = time.Unix(0, ns)
		}
		if raw, ok := m.Values["event"].(string); ok {
			e.Raw = []byte(raw)
		}
		if h, ok := m.Values["hops"].(string); ok {
			e.Hops, _ = strconv.Atoi(h)
		}
		e.Entity, _ = m.Values["entity"].(string)
		if p, ok := m.Values["prior"].(string); ok {
			e.Prior = []byte(p)
		}
		e.Refused = m.Values["refused"] == "1"
		out = append(out, e)
	}
	return out
}
