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
	// Crossed names the thresholds with hysteresis the event fired
	// ("<rule>\x00<i>"). Hold, set on an entry FireDue appended, names
	// the hold that came due ("<rule>\x00<i>\x00<entity>") and Def its
	// trigger as written: the entry runs that rule alone.
	Crossed   []string `json:",omitempty"`
	Hold, Def string   `json:",omitempty"`
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

// luaFuncs are the functions the fleet's scripts share. forget removes
// an entity (KEYS: states, triggers, due, seen at 2 to 5, as
// appendChange and forgetState have them); appendHold appends a hold
// that came due (r, its record) to the stream, naming it (hk).
const luaFuncs = `
-- forget removes an entity: its state, when it was last seen, its
-- triggers' memory and the holds running on it. KEYS: states, triggers,
-- due, seen.
local function forget(entity)
	local m = redis.call('HGET', KEYS[3], 'M' .. entity)
	if m then
		for tk, _ in pairs(cjson.decode(m)) do
			local hk = tk .. '\0' .. entity
			redis.call('HDEL', KEYS[3], 'H' .. hk)
			redis.call('ZREM', KEYS[4], hk)
		end
		redis.call('HDEL', KEYS[3], 'M' .. entity)
	end
	redis.call('ZREM', KEYS[5], entity)
	return redis.call('HDEL', KEYS[2], entity)
end
local function appendHold(stream, r, hk)
	local f = {stream, '*', 'id', r.id, 'topic', r.topic, 'time', r.time, 'event', r.event, 'hold', hk, 'def', r.def}
	if r.hops then
		f[#f + 1] = 'hops'
		f[#f + 1] = r.hops
	end
	if r.prior then
		f[#f + 1] = 'prior'
		f[#f + 1] = r.prior
	end
	redis.call('XADD', unpack(f))
end
`

