package store

import "github.com/redis/go-redis/v9"

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
