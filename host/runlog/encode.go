package runlog

import (
	"strconv"
	"time"

	"github.com/ruled-dev/ruled/abi"
)

// The writer encodes entries by hand: it is the log's hot path (every node
// of every run, on a device's one spare core), and encoding/json's
// reflection costs several times what appending the same bytes does. The
// output is the JSON encoding/json makes of the same struct (field names,
// omitempty, omitzero), which FuzzEncode checks; readers decode it with
// encoding/json.

// AppendRun appends e as JSON.
func AppendRun(b []byte, e *Run) []byte {
	var c clock
	return c.appendRun(b, e)
}

// AppendNode appends n as JSON.
func AppendNode(b []byte, n *Node) []byte {
	var c clock
	return c.appendNode(b, n)
}

// clock formats times for the encoders as encoding/json does, remembering
// the last second it formatted: the entries of a batch carry times of a
// few seconds at most, so the date, the time of day and the zone are
// formatted once a second and copied, and only the fraction each time
// (formatting whole times was a sixth of the writer's CPU:
// BenchmarkLogWriter). The writer keeps one; its zero value is ready.
type clock struct {
	sec  int64
	loc  *time.Location
	head []byte // "2006-01-02T15:04:05"
	zone []byte // "Z" or "-07:00"
}

// appendTime appends t as encoding/json does: RFC 3339 with nanoseconds,
// quoted.
func (c *clock) appendTime(b []byte, t time.Time) []byte {
	if sec := t.Unix(); c.head == nil || sec != c.sec || t.Location() != c.loc {
		c.sec, c.loc = sec, t.Location()
		c.head = t.AppendFormat(c.head[:0], "2006-01-02T15:04:05")
		c.zone = t.AppendFormat(c.zone[:0], "Z07:00")
	}
	b = append(b, '"')
	b = append(b, c.head...)
	if ns := t.Nanosecond(); ns != 0 {
		// Nine digits, two at a time (a digit at a time, eighteen
		// dependent divisions, was most of the encoding of a node).
		var frac [10]byte
		frac[0], frac[1] = '.', byte('0'+ns/1e8)
		r := ns % 1e8
		for i, p := range [4]int{r / 1e6, r / 1e4 % 100, r / 100 % 100, r % 100} {
			frac[2+2*i], frac[3+2*i] = pairs[2*p], pairs[2*p+1]
		}
		n := 10
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	b = append(b, c.zone...)
	return append(b, '"')
}

// pairs is "00" to "99", for the fraction of a second.
const pairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

func (c *clock) appendRun(b []byte, e *Run) []byte {
	b = append(b, `{"id":`...)
	b = abi.AppendJSONString(b, e.ID)
	b = append(b, `,"rule":`...)
	b = abi.AppendJSONString(b, e.Rule)
	b = append(b, `,"topic":`...)
	b = abi.AppendJSONString(b, e.Topic)
	b = optString(b, `,"event_id":`, e.EventID)
	b = optString(b, `,"key":`, e.Key)
	b = optString(b, `,"parent":`, e.Parent)
	b = append(b, `,"started":`...)
	b = c.appendTime(b, e.Started)
	b = append(b, `,"at":`...)
	b = strconv.AppendInt(b, e.At, 10)
	if !e.Ended.IsZero() {
		b = append(b, `,"ended":`...)
		b = c.appendTime(b, e.Ended)
	}
	b = append(b, `,"outcome":`...)
	b = abi.AppendJSONString(b, e.Outcome)
	b = optString(b, `,"error":`, e.Error)
	b = optString(b, `,"traceparent":`, e.Trace)
	return append(b, '}')
}

func (c *clock) appendNode(b []byte, n *Node) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, int64(n.Seq), 10)
	b = append(b, `,"kind":`...)
	b = abi.AppendJSONString(b, n.Kind)
	b = optString(b, `,"name":`, n.Name)
	b = optString(b, `,"do":`, n.Do)
	b = optString(b, `,"digest":`, n.Digest[:min(DigestLen, len(n.Digest))])
	b = append(b, `,"started":`...)
	b = c.appendTime(b, n.Started)
	if !n.Ended.IsZero() {
		b = append(b, `,"ended":`...)
		b = c.appendTime(b, n.Ended)
	}
	b = append(b, `,"outcome":`...)
	b = abi.AppendJSONString(b, n.Outcome)
	b = optString(b, `,"error":`, n.Error)
	b = optString(b, `,"detail":`, n.Detail)
	b = optStrings(b, `,"children":`, n.Children)
	// Output, Input and Values are JSON the runner built or the bus
	// checked (an event), appended as they are.
	if len(n.Output) > 0 {
		b = append(append(b, `,"output":`...), n.Output...)
	}
	if len(n.Input) > 0 {
		b = append(append(b, `,"input":`...), n.Input...)
	}
	if len(n.Values) > 0 {
		b = append(append(b, `,"values":`...), n.Values...)
	}
	b = optStrings(b, `,"effects":`, n.Effects)
	b = optString(b, `,"by":`, n.By)
	return append(b, '}')
}

// optStrings appends key and ss as a JSON array, unless ss is empty.
func optStrings(b []byte, key string, ss []string) []byte {
	if len(ss) == 0 {
		return b
	}
	b = append(append(b, key...), '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = abi.AppendJSONString(b, s)
	}
	return append(b, ']')
}

func optString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return abi.AppendJSONString(append(b, key...), s)
}
