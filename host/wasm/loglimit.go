package wasm

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ruled-dev/ruled/internal/lograte"
)

// A plugin's log — ruled_log, its stdout and its stderr — is bounded per
// call and per second, and its text cleaned, because it is written by
// third-party code into the operator's log: 21 calls that succeeded wrote
// 254 MB of log in 5 s, one storming call 46 MB, and a line holding a
// newline or an ANSI escape forged lines of its own in the text log.
const (
	// logLinesPerCall and logBytesPerCall bound what one call may log.
	logLinesPerCall = 200
	logBytesPerCall = 64 << 10
	// logLinesPerSecond (burst logLinesBurst) bound one plugin's lines
	// across its calls and instances.
	logLinesPerSecond = 200
	logLinesBurst     = 1000
)

// pluginLog is a plugin's log bound and count, kept by name across its
// versions: a hot reload gives it no fresh burst, and its count of
// dropped lines never goes back (a Prometheus counter).
type pluginLog struct {
	bucket  logBucket
	dropped atomic.Uint64
}

// pluginLog is the named plugin's; names are the operator's files, so
// they are few.
func (r *Runtime) pluginLog(name string) *pluginLog {
	v, _ := r.logs.LoadOrStore(name, &pluginLog{})
	return v.(*pluginLog)
}

// logBucket is a plugin's token bucket of log lines.
type logBucket struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
}

// take reports whether the plugin may log one more line now.
func (b *logBucket) take(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last.IsZero() {
		b.tokens = logLinesBurst
	} else {
		b.tokens = min(logLinesBurst, b.tokens+now.Sub(b.last).Seconds()*logLinesPerSecond)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// allowLog reports whether the instance's running call may log a line of
// n bytes, and counts it, or the drop. The first drop of a call says so in
// the log, at most once a second per plugin.
func (in *instance) allowLog(n int) bool {
	in.logLines++
	in.logBytes += n
	if in.logLines <= logLinesPerCall && in.logBytes <= logBytesPerCall && in.m.logs.bucket.take(time.Now()) {
		return true
	}
	dropped := in.m.logs.dropped.Add(1)
	if !in.logCut {
		in.logCut = true
		// Said at most once a second per plugin: a rule logging per event
		// at 1,500 runs/s had this line written ~700 times a second.
		if folded, ok := in.m.r.warns.Allow("log " + in.m.name); ok {
			in.m.r.log.Warn("plugin log: lines dropped past the plugin's bound", "plugin", in.m.name,
				"per-call", strconv.Itoa(logLinesPerCall)+" lines, "+strconv.Itoa(logBytesPerCall>>10)+" KiB",
				"per-second", logLinesPerSecond, "dropped-total", dropped, "calls-folded", folded,
				"next-log-within", lograte.Every.String())
		}
	}
	return false
}

// CleanText is a plugin's text as a log line may hold it: control
// characters (a newline, a carriage return, ESC and the rest of C0 and C1,
// DEL) and the line and paragraph separators written as \xNN or \uNNNN,
// invalid UTF-8 as U+FFFD, so that no plugin forges a line of its own or
// colours the operator's terminal. A tab stays.
func CleanText(s string) string {
	clean := true
	for _, r := range s {
		if r != '\t' && (unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == utf8.RuneError) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, w := 0, 0; i < len(s); i += w {
		r, size := utf8.DecodeRuneInString(s[i:])
		w = size
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteRune(utf8.RuneError)
		case r == '\t':
			b.WriteRune(r)
		case r < 0x80 && unicode.IsControl(r):
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatInt(int64(r)+0x100, 16)[1:])
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
			b.WriteString(`\u`)
			b.WriteString(strconv.FormatInt(int64(r)+0x10000, 16)[1:])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
