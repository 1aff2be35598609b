package store

import (
	"fmt"

	"github.com/redis/go-redis/v9"
	bolt "go.etcd.io/bbolt"
)

// SetNoSync turns bbolt's fsync off, for the benchmark that measures what
// the fsync costs. The store itself never does.
func SetNoSync(b *Bolt, noSync bool) { b.db.NoSync = noSync }

// StagedKey is where l stages runlog's key.
func StagedKey(l *RedisLog, key string) string { return l.k.staged(key) }

// BacklogClient is b's Redis client, for tests that look at keys directly.
func BacklogClient(b *RedisBacklog) redis.UniversalClient { return b.c }

// SetSegmentSize sets how large l's segments grow (tests: many small ones).
func SetSegmentSize(l *SegmentLog, n int64) { l.max = n }

// SegmentFiles is how many segment files the log has and their bytes: what it
// takes on disk.
func SegmentFiles(l *SegmentLog) (int, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.segs), l.size
}

// Compacted is how many entries l's compaction appended anew, and the
// number of its newest segment.
func Compacted(l *SegmentLog) (entries, newest int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.copied, l.segs[len(l.segs)-1].num
}

// Unsynced is how many of l's segments hold writes no sync has taken,
// and 1 more if its directory has a new name.
func Unsynced(l *SegmentLog) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.segs {
		if s.dirty {
			n++
		}
	}
	if l.dirDirty {
		n++
	}
	return n
}

// LiveAgrees says whether l's live bytes, each segment's and the log's,
// are what its index points at.
func LiveAgrees(l *SegmentLog) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	per := map[uint32]int64{}
	var all int64
	for _, r := range l.runs {
		for _, n := range r.nodes {
			per[n.loc.seg] += int64(n.loc.n)
			all += int64(n.loc.n)
		}
	}
	if all != l.live {
		return fmt.Errorf("log live %d, index points at %d", l.live, all)
	}
	for _, s := range l.segs {
		if per[uint32(s.num)] != s.live {
			return fmt.Errorf("segment %d live %d, index points at %d", s.num, s.live, per[uint32(s.num)])
		}
	}
	return nil
}

// AppendRecordV1 appends a record as segments without segMagic hold them:
// its CRC unseeded.
func AppendRecordV1(buf []byte, op byte, run string, seq int, v []byte) []byte {
	buf, _ = appendRecord(buf, 0, op, run, seq, v)
	return buf
}

// HashPages is the bytes of the leaf pages holding hash key in b, and the
// bytes of its fields and values in them.
func HashPages(b *Bolt, key string) (alloc, inuse int) {
	b.db.View(func(tx *bolt.Tx) error {
		if bk := tx.Bucket([]byte(key)); bk != nil {
			st := bk.Stats()
			alloc, inuse = st.LeafAlloc, st.LeafInuse
		}
		return nil
	})
	return alloc, inuse
}
