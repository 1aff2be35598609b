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
	b = appendTime(b, e.Started)
	b = append(b, `,"at":`...)
	b = strconv.AppendInt(b, e.At, 10)
	if !e.Ended.IsZero() {
		b = append(b, `,"ended":`...)
		b = appendTime(b, e.Ended)
	}
	b = append(b, `,"outcome":`...)
	b = abi.AppendJSONString(b, e.Outcome)
	b = optString(b, `,"error":`, e.Error)
	return append(b, '}')
}

// AppendNode appends n as JSON.
func AppendNode(b []byte, n *Node) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, int64(n.Seq), 10)
	b = append(b, `,"kind":`...)
	b = abi.AppendJSONString(b, n.Kind)
	b = optString(b, `,"name":`, n.Name)
	b = optString(b, `,"do":`, n.Do)
	b = optString(b, `,"digest":`, n.Digest[:min(DigestLen, len(n.Digest))])
	b = append(b, `,"started":`...)
	b = appendTime(b, n.Started)
	if !n.Ended.IsZero() {
		b = append(b, `,"ended":`...)
		b = appendTime(b, n.Ended)
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

// appendTime appends t as encoding/json does (RFC 3339 with nanoseconds).
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}