// appendChange appends an event with its entity's state: the state
// before it (KEYS[2], field ARGV[1]) goes into the entry as "prior", and
// the event's state (ARGV[3]) takes its place. A new entity past ARGV[2]
// entities makes room by forgetting up to 64 not seen for ARGV[6] ms
// (KEYS[5] orders them by when last seen), else it is not kept (the
// entry says "refused"). Then it runs, in the same order, the change
// triggers the member passed (ARGV[8..], six each: TriggerOp): a hold's
// begin, keep or cancel (KEYS[3] "H"+key+entity, its due time in
// KEYS[4]) — a hold due already is appended first, as FireDue would —
// and each trigger's memory of the entity's last report (KEYS[3]
// "M"+entity: one map an entity, of the triggers passed now); a
// threshold's with hysteresis firing ("crossed" in the entry) and
// re-arming. The rest of ARGV are the XADD's field-value pairs. One
// script, so the stream's order is each entity's order, whichever
// member appended.
var appendChange = redis.NewScript(luaFuncs + `
local entity = ARGV[1]
local now = tonumber(ARGV[4])
local prior = redis.call('HGET', KEYS[2], entity)
local refused = false
if not prior and redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[2]) then
	for _, idle in ipairs(redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now - tonumber(ARGV[6]), 'LIMIT', 0, 64)) do
		forget(idle)
	end
	refused = redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[2])
end
if not refused then
	redis.call('HSET', KEYS[2], entity, ARGV[3])
	redis.call('ZADD', KEYS[5], now, entity)
end
local nops = tonumber(ARGV[5])
local x = 8 + nops * 6
local ev = {}
for j = x, #ARGV, 2 do ev[ARGV[j]] = ARGV[j + 1] end
local mem = {}
local mraw = redis.call('HGET', KEYS[3], 'M' .. entity)
if mraw then mem = cjson.decode(mraw) end
local kept = {}
local crossed = {}
local i = 8
for n = 1, nops do
	local key, def, kind, val, bits, forms = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]
	i = i + 6
	local hk = key .. '\0' .. entity
	local threshold, hasFrom, hasTo = bits:sub(1, 1) == '1', bits:sub(2, 2) == '1', bits:sub(3, 3) == '1'
	local isIn, isFrom = bits:sub(4, 4) == '1', bits:sub(5, 5) == '1'
	local number, rearmed = bits:sub(6, 6) == '1', bits:sub(7, 7) == '1'
	local last = mem[key]
	if kind == 'x' then
		kept[key] = last
		if not refused and number then
			if last == 'd' and rearmed then
				kept[key] = 'a'
			elseif last ~= 'd' and isIn then
				kept[key] = 'd'
				crossed[#crossed + 1] = key
			end
		end
	else
		local running = redis.call('HGET', KEYS[3], 'H' .. hk)
		if running then
			local r = cjson.decode(running)
			if tonumber(r.due) <= now then
				-- Due before this report: it ran then, whatever this says.
				appendHold(KEYS[1], r, hk)
				redis.call('HDEL', KEYS[3], 'H' .. hk)
				redis.call('ZREM', KEYS[4], hk)
				running = false
			else
				local keeps
				if refused then
					keeps = false
				elseif threshold or hasTo then
					keeps = isIn
				else
					keeps = r.v == val
				end
				if not keeps then
					redis.call('HDEL', KEYS[3], 'H' .. hk)
					redis.call('ZREM', KEYS[4], hk)
					running = false
				end
			end
		end
		if refused then
			kept[key] = last
		else
			if not running then
				local lv, lin, lfrom = '', '0', '0'
				if type(last) == 'string' then
					local a, b, c = string.match(last, '^(.*)\n(.)\n(.)$')
					if a then lv, lin, lfrom = a, b, c else last = nil end
				end
				local fires
				if threshold then
					fires = isIn and lin ~= '1'
				else
					local changed
					if last then changed = lv ~= val else changed = val ~= '' end
					fires = changed and (not hasFrom or lfrom == '1') and (not hasTo or isIn)
				end
				if fires then
					local due = now + tonumber(forms)
					local rec = {v = val, due = tostring(due), def = def, id = ev['id'], topic = ev['topic'],
						time = ev['time'], event = ev['event'], hops = ev['hops']}
					if prior then rec.prior = prior end
					redis.call('HSET', KEYS[3], 'H' .. hk, cjson.encode(rec))
					redis.call('ZADD', KEYS[4], due, hk)
				end
			end
			kept[key] = val .. '\n' .. (isIn and '1' or '0') .. '\n' .. (isFrom and '1' or '0')
		end
	end
end
if next(kept) then
	redis.call('HSET', KEYS[3], 'M' .. entity, cjson.encode(kept))
elseif mraw then
	redis.call('HDEL', KEYS[3], 'M' .. entity)
end
local fields = {KEYS[1], '*'}
for j = x, #ARGV do fields[#fields + 1] = ARGV[j] end
fields[#fields + 1] = 'entity'
fields[#fields + 1] = entity
if prior then
	fields[#fields + 1] = 'prior'
	fields[#fields + 1] = prior
end
if refused then
	fields[#fields + 1] = 'refused'
	fields[#fields + 1] = '1'
end
if #crossed > 0 then
	fields[#fields + 1] = 'crossed'
	fields[#fields + 1] = table.concat(crossed, '\n')
end
return redis.call('XADD', unpack(fields))
`)

// forgetState is ForgetState's script: the entity (ARGV[1]) forgotten
// as appendChange forgets an idle one.
var forgetState = redis.NewScript(luaFuncs + `
return forget(ARGV[1])
`)

// TriggerOp is one change trigger whose per-entity state the append
// script keeps (AppendChange): a hold (for:) or a threshold with
// hysteresis. The member that appends computes what it needs of the
// report (state.SigOf); the script decides in the stream's order.
type TriggerOp struct {
	// Key names the trigger: its rule and index ("<rule>\x00<i>"); Def is
	// the trigger as written, kept with a hold so that one whose trigger
	// was edited since runs nothing.
	Key, Def string
	// Hold: a hold, For long; else a threshold with hysteresis.
	Hold bool
	For  time.Duration
	// Value is the report's value at the trigger's field, canonical;
	// Threshold, HasFrom and HasTo describe the trigger; In, From,
	// Number and Rearmed the report (state.Sig).
	Value                                                string
	Threshold, HasFrom, HasTo, In, From, Number, Rearmed bool
}

