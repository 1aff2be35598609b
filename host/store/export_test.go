package store

// SetNoSync turns bbolt's fsync off, for the benchmark that measures what
// the fsync costs. The store itself never does.
func SetNoSync(b *Bolt, noSync bool) { b.db.NoSync = noSync }

// StagedKey is where l stages runlog's key.
func StagedKey(l *RedisLog, key string) string { return l.k.staged(key) }
