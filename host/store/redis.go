package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// RedisOptions configure OpenRedis and NewRedis. The zero value is the
// default.
type RedisOptions struct {
	// Timeout bounds each Commander call and the PING at open. KV calls
	// use their caller's context, and this only when it has no deadline.
	// default: 5s.
	Timeout time.Duration
	// KVQuota bounds each plugin's kv scope.
	KVQuota Quota
}

// DefaultRedisTimeout is RedisOptions.Timeout's default.
const DefaultRedisTimeout = 5 * time.Second

// Redis is the store on a Redis or Valkey server. It is safe for concurrent
// use. It owns a go-redis client, whose connections Close releases.
//
// It implements the sequencer's Commander (which the sequencer wraps into
// its Hasher, deleting through Do) and the wasm host's KV (a scope is the
// hash "ruled:kv:<scope>").
type Redis struct {
	c       redis.UniversalClient
	addr    string
	timeout time.Duration
	quota   Quota
}

// ErrBadURL is a Redis URL that does not parse.
var ErrBadURL = errors.New("malformed")

type badURL struct{ err error }

func (b badURL) Error() string        { return b.err.Error() }
func (b badURL) Unwrap() error        { return b.err }
func (b badURL) Is(target error) bool { return target == ErrBadURL }

// Permanent reports whether err from OpenRedis is one that trying again
// will not cure: a malformed URL, or a server that refused us (a wrong
// password, a database index out of range). A server not answering (not up
// yet, a network down) or still loading its data is not permanent.
func Permanent(err error) bool {
	if errors.Is(err, ErrBadURL) {
		return true
	}
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	for _, p := range []string{"WRONGPASS", "NOAUTH", "NOPERM", "ERR"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// OpenRedis connects to the server at url (redis://[user:password@]host:port[/db],
// rediss:// for TLS, unix:///path) and PINGs it, so a wrong address or
// password fails here, naming the address, rather than at the first write.
//
// A URL that names more nodes with addr parameters
// (redis://host1:port1?addr=host2:port2&addr=host3:port3) opens a Redis
// Cluster: every key ruled writes in fleet mode carries a {shard} hash tag,
// so each script touches one slot (host/keyspace/KEYS.md).
func OpenRedis(rawURL string, opts RedisOptions) (*Redis, error) {
	if u, err := url.Parse(rawURL); err == nil && u.Query().Has("addr") {
		return openCluster(rawURL, opts)
	}
	o, err := redis.ParseURL(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error quotes the URL, password and all
		}
		return nil, fmt.Errorf("store: redis url: %w", badURL{err})
	}
	// Honour the contexts given to each call (the KV's caller's, the
	// Commander's timeout) instead of only the client's fixed socket timeouts.
	o.ContextTimeoutEnabled = true
	// Maintenance notifications are a Redis Enterprise feature; against
	// Redis or Valkey they are only a handshake that fails.
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	r := NewRedis(redis.NewClient(o), opts)
	r.addr = o.Addr
	ctx, cancel := r.ctx()
	defer cancel()
	if err := r.c.Ping(ctx).Err(); err != nil {
		_ = r.c.Close()
		return nil, fmt.Errorf("store: redis at %s: %w", o.Addr, err)
	}
	return r, nil
}

func openCluster(rawURL string, opts RedisOptions) (*Redis, error) {
	o, err := redis.ParseClusterURL(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("store: redis cluster url: %w", badURL{err})
	}
	o.ContextTimeoutEnabled = true
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	r := NewRedis(redis.NewClusterClient(o), opts)
	r.addr = strings.Join(o.Addrs, ",")
	ctx, cancel := r.ctx()
	defer cancel()
	if err := r.c.Ping(ctx).Err(); err != nil {
		_ = r.c.Close()
		return nil, fmt.Errorf("store: redis cluster at %s: %w", r.addr, err)
	}
	return r, nil
}

// NewRedis wraps a client the caller built (a cluster client, a client with
// TLS settings a URL cannot carry). The Redis takes it over: Close closes
// it. Set the client's ContextTimeoutEnabled, or KV calls wait for its
// socket timeouts rather than their contexts.
func NewRedis(c redis.UniversalClient, opts RedisOptions) *Redis {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultRedisTimeout
	}
	return &Redis{c: c, timeout: opts.Timeout, quota: opts.KVQuota.withDefaults()}
}

// Client is the go-redis client, for the packages that need more than a
// hash and a kv (the bus's pub/sub and streams). Do not close it.
func (r *Redis) Client() redis.UniversalClient { return r.c }

// Close closes the client and its connections.
func (r *Redis) Close() error {
	if err := r.c.Close(); err != nil {
		return fmt.Errorf("store: redis close: %w", err)
	}
	return nil
}

