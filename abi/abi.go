package abi

// Version is the ABI version this package describes, as major<<16 | minor.
//
// A plugin exports it from ExportABIVersion and the host checks it before it
// calls anything else: the major must be equal, and the minor no greater than
// the host's (a newer minor may use exports or imports this host lacks).
// What counts as breaking is listed in ABI.md, "Compatibility".
const Version = Major<<16 | Minor

const (
	// Major changes when an existing export, import, status code or encoding
	// changes meaning. Hosts refuse modules of another major.
	Major = 1
	// Minor changes when something is added that an older host would not
	// understand if a plugin relied on it. 1.1 added outbound HTTP
	// (ImportHTTPRequest, ImportHTTPResponse, CapHTTP); 1.2 added
	// StatusPermanent and the call header's attempt (CallInfo.Attempt);
	// 1.3 the run's context: step outputs and variables (CallInput.Context);
	// 1.4 the entities' states the rule reads, the trigger's previous
	// state and the sun in that context (ContextStates, ContextPrevious,
	// ContextSun).
	Minor = 4
)

// VersionString formats a packed ABI version as "major.minor".
func VersionString(v uint32) string {
	return itoa(int(v>>16)) + "." + itoa(int(v&0xffff))
}

// Exports a plugin module provides. ABI.md gives each signature.
const (
	ExportABIVersion = "ruled_abi_version" // () -> i32
	ExportAlloc      = "ruled_alloc"       // (size i32) -> i32 ptr
	ExportDescribe   = "ruled_describe"    // () -> i64 packed ptr|len of the describe JSON
	ExportConfigure  = "ruled_configure"   // (ptr, len i32) -> i64 packed status|handle
	ExportRelease    = "ruled_release"     // (handle i32)
	ExportWhen       = "ruled_when"        // (handle, ptr, len i32) -> i32 status
	ExportAct        = "ruled_act"         // (handle, ptr, len i32) -> i32 status
	ExportResult     = "ruled_result"      // () -> i64 packed ptr|len of the last act's result
	ExportError      = "ruled_error"       // () -> i64 packed ptr|len of the last error's text
	ExportMemory     = "memory"
	ExportInitialize = "_initialize" // reactor start function (Go -buildmode=c-shared)
)

// MaxExecID bounds the execution ids ImportFire writes, so a guest can pass
// a buffer that always fits: fire cannot be retried for the rest.
const MaxExecID = 128

// ImportModule is the module name every host function is imported from.
const ImportModule = "ruled"

// Host functions a plugin may import from ImportModule.
const (
	ImportLog      = "log"       // (level, ptr, len i32)
	ImportNow      = "now"       // () -> i64 unix nanoseconds
	ImportEventRaw = "event_raw" // (ptr, cap i32) -> i32 length of the event's JSON
	ImportPublish  = "publish"   // (topic ptr, len, payload ptr, len i32) -> i32 0 or -status
	ImportKVGet    = "kv_get"    // (key ptr, len, buf ptr, cap i32) -> i32 length or -status
	ImportKVSet    = "kv_set"    // (key ptr, len, value ptr, len i32) -> i32 0 or -status
	ImportKVDelete = "kv_delete" // (key ptr, len i32) -> i32 0 or -status
	ImportFire     = "fire"      // (rule ptr, len, payload ptr, len, out ptr, cap i32) -> i32 id length or -status
	// ImportHTTPRequest sends an HTTPRequest and keeps its response for
	// ImportHTTPResponse (since 1.1).
	ImportHTTPRequest = "http_request" // (req ptr, len i32) -> i32 response length or -status
	// ImportHTTPResponse copies the last response of this call, encoded as
	// an HTTPResponse, if it fits (since 1.1).
	ImportHTTPResponse = "http_response" // (ptr, cap i32) -> i32 response length or -status
)

// Capability names a host function that an operator must grant before a
// plugin may import it. Log, now and event_raw need no grant: they reveal
// nothing outside the call and change nothing.
type Capability string

const (
	CapPublish Capability = "publish" // ImportPublish
	CapKV      Capability = "kv"      // ImportKVGet, ImportKVSet, ImportKVDelete
	CapFire    Capability = "fire"    // ImportFire
	// CapHTTP is outbound HTTP (ImportHTTPRequest, ImportHTTPResponse),
	// to the hosts the operator allows the plugin (since 1.1).
	CapHTTP Capability = "http"
)

