package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
	bolt "go.etcd.io/bbolt"

	"github.com/ruled-dev/ruled/host/audit"
	"github.com/ruled-dev/ruled/host/keyspace"
)

// The audit trail's chain (host/audit) in each store: its entries by seq,
// and its head (the last seq and hash, and the anchor: the hash of the
// last entry retention trimmed). An append reads the head and writes the
// entry sealed under it in one transaction (bbolt) or one script under a
// compare-and-set of the head's hash (Redis: Lua has no sha256, so the
// hash is worked out in Go, again if another member appended first).

// AuditChain is a read of the chain: entries oldest first, and where they
// sit in it.
type AuditChain struct {
	Entries []audit.Entry `json:"entries"`
	// Anchor is the hash of the entry before the oldest kept ("" when
	// none was trimmed); First and Last are the kept entries' seqs, Head
	// the last one's hash.
	Anchor string `json:"anchor"`
	First  uint64 `json:"first"`
	Last   uint64 `json:"last"`
	Head   string `json:"head"`
}

// MaxAuditRead bounds the entries one read returns.
const MaxAuditRead = 10_000

var (
	auditBucket     = []byte("ruled:audit")
	auditHeadBucket = []byte("ruled:audit:head")
)

// auditHead is the chain's head as stored.
type auditHead struct {
	Seq    uint64 `json:"seq"`
	Hash   string `json:"hash"`
	Anchor string `json:"anchor"`
	Count  int    `json:"count"` // entries kept
}

// AuditAppend implements audit.Log.
func (b *Bolt) AuditAppend(_ context.Context, e audit.Entry, keep audit.Retention) (audit.Entry, error) {
	err := b.update(func(tx *bolt.Tx) error {
		hb, err := tx.CreateBucketIfNotExists(auditHeadBucket)
		if err != nil {
			return err
		}
		eb, err := tx.CreateBucketIfNotExists(auditBucket)
		if err != nil {
			return err
		}
		var h auditHead
		if raw := hb.Get([]byte("head")); raw != nil {
			if err := json.Unmarshal(raw, &h); err != nil {
				return fmt.Errorf("store: audit head: %w", err)
			}
		}
		e.Seal(h.Seq+1, h.Hash)
		enc, _ := json.Marshal(e)
		if err := eb.Put(seqKey(e.Seq), enc); err != nil {
			return err
		}
		h.Seq, h.Hash = e.Seq, e.Hash
		h.Count++
		// Retention: the oldest go past the bound, the anchor with them.
		c := eb.Cursor()
		old := e.At.Add(-keep.MaxAge)
		for k, v := c.First(); k != nil && h.Count > 1; k, v = c.First() {
			var first audit.Entry
			json.Unmarshal(v, &first)
			if (keep.MaxEntries <= 0 || h.Count <= keep.MaxEntries) && (keep.MaxAge <= 0 || !first.At.Before(old)) {
				break
			}
			h.Anchor = first.Hash
			if err := eb.Delete(k); err != nil {
				return err
			}
			h.Count--
		}
		hraw, _ := json.Marshal(h)
		return hb.Put([]byte("head"), hraw)
	})
	return e, err
}

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// AuditRead reads the chain: the entries from seq from on, at most limit
// (MaxAuditRead at most); from 0 reads the newest limit.
func (b *Bolt) AuditRead(_ context.Context, from uint64, limit int) (*AuditChain, error) {
	limit = auditLimit(limit)
	out := &AuditChain{Entries: []audit.Entry{}}
	err := b.db.View(func(tx *bolt.Tx) error {
		hb, eb := tx.Bucket(auditHeadBucket), tx.Bucket(auditBucket)
		if hb == nil || eb == nil {
			return nil
		}
		var h auditHead
		if raw := hb.Get([]byte("head")); raw != nil {
			if err := json.Unmarshal(raw, &h); err != nil {
				return fmt.Errorf("store: audit head: %w", err)
			}
		}
		out.Anchor, out.Last, out.Head = h.Anchor, h.Seq, h.Hash
		c := eb.Cursor()
		if k, _ := c.First(); k != nil {
			out.First = binary.BigEndian.Uint64(k)
		}
		if from == 0 && h.Seq >= uint64(limit) {
			from = h.Seq - uint64(limit) + 1
		}
		for k, v := c.Seek(seqKey(from)); k != nil && len(out.Entries) < limit; k, v = c.Next() {
			var e audit.Entry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("store: audit entry %d: %w", binary.BigEndian.Uint64(k), err)
			}
			out.Entries = append(out.Entries, e)
		}
		return nil
	})
	return out, err
}

func auditLimit(limit int) int {
	if limit <= 0 || limit > MaxAuditRead {
		return MaxAuditRead
	}
	return limit
}