// ctx is the context of a Commander call: a timeout of its own, from
// Background rather than from any context captured at construction.
//
// The Commander's callers (the sequencer's pending store, on pool workers
// and timer callbacks) have no context to pass. A context captured at open
// would be the daemon's lifetime, cancelled at shutdown, and would make a
// pending record written during shutdown fail half-sent; a record is exactly
// what shutdown must not lose. A per-call timeout instead bounds how long an
// unreachable server can hold a worker, and lets every call in flight finish.
func (r *Redis) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), r.timeout)
}

// HSet sets field of the hash key to value (a string or a []byte is stored
// as given; go-redis formats numbers).
func (r *Redis) HSet(key, field string, value any) error {
	ctx, cancel := r.ctx()
	defer cancel()
	if err := r.c.HSet(ctx, key, field, value).Err(); err != nil {
		return fmt.Errorf("store: redis hset %s %s: %w", key, field, err)
	}
	return nil
}

// HSetMany sets fields[i] of the hash key to values[i] in one HSET: one
// round trip, applied together.
func (r *Redis) HSetMany(key string, fields []string, values [][]byte) error {
	if len(fields) != len(values) {
		return fmt.Errorf("store: redis hset %s: %d fields, %d values", key, len(fields), len(values))
	}
	args := make([]any, 0, 2*len(fields))
	for i, f := range fields {
		args = append(args, f, values[i])
	}
	ctx, cancel := r.ctx()
	defer cancel()
	if err := r.c.HSet(ctx, key, args...).Err(); err != nil {
		return fmt.Errorf("store: redis hset %s (%d fields): %w", key, len(fields), err)
	}
	return nil
}

// HSetDel sets fields[i] of the hash key to values[i] and removes the
// fields del, in one MULTI: one round trip, applied together.
func (r *Redis) HSetDel(key string, fields []string, values [][]byte, del []string) error {
	if len(fields) != len(values) {
		return fmt.Errorf("store: redis hset %s: %d fields, %d values", key, len(fields), len(values))
	}
	if len(fields) == 0 && len(del) == 0 {
		return nil
	}
	args := make([]any, 0, 2*len(fields))
	for i, f := range fields {
		args = append(args, f, values[i])
	}
	ctx, cancel := r.ctx()
	defer cancel()
	_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if len(args) > 0 {
			p.HSet(ctx, key, args...)
		}
		if len(del) > 0 {
			p.HDel(ctx, key, del...)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: redis hset %s (%d fields, %d removed): %w", key, len(fields), len(del), err)
	}
	return nil
}

// HDel removes fields from the hash key; removing none, or fields that are
// not there, is not an error.
func (r *Redis) HDel(key string, fields ...string) error {
	if len(fields) == 0 {
		return nil
	}
	ctx, cancel := r.ctx()
	defer cancel()
	if err := r.c.HDel(ctx, key, fields...).Err(); err != nil {
		return fmt.Errorf("store: redis hdel %s: %w", key, err)
	}
	return nil
}

// HGetAll returns every field of the hash key; a missing hash is an empty
// map.
func (r *Redis) HGetAll(key string) (map[string]string, error) {
	ctx, cancel := r.ctx()
	defer cancel()
	m, err := r.c.HGetAll(ctx, key).Result()
	if err != nil {
		return nil, fmt.Errorf("store: redis hgetall %s: %w", key, err)
	}
	return m, nil
}

// Do sends any command and returns its reply as go-redis decodes it
// (int64, string, []any, ...). A nil reply is (nil, nil), not an error: the
// caller does not import go-redis and could not recognize redis.Nil. A
// []string argument is spread into its elements, as go-redis's typed
// commands do, so Do("HDEL", key, fields) and Do("HDEL", key, f1, f2) send
// the same command.
func (r *Redis) Do(cmd string, args ...any) (any, error) {
	ctx, cancel := r.ctx()
	defer cancel()
	all := make([]any, 1, 1+len(args))
	all[0] = cmd
	for _, a := range args {
		if ss, ok := a.([]string); ok {
			for _, s := range ss {
				all = append(all, s)
			}
			continue
		}
		all = append(all, a)
	}
	v, err := r.c.Do(ctx, all...).Result()
	if err == redis.Nil {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: redis %s: %w", cmd, err)
	}
	return v, nil
}

// LogRedisTo sends go-redis's own lines — it logs each failed dial to
// stderr by itself — to log at debug: what a failure means is logged where
// it matters. It sets go-redis's process-wide logger.
func LogRedisTo(log interface{ Debug(msg string, args ...any) }) { redis.SetLogger(redisLogger{log}) }

type redisLogger struct {
	log interface{ Debug(msg string, args ...any) }
}

func (l redisLogger) Printf(_ context.Context, format string, v ...any) {
	l.log.Debug(fmt.Sprintf(format, v...))
}
