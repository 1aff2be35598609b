package daemon

import (
	"context"

	"github.com/ruled-dev/ruled/host/reload"
)

// rulesChanged follows a reload that changed rules (engine.Config.Announce):
// the journal's events a start kept for rules refused then go to those
// mended (ingest.ReadmitAbsent), and the other processes are told.
func (d *Daemon) rulesChanged(added, changed, removed []string) {
	if d.in != nil {
		d.in.ReadmitAbsent()
	}
	d.announce(added, changed, removed)
}

// announce tells the other processes that the rules changed
// (reload.Announce): best effort, a bus that is down costs a log line and
// never fails the change.
func (d *Daemon) announce(added, changed, removed []string) {
	if d.control == nil {
		return
	}
	err := reload.Announce(d.control, reload.Announcement{From: d.procID, Added: added, Changed: changed, Removed: removed})
	if err != nil {
		d.log.Warn("could not announce the rules' change; other processes see it at their next refresh", "error", err)
	}
}

// onTriggersChanged handles another process's announcement: the rules are
// read again (only files whose content changed are parsed), by the
// refresher once it runs (before it, Start reads the rules itself).
func (d *Daemon) onTriggersChanged(payload []byte) {
	from, ok := reload.FromElsewhere(payload, d.procID)
	if !ok {
		return
	}
	d.log.Debug("rules changed elsewhere; reading them again", "from", from)
	if r := d.refresher.Load(); r != nil {
		r.Kick()
	}
}

// startRefresher reads the rules directory again — deployed, the
// deployment in Redis first — every Config.RulesRefresh and when kicked
// (reload.Refresher). Stop ends it (its closer).
func (d *Daemon) startRefresher() {
	r := reload.Refresh(d.cfg.RulesRefresh, func() {
		if d.deployed == nil {
			d.eng.LoadRules()
			d.eng.Collect()
			return
		}
		// What changed loads plugins first, then the rules. A Redis that
		// does not answer costs a log line; what is loaded keeps serving.
		changed, err := d.deployed.Sync(context.Background())
		if err != nil {
			// Announcements are anyone's with Redis: once a second.
			if folded, ok := d.warns.Allow("deployment"); ok {
				d.log.Warn("could not read the deployment; what is loaded keeps serving", "error", err, "folded", folded)
			}
		}
		if len(changed) > 0 {
			d.eng.Reload(changed)
		} else {
			d.eng.Collect()
		}
	})
	d.refresher.Store(r)
	d.closers = append(d.closers, r.Close)
}
