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

	"github.com/ruled-dev/ruled/host/planner"
)

// RedisBacklog is fleet mode's durable backlog on Redis: per shard, the work
// due (admissions and steps), by priority band and fairness key, with the
// shard's lease and fencing token beside it. It is host/pipeline's Source
// (ScanBand, FetchSteps, both read-only) and the write side the pipeline
// does not have: Add, and Take, which claims an item for a worker only
// under the shard's current fencing token.
//
// Every key of a shard carries the hash tag {N}, so each script touches one
// slot and the backlog runs on a Redis Cluster; host/keyspace/KEYS.md lists them.
type RedisBacklog struct {
	c redis.UniversalClient
}

// Backlog returns the fleet backlog on this Redis.
func (r *Redis) Backlog() *RedisBacklog { return &RedisBacklog{c: r.c} }

// BacklogItem is one unit of work due on a shard.
type BacklogItem struct {
	ID      string // unique within the shard: a run id and its step
	Band    int    // priority band, 0 first
	Key     string // fairness key
	Payload []byte // what a worker needs to run it
}

// ErrTaken is Take's answer for an item another worker (or process) took
// first.
var ErrTaken = errors.New("store: backlog item already taken")

// ErrFenced is Take's and Renew's answer for a fencing token that is no
// longer the shard's: its lease lapsed and another process holds the shard
// now. The holder of a stale token must stop serving the shard.
var ErrFenced = errors.New("store: shard lease lost (stale fencing token)")

func shardTag(shard int) string { return keyspace.Shard(shard) }

func bandsKey(shard int) string       { return shardTag(shard) + "bands" }
func itemsKey(shard int) string       { return shardTag(shard) + "items" }
func leaseKey(shard int) string       { return shardTag(shard) + "lease" }
func fenceKey(shard int) string       { return shardTag(shard) + "fence" }
func inflightKey(shard int) string    { return shardTag(shard) + "inflight" }
func doneKey(shard int) string        { return shardTag(shard) + "done" }
func tallyKey(shard, band int) string { return shardTag(shard) + "b:" + strconv.Itoa(band) + ":keys" }
func queueKey(shard, band int, k string) string {
	return shardTag(shard) + "b:" + strconv.Itoa(band) + ":q:" + k
}

// backlogAdd: KEYS bands, tally, queue, items, done; ARGV id, band, key,
// payload. An id queued, in flight or done within the hour is not queued
// again (an admission retried after a lost reply, or an ingest entry
// claimed from a member that had admitted it but not acknowledged it yet).
// Returns 1 if added.
var backlogAdd = redis.NewScript(`
if redis.call('ZSCORE', KEYS[5], ARGV[1]) then return 0 end
if redis.call('HSETNX', KEYS[4], ARGV[1], ARGV[4]) == 0 then return 0 end
redis.call('RPUSH', KEYS[3], ARGV[1])
redis.call('HINCRBY', KEYS[2], ARGV[3], 1)
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[2])
return 1
`)

// backlogTake: KEYS bands, tally, queue, items, lease, inflight; ARGV id,
// band, key, token. Returns {status, payload}: 1 taken, 0 already taken,
// -1 fenced. A taken item stays in items, and is noted in inflight with
// its band and key, until Done: a holder that dies mid-item leaves it
// there for the next holder to queue again (Requeue).
var backlogTake = redis.NewScript(`
local held = redis.call('HGET', KEYS[5], 'token')
if held ~= ARGV[4] then return {-1, false} end
if redis.call('LREM', KEYS[3], 1, ARGV[1]) == 0 then return {0, false} end
local payload = redis.call('HGET', KEYS[4], ARGV[1])
redis.call('HSET', KEYS[6], ARGV[1], ARGV[2] .. ' ' .. ARGV[3])
if redis.call('HINCRBY', KEYS[2], ARGV[3], -1) <= 0 then
  redis.call('HDEL', KEYS[2], ARGV[3])
  if redis.call('HLEN', KEYS[2]) == 0 then redis.call('ZREM', KEYS[1], ARGV[2]) end
end
return {1, payload}
`)

