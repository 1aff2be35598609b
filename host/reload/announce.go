package reload

import (
	"context"
	"encoding/json"
	"time"
)

// TriggersChangedTopic is the control topic a process publishes when its
// rules — and so its topic → rule index — changed. Other processes on the
// same Redis read their rules again at once instead of at their next
// periodic refresh.
const TriggersChangedTopic = "ruled.triggers.changed"

// DefaultRulesRefresh is how often the rules are read again whatever else
// happened: the fallback for a lost announcement and for a file system
// that sends no change events (a network mount).
const DefaultRulesRefresh = time.Minute

// Announcement is TriggersChangedTopic's payload.
type Announcement struct {
	From    string   `json:"from"` // the announcing process, which ignores its own
	Added   []string `json:"added,omitempty"`
	Changed []string `json:"changed,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

// TriggersChanged is an announcement's payload from a process or tool
// that is not a daemon (`ruled deploy`): every daemon reads its rules
// again.
func TriggersChanged(from string) []byte {
	b, _ := json.Marshal(Announcement{From: from})
	return b
}

// ControlPublisher is what announcing needs of the bus (bus.Redis).
type ControlPublisher interface {
	PublishControl(ctx context.Context, topic string, payload []byte) error
}

// Announce tells the other processes that a's rules changed, waiting at
// most a second: best effort, the caller logs a failure and the others
// see the change at their next refresh.
func Announce(pub ControlPublisher, a Announcement) error {
	b, _ := json.Marshal(a)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return pub.PublishControl(ctx, TriggersChangedTopic, b)
}

// FromElsewhere reports whether payload is another process's announcement
// than self's (a payload that does not decode is no one's), and whose.
func FromElsewhere(payload []byte, self string) (from string, ok bool) {
	var a Announcement
	if err := json.Unmarshal(payload, &a); err != nil || a.From == self {
		return "", false
	}
	return a.From, true
}
