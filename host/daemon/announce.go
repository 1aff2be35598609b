package daemon

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ruled-dev/ruled/host/bus"
	"github.com/ruled-dev/ruled/host/reload"
)

// TriggersChangedTopic is the control topic a process publishes when its
// rules — and so its topic → rule index — changed (as the triggers spec has it). Other
// processes on the same Redis read their rules again at once instead of at
// their next periodic refresh.
const TriggersChangedTopic = "ruled.triggers.changed"

// DefaultRulesRefresh is how often the rules directory is read again
// whatever else happened: the fallback for a lost announcement and for a
// file system that sends no change events (a network mount).
const DefaultRulesRefresh = time.Minute

// triggersChanged is TriggersChangedTopic's payload.
type triggersChanged struct {
	From    string   `json:"from"` // the announcing process, which ignores its own
	Added   []string `json:"added,omitempty"`
	Changed []string `json:"changed,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

// TriggersChanged is an announcement's payload from a process or tool
// that is not a daemon (`ruled deploy`): every daemon reads its rules
// again.
func TriggersChanged(from string) []byte {
	b, _ := json.Marshal(triggersChanged{From: from})
	return b
}

// controlPublisher is what announcing needs of the bus (bus.Redis).
type controlPublisher interface {
	PublishControl(ctx context.Context, topic string, payload []byte) error
}

// announce tells the other processes that the rules changed: best effort,
// a bus that is down costs a log line and never fails the change.
func (d *Daemon) announce(added, changed, removed []string) {
	if d.ctl == nil {
		return
	}
	b, _ := json.Marshal(triggersChanged{From: d.procID, Added: added, Changed: changed, Removed: removed})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := d.ctl.PublishControl(ctx, TriggersChangedTopic, b); err != nil {
		d.log.Warn("could not announce the rules' change; other processes see it at their next refresh", "error", err)
	}
}

// onTriggersChanged handles another process's announcement: the rules are
// read again (only files whose content changed are parsed).
func (d *Daemon) onTriggersChanged(payload []byte) {
	var m triggersChanged
	if err := json.Unmarshal(payload, &m); err != nil || m.From == d.procID {
		return
	}
	d.log.Debug("rules changed elsewhere; reading them again", "from", m.From)
	d.kickRefresh()
}

// kickRefresh asks the refresher for a read of the rules now; before it
// runs, nothing (Start reads the rules itself).
func (d *Daemon) kickRefresh() {
	if r := d.refresher.Load(); r != nil {
		r.Kick()
	}
}

// startRefresher reads the rules directory again — deployed, the
// deployment in Redis — every Config.RulesRefresh and when kicked
// (reload.Refresher). Stop ends it (its closer).
func (d *Daemon) startRefresher() {
	r := reload.Refresh(d.cfg.RulesRefresh, func() {
		if d.cfg.Deployed {
			d.refreshDeployed()
			return
		}
		d.eng.LoadRules()
		d.eng.Collect()
	})
	d.refresher.Store(r)
	d.closers = append(d.closers, r.Close)
}

var _ controlPublisher = (*bus.Redis)(nil)
