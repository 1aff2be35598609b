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
	// Close, set on an entry CloseWindows appended, names the tumbling
	// window whose key's period closed: the entry runs the rules of its
	// closes alone.
	Close string `json:",omitempty"`
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
-- winCheck compares the n window ops from ARGV[base] (nine each:
-- WindowOp) with KEYS[6], the windows' hash: the ops whose field is not
-- at the version expected, each its index and the value there now ("":
-- none). Nothing is written.
local function winCheck(base, n)
	local bad = {}
	for j = 0, n - 1 do
		local i = base + j * 9
		local f = 's\0' .. ARGV[i + 1] .. '\0' .. ARGV[i + 2]
		if ARGV[i] == 't' then f = f .. '\0' .. ARGV[i + 3] end
		local cur = redis.call('HGET', KEYS[6], f)
		local ver = 0
		if cur then ver = tonumber(string.match(cur, '^(%d+) ')) or 0 end
		if ver ~= tonumber(ARGV[i + 4]) then
			bad[#bad + 1] = tostring(j)
			bad[#bad + 1] = cur or ''
		end
	end
	return bad
end
-- winApply writes the n window ops from ARGV[base], checked by
-- winCheck: each series under a new version (the hash's counter "v"),
-- a tumbling key's close event and its period's end (KEYS[7]), a
-- sliding key's moment it holds nothing (KEYS[8]). A new key past the
-- window's max first forgets sliding keys that hold nothing (up to 64);
-- still full, it is not written ("F"). A tumbling period the poll
-- closed already (KEYS[9], "<window>\0<start>" by when) is not opened
-- again ("L"). It returns, for each op, its version or "F" or "L".
local function winApply(base, n, now)
	local out = {}
	for j = 0, n - 1 do
		local i = base + j * 9
		local kind, w, k, start, expect = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], tonumber(ARGV[i + 4])
		local val, most, score, ev = ARGV[i + 5], tonumber(ARGV[i + 6]), ARGV[i + 7], ARGV[i + 8]
		local item = w .. '\0' .. k
		if kind == 't' then item = item .. '\0' .. start end
		local res = 'C'
		if expect == 0 then
			if kind == 't' and redis.call('ZSCORE', KEYS[9], w .. '\0' .. start) then
				res = 'L'
			end
			if res == 'C' then
				local cnt = tonumber(redis.call('HGET', KEYS[6], 'n\0' .. w) or '0')
				if cnt >= most then
					for _, idle in ipairs(redis.call('ZRANGEBYSCORE', KEYS[8], '-inf', now, 'LIMIT', 0, 64)) do
						redis.call('ZREM', KEYS[8], idle)
						if redis.call('HDEL', KEYS[6], 's\0' .. idle) == 1 then
							local iw = string.match(idle, '^([^%z]*)%z')
							if iw then redis.call('HINCRBY', KEYS[6], 'n\0' .. iw, -1) end
						end
					end
					cnt = tonumber(redis.call('HGET', KEYS[6], 'n\0' .. w) or '0')
				end
				if cnt >= most then
					res = 'F'
				else
					redis.call('HINCRBY', KEYS[6], 'n\0' .. w, 1)
				end
			end
		end
		if res == 'C' and expect ~= 0 and redis.call('HEXISTS', KEYS[6], 's\0' .. item) == 0 then
			-- Forgotten by this script's sweep for an op before it: a key again.
			redis.call('HINCRBY', KEYS[6], 'n\0' .. w, 1)
		end
		if res == 'C' then
			local v = redis.call('HINCRBY', KEYS[6], 'v', 1)
			redis.call('HSET', KEYS[6], 's\0' .. item, v .. ' ' .. val)
			if kind == 't' then
				redis.call('HSET', KEYS[6], 'e\0' .. item, ev)
				redis.call('ZADD', KEYS[7], score, item)
			elseif tonumber(score) > 0 then
				redis.call('ZADD', KEYS[8], score, item)
			end
			res = tostring(v)
		end
		out[#out + 1] = res
	end
	return out
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
local nops = tonumber(ARGV[5])
local nw = tonumber(ARGV[7]) or 0
local wbase = 8 + nops * 6
if nw > 0 then
	local bad = winCheck(wbase, nw)
	if #bad > 0 then return {'!', unpack(bad)} end
end
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
local x = wbase + nw * 9
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
if nw == 0 then
	return redis.call('XADD', unpack(fields))
end
local wres = winApply(wbase, nw, now)
return {redis.call('XADD', unpack(fields)), unpack(wres)}
`)

// appendWindows appends an event (its XADD's field-value pairs from
// ARGV[3 + 9*ARGV[2]]) with the ARGV[2] window ops from ARGV[3]
// (winCheck, winApply; ARGV[1] is now, ms): all of them or none, then
// the event.
var appendWindows = redis.NewScript(luaFuncs + `
local now, nw = tonumber(ARGV[1]), tonumber(ARGV[2])
local bad = winCheck(3, nw)
if #bad > 0 then return {'!', unpack(bad)} end
local wres = winApply(3, nw, now)
local fields = {KEYS[1], '*'}
for j = 3 + nw * 9, #ARGV do fields[#fields + 1] = ARGV[j] end
return {redis.call('XADD', unpack(fields)), unpack(wres)}
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
	id, _, err := s.AppendEntry(ctx, Entry{EventID: eventID, Topic: topic, At: at, Hops: hops, Raw: raw, Entity: entity,
		State: state, MaxEntities: maxEntities, ForgetAfter: forgetAfter, Now: now, Ops: ops})
	return id, err
}

// Entry is an event to append with what the append script keeps for
// it: its entity's state and change triggers (AppendChange), and the
// windows that count it.
type Entry struct {
	EventID, Topic string
	At             time.Time
	Hops           int
	Raw            []byte
	// Entity, when set, is swapped for State (AppendChange), Ops run.
	Entity      string
	State       []byte
	MaxEntities int
	ForgetAfter time.Duration
	Ops         []TriggerOp
	// Windows are the series the event changes, each written only if
	// its field is at the version the member expects; if one is not,
	// none is written and the event is not appended (WindowResult).
	Windows []WindowOp
	Now     time.Time
}

// WindowOp is one window series' compare-and-set (host/window Op): its
// field (Window, Key, and a tumbling one's period Start), the version
// expected (0: none), the value, the window's max keys, a score (a
// tumbling period's end, a sliding key's moment it holds nothing; unix
// ms) and a tumbling key's close event.
type WindowOp struct {
	Tumbling    bool
	Window, Key string
	Start       int64
	Expect      int64
	Value       []byte
	MaxKeys     int
	Score       int64
	Close       []byte
}

// WindowResult is what an append did with its window ops. Conflicts,
// when any, are the ops whose field was at another version, by index,
// with the value there now ("": none): nothing was written, the event
// not appended. Else Results has, for each op, its new version
// (decimal), "F" (the window full of keys: not written) or "L" (a
// tumbling period closed already: not written).
type WindowResult struct {
	Conflicts map[int]string
	Results   []string
}

// AppendEntry appends en with what the append script keeps for it
// (AppendChange, the windows' compare-and-sets), in one script. With a
// conflict on a window op, nothing is done: the id is "" and the
// result says which.
func (s *RedisStream) AppendEntry(ctx context.Context, en Entry) (string, WindowResult, error) {
	var res WindowResult
	if en.Entity == "" && len(en.Windows) == 0 {
		id, err := s.Append(ctx, en.EventID, en.Topic, en.At, en.Hops, en.Raw)
		return id, res, err
	}
	fields := []any{"id", en.EventID, "topic", en.Topic, "time", en.At.UnixNano(), "event", en.Raw}
	if en.Hops > 0 {
		fields = append(fields, "hops", en.Hops)
	}
	keys := []string{IngestStream, keyspace.FleetStates, keyspace.FleetTriggers, keyspace.FleetDue, keyspace.FleetSeen,
		keyspace.FleetWindows, keyspace.FleetWindowsDue, keyspace.FleetWindowsIdle, keyspace.FleetWindowsClosed}
	var cmd *redis.Cmd
	if en.Entity == "" {
		args := make([]any, 0, 2+9*len(en.Windows)+len(fields))
		args = append(args, en.Now.UnixMilli(), len(en.Windows))
		args = appendWindowOps(args, en.Windows)
		cmd = appendWindows.Run(ctx, s.c, keys, append(args, fields...)...)
	} else {
		ops := en.Ops
		args := make([]any, 0, 7+6*len(ops)+9*len(en.Windows)+len(fields))
		args = append(args, en.Entity, en.MaxEntities, en.State, en.Now.UnixMilli(), len(ops), en.ForgetAfter.Milliseconds(), len(en.Windows))
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
		args = appendWindowOps(args, en.Windows)
		if len(en.Windows) == 0 {
			keys = keys[:5]
		}
		cmd = appendChange.Run(ctx, s.c, keys, append(args, fields...)...)
	}
	if len(en.Windows) == 0 {
		id, err := cmd.Text()
		if err != nil {
			return "", res, fmt.Errorf("store: ingest %s: %w", en.Topic, err)
		}
		return id, res, nil
	}
	out, err := cmd.StringSlice()
	if err != nil || len(out) == 0 {
		return "", res, fmt.Errorf("store: ingest %s: %w", en.Topic, err)
	}
	if out[0] == "!" {
		res.Conflicts = map[int]string{}
		for i := 1; i+1 < len(out); i += 2 {
			if n, err := strconv.Atoi(out[i]); err == nil {
				res.Conflicts[n] = out[i+1]
			}
		}
		return "", res, nil
	}
	res.Results = out[1:]
	return out[0], res, nil
}

func appendWindowOps(args []any, ops []WindowOp) []any {
	for _, op := range ops {
		kind, start := "s", ""
		if op.Tumbling {
			kind, start = "t", strconv.FormatInt(op.Start, 10)
		}
		args = append(args, kind, op.Window, op.Key, start, op.Expect, op.Value, op.MaxKeys, op.Score, op.Close)
	}
	return args
}

// closeWindows appends the tumbling keys whose period ended by ARGV[1]
// (ms), at most ARGV[2]: each its close event (the "e" field its last
// event wrote) as an entry naming its window ("wclose"), its series and
// close event removed, and its period marked closed (KEYS[4], kept ten
// minutes), in the same script, so one member appends it, once.
// ARGV[3] periods follow (five each: host/window Period): a key closed
// with events gets a close of the window's current period with none
// (its head, the key, its tail), due at its end, unless an event writes
// it first. A window not among them (this member does not define it: a
// deploy under way, or a window removed) is left for a member that does,
// and dropped an hour after it came due. It returns how many it took,
// then the windows of the closes appended, one each.
var closeWindows = redis.NewScript(`
local now, limit, np = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local per = {}
for j = 0, np - 1 do
	local i = 4 + j * 5
	per[ARGV[i]] = {start = ARGV[i + 1], stop = ARGV[i + 2], head = ARGV[i + 3], tail = ARGV[i + 4]}
end
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - 600000)
local out = {}
local taken, skipped = 0, 0
while taken < limit and skipped < 10000 do
	local due = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'WITHSCORES', 'LIMIT', skipped, limit - taken)
	if #due == 0 then break end
	for n = 1, #due, 2 do
		local item, score = due[n], due[n + 1]
		local w, key, start = string.match(item, '^([^%z]*)%z(.*)%z([^%z]*)$')
		local p = w and per[w]
		if w and not p and now - tonumber(score) < 3600000 then
			skipped = skipped + 1
		else
			taken = taken + 1
			redis.call('ZREM', KEYS[3], item)
			if w then
				local sf, ef = 's\0' .. item, 'e\0' .. item
				local s = redis.call('HGET', KEYS[2], sf)
				local ev = redis.call('HGET', KEYS[2], ef)
				redis.call('HDEL', KEYS[2], sf, ef)
				if s then redis.call('HINCRBY', KEYS[2], 'n\0' .. w, -1) end
				redis.call('ZADD', KEYS[4], now, w .. '\0' .. start)
				if p and ev then
					redis.call('XADD', KEYS[1], '*', 'id', 'win-' .. string.sub(redis.sha1hex(item), 1, 24), 'topic', 'ruled.window',
						'time', score .. '000000', 'event', ev, 'wclose', w)
					out[#out + 1] = w
					if s and tonumber(p.start) > tonumber(start) then
						local nx = w .. '\0' .. key .. '\0' .. p.start
						if redis.call('HEXISTS', KEYS[2], 's\0' .. nx) == 0 then
							redis.call('HSETNX', KEYS[2], 'e\0' .. nx, p.head .. cjson.encode(key) .. p.tail)
							redis.call('ZADD', KEYS[3], 'NX', p.stop, nx)
						end
					end
				end
			end
		end
	end
end
return {tostring(taken), unpack(out)}
`)

// WindowPeriod is a tumbling window's current period as CloseWindows
// takes it (host/window Period).
type WindowPeriod struct {
	Window             string
	Start, End         int64 // Unix ns; Unix ms
	ZeroHead, ZeroTail []byte
}

// CloseWindows appends the closes of the tumbling windows' keys whose
// period ended by now (at most limit) to the stream, each an entry of
// topic ruled.window naming its window (StreamEntry.Close); periods are
// the windows defined, with their current period. It returns how many
// keys' periods it took (limit: there may be more) and the windows of
// the closes appended.
func (s *RedisStream) CloseWindows(ctx context.Context, now time.Time, periods []WindowPeriod, limit int) (int, []string, error) {
	args := make([]any, 0, 3+5*len(periods))
	args = append(args, now.UnixMilli(), limit, len(periods))
	for _, p := range periods {
		args = append(args, p.Window, p.Start, p.End, p.ZeroHead, p.ZeroTail)
	}
	out, err := closeWindows.Run(ctx, s.c, []string{IngestStream, keyspace.FleetWindows, keyspace.FleetWindowsDue,
		keyspace.FleetWindowsClosed}, args...).StringSlice()
	if err != nil || len(out) == 0 {
		return 0, nil, fmt.Errorf("store: windows' closes: %w", err)
	}
	taken, _ := strconv.Atoi(out[0])
	return taken, out[1:], nil
}

// WindowValues are fields of the fleet's windows (host/window Shared),
// "" for one not there.
func (s *RedisStream) WindowValues(ctx context.Context, fields []string) ([]string, error) {
	vals, err := s.c.HMGet(ctx, keyspace.FleetWindows, fields...).Result()
	if err != nil {
		return nil, fmt.Errorf("store: reading windows: %w", err)
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i], _ = v.(string)
	}
	return out, nil
}

// WindowKeys are the keys with a series in window name, up to limit
// (a tumbling one's keys of every period not closed yet, repeated).
func (s *RedisStream) WindowKeys(ctx context.Context, name string, limit int) ([]string, error) {
	prefix := "s\x00" + name + "\x00"
	match := globEscape(prefix) + "*"
	var out []string
	var cursor uint64
	for {
		fs, next, err := s.c.HScan(ctx, keyspace.FleetWindows, cursor, match, 1000).Result()
		if err != nil {
			return nil, fmt.Errorf("store: window %s's keys: %w", name, err)
		}
		for i := 0; i < len(fs); i += 2 {
			k, _, _ := strings.Cut(strings.TrimPrefix(fs[i], prefix), "\x00")
			out = append(out, k)
		}
		cursor = next
		if cursor == 0 || len(out) >= limit {
			return out, nil
		}
	}
}

// WindowCounts are the keys of each window named, as the append script
// counts them.
func (s *RedisStream) WindowCounts(ctx context.Context, names []string) (map[string]int, error) {
	out := map[string]int{}
	if len(names) == 0 {
		return out, nil
	}
	fields := make([]string, len(names))
	for i, n := range names {
		fields[i] = "n\x00" + n
	}
	vals, err := s.WindowValues(ctx, fields)
	if err != nil {
		return nil, err
	}
	for i, v := range vals {
		out[names[i]], _ = strconv.Atoi(v)
	}
	return out, nil
}

func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
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
		e.Close, _ = m.Values["wclose"].(string)
		out = append(out, e)
	}
	return out
}
