package scenario

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ruled-dev/ruled/host/observe"
)

// Capture is an event stream `ruled record` wrote: NDJSON, one
// observe.Seen per line, a {"dropped":N} line where the recorder fell
// behind, and an {"end":TIME} line when recording stopped.
type Capture struct {
	Events  []observe.Seen
	End     time.Time // when recording stopped; the last event's time without an end line
	Dropped int64     // events the recorder lost
}

// Start is the first event's time, the capture's zero.
func (c *Capture) Start() time.Time {
	if len(c.Events) == 0 {
		return c.End
	}
	return c.Events[0].At
}

// captureLine is any line of a capture.
type captureLine struct {
	observe.Seen
	Dropped int64     `json:"dropped"`
	End     time.Time `json:"end"`
}

// MaxCaptureLine is the longest line ReadCapture takes: an event is at most
// the daemon's event size limit, quoted.
const MaxCaptureLine = 4 << 20

// ReadCapture reads a capture. A line that does not decode is an error
// naming it; events out of time order are too (a capture is one daemon's
// stream).
func ReadCapture(r io.Reader) (*Capture, error) {
	c := &Capture{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxCaptureLine)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var l captureLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		switch {
		case l.Dropped > 0:
			c.Dropped += l.Dropped
		case !l.End.IsZero():
			c.End = l.End
		case len(l.Event) > 0 && !l.At.IsZero():
			var obj map[string]any
			if json.Unmarshal(l.Event, &obj) != nil || obj == nil {
				return nil, fmt.Errorf("line %d: the event is not a JSON object", n)
			}
			if k := len(c.Events); k > 0 && l.At.Before(c.Events[k-1].At) {
				return nil, fmt.Errorf("line %d: event at %s before the previous one", n, l.At.Format(time.RFC3339Nano))
			}
			c.Events = append(c.Events, l.Seen)
		default:
			return nil, fmt.Errorf("line %d: neither an event, a dropped count nor an end", n)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(c.Events) == 0 {
		return nil, fmt.Errorf("no events")
	}
	if last := c.Events[len(c.Events)-1].At; c.End.Before(last) {
		c.End = last
	}
	return c, nil
}

// ReadCaptureFile is ReadCapture on a file, its errors named by the file.
func ReadCaptureFile(path string) (*Capture, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := ReadCapture(f)
	if err != nil {
		return nil, fmt.Errorf("capture %s: %w", path, err)
	}
	return c, nil
}
