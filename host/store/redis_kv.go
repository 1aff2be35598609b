package store

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// A scope is one hash, KVPrefix+scope, whose field "" holds the total bytes
// of its keys and values. The empty key is free for this because the wasm
// host refuses it (and so does Set). Keeping the count in the same hash
// keeps every kv command on one key (one slot, should the store ever run on
// a cluster), and the scripts below keep it exact: a script runs
// atomically, so two Sets racing for the last bytes of a quota cannot both
// win.

// kvSet: KEYS[1] the scope's hash; ARGV: key, value, max keys, max bytes
// (-1: no bound). Returns {written, keys, bytes, keys after, bytes after}:
// the usage before the write and what it would be (is, if written) after.
var kvSet = redis.NewScript(`
local h, f, v = KEYS[1], ARGV[1], ARGV[2]
local maxKeys, maxBytes = tonumber(ARGV[3]), tonumber(ARGV[4])
local keys, used = redis.call('HLEN', h), 0
local u = redis.call('HGET', h, '')
if u then
  used = tonumber(u)
  keys = keys - 1
end
local nkeys, nused = keys, used + #f + #v
if redis.call('HEXISTS', h, f) == 1 then
  nused = nused - #f - redis.call('HSTRLEN', h, f)
else
  nkeys = keys + 1
end
if (maxKeys >= 0 and nkeys > maxKeys and nkeys > keys) or
   (maxBytes >= 0 and nused > maxBytes and nused > used) then
  return {0, keys, used, nkeys, nused}
end
redis.call('HSET', h, f, v, '', nused)
return {1, keys, used, nkeys, nused}
`)

// kvDelete: KEYS[1] the scope's hash; ARGV[1] the key. Returns 1 if the key
// was there. A scope left empty is deleted with its count.
var kvDelete = redis.NewScript(`
local h, f = KEYS[1], ARGV[1]
if redis.call('HEXISTS', h, f) == 0 then return 0 end
if redis.call('HLEN', h) <= 2 then
  redis.call('DEL', h)
  return 1
end
local n = #f + redis.call('HSTRLEN', h, f)
redis.call('HDEL', h, f)
redis.call('HINCRBY', h, '', -n)
return 1
`)

// kvCtx gives a KV call the Redis's timeout when its context has no
// deadline of its own.
func (r *Redis) kvCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, r.timeout)
}

// Get returns the value of key in scope; found is false when there is none.
func (r *Redis) Get(ctx context.Context, scope, key string) ([]byte, bool, error) {
	if key == "" { // the byte count's field
		return nil, false, nil
	}
	ctx, cancel := r.kvCtx(ctx)
	defer cancel()
	v, err := r.c.HGet(ctx, KVPrefix+scope, key).Bytes()
	if err == redis.Nil {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("store: redis kv get %q: %w", scope, err)
	}
	return v, true, nil
}

// Set stores value under key in scope. It fails with an error wrapping
// ErrQuota when the write would take the scope over its quota.
func (r *Redis) Set(ctx context.Context, scope, key string, value []byte) error {
	if key == "" {
		return fmt.Errorf("store: redis kv set %q: empty key", scope)
	}
	ctx, cancel := r.kvCtx(ctx)
	defer cancel()
	res, err := kvSet.Run(ctx, r.c, []string{KVPrefix + scope}, key, value, r.quota.Keys, r.quota.Bytes).Int64Slice()
	if err == nil && len(res) != 5 {
		err = fmt.Errorf("script answered %v", res)
	}
	if err != nil {
		return fmt.Errorf("store: redis kv set %q: %w", scope, err)
	}
	if res[0] == 1 {
		return nil
	}
	// The script refused (by the same rule as Quota.check, which words the
	// error from the usage the script saw).
	err = r.quota.check(scope, usage{int(res[1]), res[2]}, usage{int(res[3]), res[4]})
	if err == nil {
		err = fmt.Errorf("store: redis kv set %q: refused by the script within quota %+v", scope, r.quota)
	}
	return err
}

// Delete removes key from scope. A key that is not there is not an error.
func (r *Redis) Delete(ctx context.Context, scope, key string) error {
	if key == "" {
		return nil
	}
	ctx, cancel := r.kvCtx(ctx)
	defer cancel()
	if err := kvDelete.Run(ctx, r.c, []string{KVPrefix + scope}, key).Err(); err != nil {
		return fmt.Errorf("store: redis kv delete %q: %w", scope, err)
	}
	return nil
}
