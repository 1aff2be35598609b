// Package audit is the audit trail: who did what, when and from where —
// every command the API served or refused for its scope, every deploy,
// every file refused for its signature — appended to the store as a hash
// chain, so that an entry changed or removed is detected (Verify).
//
// # What it owns
//
// The entry (Entry), its seal (Seal: each entry's hash covers its fields
// and the hash of the entry before), verifying a run of entries (Verify,
// naming the first entry that breaks the chain and why), and the Trail: a
// bounded queue in front of the store's append, so that a command does
// not wait for an fsync and a flood of refusals cannot hold up the
// daemon. The Trail's one goroutine ends with Close.
//
// # What it refuses
//
// Storing entries: the store appends them (store.Bolt and store.Redis
// implement Log), sealing each under the chain's head in the same
// transaction, and trims them by retention. Deciding what is worth an
// entry is its callers' (the API, the daemon, ruled deploy).
//
// # What the chain proves
//
// An entry edited in place, or removed from the middle, breaks the chain
// at the entry after it. Entries removed from the end, or the whole chain
// written again, are not detected by the chain alone: the head hash that
// Verify reports can be kept elsewhere (a log shipper, a ticket) and
// compared later (docs/security.md).
package audit