// Add queues an item on shard, at the end of its key's list. Adding an id
// the shard holds already does nothing and reports false.
func (b *RedisBacklog) Add(ctx context.Context, shard int, it BacklogItem) (bool, error) {
	n, err := backlogAdd.Run(ctx, b.c,
		[]string{bandsKey(shard), tallyKey(shard, it.Band), queueKey(shard, it.Band, it.Key), itemsKey(shard), doneKey(shard)},
		it.ID, it.Band, it.Key, it.Payload).Int()
	if err != nil {
		return false, fmt.Errorf("store: backlog add %s on shard %d: %w", it.ID, shard, err)
	}
	return n == 1, nil
}

// ScanBand reports the shard's best band with work and a tally per key at
// it: two commands, O(distinct keys at that band), whatever the backlog's
// depth.
func (b *RedisBacklog) ScanBand(ctx context.Context, shard int) (int, []planner.Tally, error) {
	bands, err := b.c.ZRangeWithScores(ctx, bandsKey(shard), 0, 0).Result()
	if err != nil {
		return 0, nil, fmt.Errorf("store: backlog scan shard %d: %w", shard, err)
	}
	if len(bands) == 0 {
		return planner.NoBand, nil, nil
	}
	band := int(bands[0].Score)
	counts, err := b.c.HGetAll(ctx, tallyKey(shard, band)).Result()
	if err != nil {
		return 0, nil, fmt.Errorf("store: backlog scan shard %d band %d: %w", shard, band, err)
	}
	tallies := make([]planner.Tally, 0, len(counts))
	for k, v := range counts {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			tallies = append(tallies, planner.Tally{Key: k, Count: n})
		}
	}
	return band, tallies, nil
}

// FetchSteps returns up to perKey ids of each key at band, oldest first, in
// one round trip; a key with nothing queued is left out.
func (b *RedisBacklog) FetchSteps(ctx context.Context, shard, band int, keys []string, perKey int) (map[string][]string, error) {
	if perKey <= 0 || len(keys) == 0 {
		return map[string][]string{}, nil
	}
	pipe := b.c.Pipeline()
	cmds := make([]*redis.StringSliceCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.LRange(ctx, queueKey(shard, band, k), 0, int64(perKey-1))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("store: backlog fetch shard %d band %d: %w", shard, band, err)
	}
	out := make(map[string][]string, len(keys))
	for i, k := range keys {
		if ids := cmds[i].Val(); len(ids) > 0 {
			out[k] = ids
		}
	}
	return out, nil
}

// Take claims an item for a worker and returns its payload: only under the
// shard's current fencing token (ErrFenced otherwise), and only once
// (ErrTaken for the second taker). The item is in flight until Done.
func (b *RedisBacklog) Take(ctx context.Context, shard, band int, key, id string, token int64) ([]byte, error) {
	res, err := backlogTake.Run(ctx, b.c,
		[]string{bandsKey(shard), tallyKey(shard, band), queueKey(shard, band, key), itemsKey(shard), leaseKey(shard), inflightKey(shard)},
		id, band, key, token).Slice()
	if err != nil {
		return nil, fmt.Errorf("store: backlog take %s on shard %d: %w", id, shard, err)
	}
	switch st, _ := res[0].(int64); st {
	case -1:
		return nil, ErrFenced
	case 0:
		return nil, ErrTaken
	}
	p, _ := res[1].(string)
	return []byte(p), nil
}