// auditAppend appends an entry sealed by the member under the head it
// read, if the head is still that: 0 when another append came first.
// KEYS: the list, the head. ARGV: the head's hash read, the entry's JSON,
// its hash, its seq, the most entries kept, how many of the oldest are
// past their age.
var auditAppend = redis.NewScript(`
local h = redis.call('HGET', KEYS[2], 'hash') or ''
if h ~= ARGV[1] then return 0 end
redis.call('RPUSH', KEYS[1], ARGV[2])
redis.call('HSET', KEYS[2], 'hash', ARGV[3], 'seq', ARGV[4])
local drop = tonumber(ARGV[6])
local over = redis.call('LLEN', KEYS[1]) - tonumber(ARGV[5])
if over > drop then drop = over end
local left = redis.call('LLEN', KEYS[1]) - 1
if drop > left then drop = left end
for i = 1, drop do
  local old = redis.call('LPOP', KEYS[1])
  redis.call('HSET', KEYS[2], 'anchor', cjson.decode(old)['hash'])
end
return 1
`)

// auditTries bounds the compare-and-set rounds of one append: members
// appending at once each win one round in a few.
const auditTries = 32

// RedisAudit is the audit trail's chain in Redis, shared by a fleet's
// members and ruled deploy.
type RedisAudit struct{ r *Redis }

// Audit returns the chain on r.
func (r *Redis) Audit() *RedisAudit { return &RedisAudit{r: r} }

// AuditAppend implements audit.Log.
func (a *RedisAudit) AuditAppend(ctx context.Context, e audit.Entry, keep audit.Retention) (audit.Entry, error) {
	c := a.r.c
	at := e.At
	for range auditTries {
		h, err := c.HMGet(ctx, keyspace.AuditHead, "hash", "seq").Result()
		if err != nil {
			return e, fmt.Errorf("store: audit head: %w", err)
		}
		hash, _ := h[0].(string)
		seq, _ := strconv.ParseUint(fmt.Sprint(h[1]), 10, 64)
		// The oldest past their age: counted here, dropped by the script.
		expired := 0
		if keep.MaxAge > 0 {
			firsts, err := c.LRange(ctx, keyspace.Audit, 0, 99).Result()
			if err != nil {
				return e, fmt.Errorf("store: audit: %w", err)
			}
			for _, raw := range firsts {
				var old audit.Entry
				if json.Unmarshal([]byte(raw), &old) != nil || !old.At.Before(at.Add(-keep.MaxAge)) {
					break
				}
				expired++
			}
		}
		max := keep.MaxEntries
		if max <= 0 {
			max = 1 << 30
		}
		e.At = at
		e.Seal(seq+1, hash)
		enc, _ := json.Marshal(e)
		ok, err := auditAppend.Run(ctx, c, []string{keyspace.Audit, keyspace.AuditHead},
			hash, enc, e.Hash, e.Seq, max, expired).Int()
		if err != nil {
			return e, fmt.Errorf("store: audit append: %w", err)
		}
		if ok == 1 {
			return e, nil
		}
	}
	return e, errors.New("store: audit append: the head kept moving (other members appending); not appended")
}

// auditRead reads the head and a run of entries in one script, so that
// an append between the two (which may trim the oldest) cannot make them
// disagree. KEYS: the list, the head. ARGV: from (0: the newest limit),
// limit. It answers the head's hash, seq and anchor, the first kept
// entry's seq, then the entries.
var auditRead = redis.NewScript(`
local h = redis.call('HMGET', KEYS[2], 'hash', 'seq', 'anchor')
local out = {h[1] or '', h[2] or '0', h[3] or '', '0'}
local raw = redis.call('LINDEX', KEYS[1], 0)
if not raw then return out end
local ok, e = pcall(cjson.decode, raw)
local first = 0
if ok and type(e) == 'table' and type(e['seq']) == 'number' then first = e['seq'] end
out[4] = string.format('%d', first)
local last = tonumber(out[2]) or 0
local from, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
if from == 0 and last >= limit then from = last - limit + 1 end
local start = 0
if first > 0 and from > first then start = from - first end
for _, r in ipairs(redis.call('LRANGE', KEYS[1], start, start + limit - 1)) do out[#out + 1] = r end
return out
`)

// AuditRead reads the chain as Bolt.AuditRead does, in one script.
func (a *RedisAudit) AuditRead(ctx context.Context, from uint64, limit int) (*AuditChain, error) {
	limit = auditLimit(limit)
	res, err := auditRead.Run(ctx, a.r.c, []string{keyspace.Audit, keyspace.AuditHead}, from, limit).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("store: audit: %w", err)
	}
	if len(res) < 4 {
		return nil, fmt.Errorf("store: audit: the read answered %d fields", len(res))
	}
	out := &AuditChain{Entries: []audit.Entry{}, Head: res[0], Anchor: res[2]}
	out.Last, _ = strconv.ParseUint(res[1], 10, 64)
	out.First, _ = strconv.ParseUint(res[3], 10, 64)
	for i, raw := range res[4:] {
		var e audit.Entry
		if err := json.Unmarshal([]byte(raw), &e); err != nil {
			// An entry that is not JSON is an entry changed: said as one
			// Verify breaks on, not as a read that fails.
			e = audit.Entry{Seq: max(from, out.First) + uint64(i), Detail: "(not an entry: " + err.Error() + ")"}
		}
		out.Entries = append(out.Entries, e)
	}
	return out, nil
}

var (
	_ audit.Log = (*Bolt)(nil)
	_ audit.Log = (*RedisAudit)(nil)
)