// Capabilities lists every capability, in a stable order.
var Capabilities = []Capability{CapPublish, CapKV, CapFire, CapHTTP}

// ImportCapability reports which capability a host import needs. ok is false
// for a name the ABI does not define; need is empty for the base imports
// (log, now, event_raw) that every plugin may use.
func ImportCapability(name string) (need Capability, ok bool) {
	switch name {
	case ImportLog, ImportNow, ImportEventRaw:
		return "", true
	case ImportPublish:
		return CapPublish, true
	case ImportKVGet, ImportKVSet, ImportKVDelete:
		return CapKV, true
	case ImportFire:
		return CapFire, true
	case ImportHTTPRequest, ImportHTTPResponse:
		return CapHTTP, true
	}
	return "", false
}

// ConditionMay reports whether a condition call may use a host import.
// Conditions get log, now (which answers the event's time) and event_raw, so
// that a condition evaluated again on replay decides the same way.
func ConditionMay(name string) bool {
	switch name {
	case ImportLog, ImportNow, ImportEventRaw:
		return true
	}
	return false
}

// Status is what every export and host function reports. Zero is success;
// a host function returns a failure as the negated status.
//
// Hosts treat a status they do not know as StatusError, so a guest built for
// a newer minor degrades to "failed" rather than to something undefined.
type Status int32

const (
	StatusOK              Status = 0  // success; for a condition, "not met"
	StatusTrue            Status = 1  // a condition is met (ExportWhen only)
	StatusError           Status = 2  // the plugin failed; ExportError has the text
	StatusBadInput        Status = 3  // the input did not decode
	StatusBadConfig       Status = 4  // ExportConfigure refused the config; ExportError has why
	StatusUnknownFunction Status = 5  // no such function, or the wrong kind
	StatusBadHandle       Status = 6  // the handle was never configured, or was released
	StatusDenied          Status = 7  // the capability is not granted, or not allowed in this call
	StatusNotFound        Status = 8  // kv_get: no such key; fire: no such rule
	StatusTooLarge        Status = 9  // over a size limit or quota
	StatusUnavailable     Status = 10 // the host service is down for now; a retry may succeed
	// StatusPermanent is an action's failure that trying again would
	// repeat (a request the far end refused as invalid): the host does not
	// retry the step, whatever its rule's retry says (since 1.2; a module
	// of an older minor that returns it has failed with StatusError).
	StatusPermanent Status = 11
)

var statusNames = [...]string{
	"ok", "true", "error", "bad input", "bad config", "unknown function",
	"bad handle", "denied", "not found", "too large", "unavailable", "permanent",
}

// String names the status, e.g. "bad config".
func (s Status) String() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "status " + itoa(int(s))
}

// Kind says whether a function decides (a condition) or does (an action).
type Kind uint8

const (
	KindCondition Kind = 1
	KindAction    Kind = 2
)

// String returns "condition" or "action".
func (k Kind) String() string {
	switch k {
	case KindCondition:
		return "condition"
	case KindAction:
		return "action"
	}
	return "kind " + itoa(int(k))
}

// Level is a log level for ImportLog.
type Level int32

const (
	LevelTrace Level = 0
	LevelDebug Level = 1
	LevelInfo  Level = 2
	LevelWarn  Level = 3
	LevelError Level = 4
)

// Pack puts a guest pointer and a length into one i64, as ExportDescribe,
// ExportResult and ExportError return them: ptr in the high 32 bits.
func Pack(ptr, n uint32) uint64 { return uint64(ptr)<<32 | uint64(n) }

// Unpack is the inverse of Pack.
func Unpack(v uint64) (ptr, n uint32) { return uint32(v >> 32), uint32(v) }

// PackConfigure packs ExportConfigure's answer: the status in the high 32 bits,
// the handle in the low 32. A handle is never 0.
func PackConfigure(s Status, handle uint32) uint64 { return uint64(uint32(s))<<32 | uint64(handle) }

// UnpackConfigure is the inverse of PackConfigure.
func UnpackConfigure(v uint64) (Status, uint32) { return Status(int32(v >> 32)), uint32(v) }

// itoa avoids strconv so that guests that never format numbers do not link it.
func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