// leaseAcquire: KEYS lease, fence; ARGV holder, ttl ms. Returns the
// holder's token: a new one (INCR fence) if the lease was free or lapsed,
// the same one if holder holds it already (renewed); 0 if another holds it.
var leaseAcquire = redis.NewScript(`
local holder = redis.call('HGET', KEYS[1], 'holder')
if holder and holder ~= ARGV[1] then return 0 end
local token
if holder then
  token = tonumber(redis.call('HGET', KEYS[1], 'token'))
else
  token = redis.call('INCR', KEYS[2])
  redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'token', token)
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return token
`)

// leaseRenew: KEYS lease; ARGV holder, token, ttl ms. 1 renewed, 0 lost.
var leaseRenew = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'holder') ~= ARGV[1] or redis.call('HGET', KEYS[1], 'token') ~= ARGV[2] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`)

// leaseRelease: KEYS lease; ARGV holder, token. Deletes the lease if it is
// still this holder's.
var leaseRelease = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'holder') == ARGV[1] and redis.call('HGET', KEYS[1], 'token') == ARGV[2] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`)

// Acquire takes shard's lease for holder for ttl, or renews it if holder
// has it, and returns its fencing token; ok is false while another process
// holds it. Tokens only grow: a process that took a shard over holds a
// larger token than anyone who held it before, so a write fenced by the
// token (Take) refuses the old holder even if it has not noticed yet.
func (b *RedisBacklog) Acquire(ctx context.Context, shard int, holder string, ttl time.Duration) (token int64, ok bool, err error) {
	token, err = leaseAcquire.Run(ctx, b.c, []string{leaseKey(shard), fenceKey(shard)}, holder, ttl.Milliseconds()).Int64()
	if err != nil {
		return 0, false, fmt.Errorf("store: lease shard %d: %w", shard, err)
	}
	return token, token > 0, nil
}

// Renew extends holder's lease of shard to ttl from now; ErrFenced if the
// lease lapsed or changed hands.
func (b *RedisBacklog) Renew(ctx context.Context, shard int, holder string, token int64, ttl time.Duration) error {
	n, err := leaseRenew.Run(ctx, b.c, []string{leaseKey(shard)}, holder, token, ttl.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("store: renew lease shard %d: %w", shard, err)
	}
	if n == 0 {
		return ErrFenced
	}
	return nil
}

// Release gives up holder's lease of shard, if it still holds it.
func (b *RedisBacklog) Release(ctx context.Context, shard int, holder string, token int64) error {
	if err := leaseRelease.Run(ctx, b.c, []string{leaseKey(shard)}, holder, token).Err(); err != nil {
		return fmt.Errorf("store: release lease shard %d: %w", shard, err)
	}
	return nil
}

// backlogDone: KEYS items, inflight, lease, done; ARGV id, token. 1 done,
// -1 fenced (the item stays in flight for the shard's new holder). A done
// id is remembered for an hour (Add refuses it), then forgotten.
var backlogDone = redis.NewScript(fencedByToken + finishItem)

// fencedByToken ends a script with -1 unless the lease's token (KEYS[3])
// is the caller's (ARGV[2]).
const fencedByToken = `
if redis.call('HGET', KEYS[3], 'token') ~= ARGV[2] then return -1 end
`

// finishItem is Done's work, shared by RecordDone: KEYS items, inflight,
// lease, done; ARGV[1] the id.
const finishItem = `
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[1], ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[4], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - 3600000)
return 1
`

// Done forgets an item a worker finished. Under a stale token it is
// ErrFenced: the shard's new holder queues the item again, so it runs at
// least once more (the idempotency key makes that harmless).
func (b *RedisBacklog) Done(ctx context.Context, shard int, id string, token int64) error {
	n, err := backlogDone.Run(ctx, b.c, []string{itemsKey(shard), inflightKey(shard), leaseKey(shard), doneKey(shard)}, id, token).Int()
	if err != nil {
		return fmt.Errorf("store: backlog done %s on shard %d: %w", id, shard, err)
	}
	if n < 0 {
		return ErrFenced
	}
	return nil
}

