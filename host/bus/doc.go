// Package bus is where events enter ruled and travel inside it: the Event
// type and its decoding (once, at the door, into the view guests read), the
// in-process bus, the Redis pub/sub bus, and ingest from HTTP and NDJSON.
//
// It refuses what is not an event (not JSON, not an object, no topic, a
// reserved ruled.* topic, too large) with a reason, and counts refusals by
// reason. It does not know about rules: a subscriber decides what an event
// means.
//
// Nothing here owns a goroutine except a Redis Subscription: one each, which
// receives, decodes and calls the handler, stopped by its Close. Local, the
// HTTP handler and ReadNDJSON run on their caller's goroutine.
package bus
