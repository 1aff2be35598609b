// Package backoff retries what may succeed later — a store still starting,
// a broker coming back — waiting longer after each failure, for a bounded
// time, and gives up at once on what waiting will not cure (Permanent). It
// owns no goroutine: Retry runs on the caller's and sleeps there.
package backoff