// backlogRecordDone: KEYS items, inflight, lease, done, a hash of the
// shard's slot; ARGV id, token, field, value. Done, with HSET hash field
// value first, under the same token check: -1 fenced (nothing written).
var backlogRecordDone = redis.NewScript(fencedByToken + `
redis.call('HSET', KEYS[5], ARGV[3], ARGV[4])
` + finishItem)

// RecordDone writes field of hash and marks item id done, in one script
// under the shard's token: fleet mode's first pending record of the run an
// item started, so that no crash leaves the run recorded and its item still
// to be admitted again. hash must be in the shard's slot (its {N} tag);
// under a stale token nothing is written and it is ErrFenced.
func (b *RedisBacklog) RecordDone(ctx context.Context, shard int, id string, token int64, hash, field string, value []byte) error {
	if want := "{" + strconv.Itoa(shard) + "}"; !strings.Contains(hash, want) {
		return fmt.Errorf("store: backlog record %s: hash %q is not in shard %d's slot (%s)", id, hash, shard, want)
	}
	n, err := backlogRecordDone.Run(ctx, b.c, []string{itemsKey(shard), inflightKey(shard), leaseKey(shard), doneKey(shard), hash},
		id, token, field, value).Int()
	if err != nil {
		return fmt.Errorf("store: backlog record %s on shard %d: %w", id, shard, err)
	}
	if n < 0 {
		return ErrFenced
	}
	return nil
}

// backlogRequeue: KEYS bands, inflight, lease; ARGV token, the shard's key
// prefix. Every item in flight goes back to the head of its key's list (it
// was the oldest), under the caller's token. Returns how many, -1 fenced.
var backlogRequeue = redis.NewScript(`
if redis.call('HGET', KEYS[3], 'token') ~= ARGV[1] then return -1 end
local all = redis.call('HGETALL', KEYS[2])
local n = 0
for i = 1, #all, 2 do
  local id, where = all[i], all[i+1]
  local sp = string.find(where, ' ', 1, true)
  local band, key = string.sub(where, 1, sp - 1), string.sub(where, sp + 1)
  local p = ARGV[2] .. 'b:' .. band
  redis.call('LPUSH', p .. ':q:' .. key, id)
  redis.call('HINCRBY', p .. ':keys', key, 1)
  redis.call('ZADD', KEYS[1], band, band)
  n = n + 1
end
redis.call('DEL', KEYS[2])
return n
`)

// Requeue puts back every item the shard's earlier holders took and never
// finished, at the head of its key's list: the first thing a process does
// with a shard it took over, under its new token, before its pipeline
// starts. The script derives the lists' keys from the shard's prefix;
// they all carry its hash tag, so they are in its slot on a cluster.
func (b *RedisBacklog) Requeue(ctx context.Context, shard int, token int64) (int, error) {
	n, err := backlogRequeue.Run(ctx, b.c, []string{bandsKey(shard), inflightKey(shard), leaseKey(shard)}, token, shardTag(shard)).Int()
	if err != nil {
		return 0, fmt.Errorf("store: backlog requeue shard %d: %w", shard, err)
	}
	if n < 0 {
		return 0, ErrFenced
	}
	return n, nil
}

// MembersKey is fleet mode's roll call: member → when it last beat.
const MembersKey = keyspace.Members

// Beat records holder alive now and returns how many members beat within
// ttl, holder included; those that did not are struck off.
func (b *RedisBacklog) Beat(ctx context.Context, holder string, ttl time.Duration) (int, error) {
	now := time.Now()
	pipe := b.c.TxPipeline()
	pipe.ZAdd(ctx, MembersKey, redis.Z{Score: float64(now.UnixMilli()), Member: holder})
	pipe.ZRemRangeByScore(ctx, MembersKey, "-inf", strconv.FormatInt(now.Add(-ttl).UnixMilli(), 10))
	n := pipe.ZCard(ctx, MembersKey)
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("store: fleet roll call: %w", err)
	}
	return int(n.Val()), nil
}
