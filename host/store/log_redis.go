package store

import (
	"encoding/json"
	"fmt"
	"github.com/ruled-dev/ruled/host/keyspace"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ruled-dev/ruled/host/runlog"
)

// RedisLog is the execution log on Redis (runlog.Store). Its staging tier
// is plain keys, as the execution log's origin has them — ruled:log:<run>:exec and
// ruled:log:<run>:n:<seq> — written with a TTL so that what a dead process
// staged and nobody committed does not stay forever. Its final store is one
// hash per run, moved there by a script that reads the staged values inside
// Redis, so an entry's bytes travel from ruled to Redis once:
//
//	ruled:run:<run>   hash: "exec", "n:000001" … → the entries
//	ruled:runs        sorted set: run → its start (unix ms)
//	ruled:runs:meta   hash: run → runlog.Meta as JSON (rule, outcome, start, bytes)
//
// On a Redis Cluster a script may only touch keys of one slot, and the
// commit moves entries of many runs and updates the index at once; so there
// every key of the log carries the hash tag {ruled:log} — staged keys are
// {ruled:log}:log:<run>:…, then {ruled:log}:run:<run>, {ruled:log}:runs,
// {ruled:log}:runs:meta — and the whole log lives on the one node serving
// that slot. Retention bounds it (runs and bytes), so it fits a node; its
// commits, one per batch of entries, are that node's load (see host/keyspace/KEYS.md).
// The key names runlog derives are the same on both; only what they are
// stored under differs.
type RedisLog struct {
	r   *Redis
	ttl time.Duration
	k   logKeys
}

// logKeys names the log's keys on one Redis: stage prefixes runlog's keys
// (which start with runlog.Prefix) replace runlog.Prefix with.
type logKeys struct {
	stage, run, runs, meta string
}

var (
	serverLogKeys  = logKeys{stage: runlog.Prefix, run: keyspace.RunPrefix, runs: keyspace.Runs, meta: keyspace.RunsMeta}
	clusterLogKeys = logKeys{stage: keyspace.ClusterLog(keyspace.LogPrefix), run: keyspace.ClusterLog(keyspace.RunPrefix), runs: keyspace.ClusterLog(keyspace.Runs), meta: keyspace.ClusterLog(keyspace.RunsMeta)}
)

// staged is where runlog's key is staged. A key outside runlog.Prefix
// stays as it is, for the commit to refuse.
func (k logKeys) staged(key string) string {
	if rest, ok := strings.CutPrefix(key, runlog.Prefix); ok {
		return k.stage + rest
	}
	return key
}

// StageTTL is how long a staged entry waits for its commit.
const StageTTL = time.Hour

// Log returns the execution log on r.
func (r *Redis) Log() *RedisLog {
	k := serverLogKeys
	if _, ok := r.c.(*redis.ClusterClient); ok {
		k = clusterLogKeys
	}
	return &RedisLog{r: r, ttl: StageTTL, k: k}
}

// commitScript moves staged entries into their run's hash. Every key is
// checked before anything moves; a key no longer staged is skipped. ARGV
// names the log's keys (logKeys): the staging prefix, the run hashes'
// prefix, the index's sorted set and its meta hash.
//
// It reads and deletes the staged keys with one MGET and one DEL, writes
// each run's fields with one HSET, and its index entry with one HMGET,
// HSET and ZADD for the whole batch (in chunks that keep unpack within
// Lua's stack): about one command per entry (HSTRLEN, for the run's byte
// count) and one per run, where one GET, HSTRLEN, HSET, HGET, HSET and DEL
// per entry made the execution log 60 % of a fleet run's Redis commands.
var commitScript = redis.NewScript(`
local p, rp, runs, meta = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local parsed = {}
for i, k in ipairs(KEYS) do
  if string.sub(k, 1, #p) ~= p then
    return redis.error_reply('runlog: key ' .. k .. ' is outside ' .. p)
  end
  local run, field = string.match(string.sub(k, #p + 1), '^([%w_-]+):(.+)$')
  if not run or not (field == 'exec' or string.match(field, '^n:%d%d%d%d%d%d$')) then
    return redis.error_reply('runlog: key ' .. k .. ' is neither a run nor a node')
  end
  parsed[i] = {run, field}
end
local step = 1000
local function range(list, i) return unpack(list, i, math.min(i + step - 1, #list)) end
local vals = {}
for i = 1, #KEYS, step do
  local part = redis.call('MGET', range(KEYS, i))
  for j = 1, #part do vals[i + j - 1] = part[j] end
end
local byRun, order, present, seen = {}, {}, {}, {}
for i, k in ipairs(KEYS) do
  local v = vals[i]
  if v and not seen[k] then
    seen[k] = true
    local run, field = parsed[i][1], parsed[i][2]
    local e = byRun[run]
    if not e then
      e = {args = {}, delta = 0}
      byRun[run] = e
      order[#order + 1] = run
    end
    e.delta = e.delta + #v - redis.call('HSTRLEN', rp .. run, field)
    e.args[#e.args + 1] = field
    e.args[#e.args + 1] = v
    if field == 'exec' then e.exec = v end
    present[#present + 1] = k
  end
end
if #present == 0 then return {0} end
local metas = {}
for i = 1, #order, step do
  local part = redis.call('HMGET', meta, range(order, i))
  for j = 1, #part do metas[i + j - 1] = part[j] end
end
local out, margs, zargs = {#present}, {}, {}
for i, run in ipairs(order) do
  local e = byRun[run]
  for j = 1, #e.args, step do
    redis.call('HSET', rp .. run, range(e.args, j))
  end
  local m = metas[i] and cjson.decode(metas[i]) or {id = run, bytes = 0}
  m.bytes = m.bytes + e.delta
  if e.exec then
    local x = cjson.decode(e.exec)
    m.rule, m.outcome, m.at = x.rule, x.outcome, x.at
    zargs[#zargs + 1] = x.at
    zargs[#zargs + 1] = run
  end
  local enc = cjson.encode(m)
  margs[#margs + 1] = run
  margs[#margs + 1] = enc
  out[#out + 1] = enc
end
for i = 1, #margs, step do redis.call('HSET', meta, range(margs, i)) end
for i = 1, #zargs, step do redis.call('ZADD', runs, range(zargs, i)) end
for i = 1, #present, step do redis.call('DEL', range(present, i)) end
return out
`)

