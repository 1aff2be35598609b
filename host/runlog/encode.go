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

// AppendExec appends e as JSON.
func AppendExec(b []byte, e *Exec) []byte {
	var c clock
	return c.appendExec(b, e)
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
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i >= 1; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
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

func (c *clock) appendExec(b []byte, e *Exec) []byte {
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
	if len(n.Children) > 0 {
		b = append(b, `,"children":[`...)
		for i, c := range n.Children {
			if i > 0 {
				b = append(b, ',')
			}
			b = abi.AppendJSONString(b, c)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func optString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return abi.AppendJSONString(append(b, key...), s)
}
