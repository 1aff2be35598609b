// Package fastjson reads JSON that ruled wrote itself, without
// reflection, or says it cannot.
//
// A start reads every pending record and every execution log entry once:
// json.Unmarshal spent 10 µs a record, a second for 100,000 parked runs
// (issue 38). What ruled writes is a narrow shape — known keys, strings
// without escapes, whole numbers — and a Scanner reads that shape fast.
//
// It owns the reading only. It refuses to decide what a document means:
// anything outside the shape (an escape, a fraction, a null where a
// string is read) makes a read answer false, and the caller hands the
// whole document to encoding/json. Each caller's fuzz test holds the
// pair to json.Unmarshal's answer (seq.FuzzDecodeFast,
// store.FuzzExecIndex).
package fastjson