// Stage writes entries under their keys, with StageTTL.
func (l *RedisLog) Stage(entries []runlog.Entry) error {
	ctx, cancel := l.r.ctx()
	defer cancel()
	_, err := l.r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, e := range entries {
			p.Set(ctx, l.k.staged(e.Key), e.Value, l.ttl)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: log stage: %w", err)
	}
	return nil
}

// Commit moves staged entries into their runs' hashes.
func (l *RedisLog) Commit(keys []string) (int, []runlog.Meta, error) {
	if len(keys) == 0 {
		return 0, nil, nil
	}
	ctx, cancel := l.r.ctx()
	defer cancel()
	staged := make([]string, len(keys))
	for i, k := range keys {
		staged[i] = l.k.staged(k)
	}
	res, err := commitScript.Run(ctx, l.r.c, staged, l.k.stage, l.k.run, l.k.runs, l.k.meta).Slice()
	if err != nil {
		return 0, nil, fmt.Errorf("store: log commit: %w", err)
	}
	if len(res) == 0 {
		return 0, nil, fmt.Errorf("store: log commit: an empty answer")
	}
	moved, _ := res[0].(int64)
	touched := make([]runlog.Meta, 0, len(res)-1)
	for _, v := range res[1:] {
		var m runlog.Meta
		if s, ok := v.(string); ok && json.Unmarshal([]byte(s), &m) == nil {
			touched = append(touched, m)
		}
	}
	return int(moved), touched, nil
}

// Staged lists the staged keys nobody committed, as runlog names them.
func (l *RedisLog) Staged() ([]string, error) {
	ctx, cancel := l.r.ctx()
	defer cancel()
	var c redis.Cmdable = l.r.c
	if cc, ok := l.r.c.(*redis.ClusterClient); ok {
		// A cluster client sends SCAN to any node; the log's keys are all
		// on the node serving its hash tag.
		node, err := cc.MasterForKey(ctx, l.k.stage)
		if err != nil {
			return nil, fmt.Errorf("store: log staged: %w", err)
		}
		c = node
	}
	var out []string
	it := c.Scan(ctx, 0, l.k.stage+"*", 1000).Iterator()
	for it.Next(ctx) {
		out = append(out, runlog.Prefix+strings.TrimPrefix(it.Val(), l.k.stage))
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("store: log staged: %w", err)
	}
	return out, nil
}

// Delete removes runs and their entries.
func (l *RedisLog) Delete(runs []string) error {
	if len(runs) == 0 {
		return nil
	}
	ctx, cancel := l.r.ctx()
	defer cancel()
	_, err := l.r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, run := range runs {
			p.Del(ctx, l.k.run+run)
			p.HDel(ctx, l.k.meta, run)
			p.ZRem(ctx, l.k.runs, run)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: log delete: %w", err)
	}
	return nil
}

// Index lists every run kept.
func (l *RedisLog) Index() ([]runlog.Meta, error) {
	ctx, cancel := l.r.ctx()
	defer cancel()
	all, err := l.r.c.HGetAll(ctx, l.k.meta).Result()
	if err != nil {
		return nil, fmt.Errorf("store: log index: %w", err)
	}
	out := make([]runlog.Meta, 0, len(all))
	for _, v := range all {
		var m runlog.Meta
		if json.Unmarshal([]byte(v), &m) == nil {
			out = append(out, m)
		}
	}
	return out, nil
}

// Entries returns a run's entries in key order.
func (l *RedisLog) Entries(run string) ([][]byte, error) {
	ctx, cancel := l.r.ctx()
	defer cancel()
	all, err := l.r.c.HGetAll(ctx, l.k.run+run).Result()
	if err != nil {
		return nil, fmt.Errorf("store: log entries: %w", err)
	}
	fields := make([]string, 0, len(all))
	for f := range all {
		fields = append(fields, f)
	}
	slices.Sort(fields) // "exec" < "n:000001" < …
	out := make([][]byte, len(fields))
	for i, f := range fields {
		out[i] = []byte(all[f])
	}
	return out, nil
}

// LastSeq is the highest node number kept for run.
func (l *RedisLog) LastSeq(run string) (int, error) {
	ctx, cancel := l.r.ctx()
	defer cancel()
	fields, err := l.r.c.HKeys(ctx, l.k.run+run).Result()
	if err != nil {
		return 0, fmt.Errorf("store: log last seq: %w", err)
	}
	last := 0
	for _, f := range fields {
		if rest, ok := strings.CutPrefix(f, "n:"); ok {
			if n, err := strconv.Atoi(rest); err == nil && n > last {
				last = n
			}
		}
	}
	return last, nil
}