// AppendChange is Append for an event whose entity's state a rule
// watches (a change trigger, previous.): the entry carries the state
// the entity had before it, swapped for the event's state in one
// script, so two members accepting reports of one entity at once agree
// on which came first — the stream's order. At most maxEntities
// entities are kept (FleetStates); a new one past that is appended with
// Refused and no state. ops are the holds and thresholds with
// hysteresis that watch the entity: their state is kept in the same
// script ({ruled:in}:triggers), a hold's due time in {ruled:in}:due
// (FireDue), a threshold that fired named in the entry (Crossed).
func (s *RedisStream) AppendChange(ctx context.Context, eventID, topic string, at time.Time, hops int, raw []byte,
	entity string, state []byte, maxEntities int, forgetAfter time.Duration, now time.Time, ops []TriggerOp) (string, error) {
	args := make([]any, 0, 7+6*len(ops)+10)
	args = append(args, entity, maxEntities, state, now.UnixMilli(), len(ops), forgetAfter.Milliseconds(), "")
	for _, op := range ops {
		kind := "x"
		if op.Hold {
			kind = "h"
		}
		bits := []byte("0000000")
		for i, b := range []bool{op.Threshold, op.HasFrom, op.HasTo, op.In, op.From, op.Number, op.Rearmed} {
			if b {
				bits[i] = '1'
			}
		}
		args = append(args, op.Key, op.Def, kind, op.Value, string(bits), op.For.Milliseconds())
	}
	args = append(args, "id", eventID, "topic", topic, "time", at.UnixNano(), "event", raw)
	if hops > 0 {
		args = append(args, "hops", hops)
	}
	keys := []string{IngestStream, keyspace.FleetStates, keyspace.FleetTriggers, keyspace.FleetDue, keyspace.FleetSeen}
	id, err := appendChange.Run(ctx, s.c, keys, args...).Text()
	if err != nil {
		return "", fmt.Errorf("store: ingest %s: %w", topic, err)
	}
	return id, nil
}

// fireDue appends the holds due by ARGV[1] (ms) to the stream, at most
// ARGV[3]: each its beginning event with "hold" (its key) and "def",
// taken out of KEYS[1] and KEYS[2] in the same script, so one member
// appends it, once. A hold due longer ago than ARGV[2] ms (the replay
// window; 0: any) is dropped instead. It returns the keys, "F" or "D"
// before each: fired, dropped.
var fireDue = redis.NewScript(luaFuncs + `
local now, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for _, hk in ipairs(due) do
	redis.call('ZREM', KEYS[2], hk)
	local raw = redis.call('HGET', KEYS[1], 'H' .. hk)
	if raw then
		redis.call('HDEL', KEYS[1], 'H' .. hk)
		local r = cjson.decode(raw)
		if window > 0 and now - tonumber(r.due) > window then
			out[#out + 1] = 'D' .. hk
		else
			appendHold(KEYS[3], r, hk)
			out[#out + 1] = 'F' .. hk
		end
	end
end
return out
`)

// FireDue appends the holds due by now to the stream (at most limit):
// each is an entry of the event that began it, naming the hold (Hold,
// Def), which the fleet routes to its rule alone. A hold due longer ago
// than window (the members were all away) is dropped. It returns the
// holds' keys, fired and dropped.
func (s *RedisStream) FireDue(ctx context.Context, now time.Time, window time.Duration, limit int) (fired, dropped []string, err error) {
	res, err := fireDue.Run(ctx, s.c, []string{keyspace.FleetTriggers, keyspace.FleetDue, IngestStream},
		now.UnixMilli(), window.Milliseconds(), limit).StringSlice()
	if err != nil {
		return nil, nil, fmt.Errorf("store: holds due: %w", err)
	}
	for _, r := range res {
		if k, ok := strings.CutPrefix(r, "F"); ok {
			fired = append(fired, k)
		} else {
			dropped = append(dropped, strings.TrimPrefix(r, "D"))
		}
	}
	return fired, dropped, nil
}

// ForgetState removes an entity from the fleet's states (ruled state
// rm) with its triggers' memory of it and its holds: its next event has
// none before it, and is a first report to every trigger.
func (s *RedisStream) ForgetState(ctx context.Context, entity string) (bool, error) {
	n, err := forgetState.Run(ctx, s.c, []string{IngestStream, keyspace.FleetStates, keyspace.FleetTriggers, keyspace.FleetDue,
		keyspace.FleetSeen}, entity).Int()
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

// HoldsRunning is how many holds the fleet's append script keeps
// waiting for their due time.
func (s *RedisStream) HoldsRunning(ctx context.Context) (int64, error) {
	return s.c.ZCard(ctx, keyspace.FleetDue).Result()
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
		if c, ok := m.Values["crossed"].(string); ok && c != "" {
			e.Crossed = strings.Split(c, "\n")
		}
		e.Hold, _ = m.Values["hold"].(string)
		e.Def, _ = m.Values["def"].(string)
		out = append(out, e)
	}
	return out
}
