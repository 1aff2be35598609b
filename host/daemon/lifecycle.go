package daemon

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/audit"
	"github.com/ruled-dev/ruled/host/reload"
	"github.com/ruled-dev/ruled/internal/backoff"
)

// retry calls f until it succeeds, backing off from 100ms to 5s, for up to
// Config.StoreWait (backoff.Retry): rules must not start on a guess, and a
// Redis still starting is worth waiting for. An error f marks
// backoff.Permanent (a malformed URL, a wrong password) is returned at
// once: a minute of retries would only hide it.
func (d *Daemon) retry(ctx context.Context, what string, f func() error) error {
	err := backoff.Retry(ctx, backoff.Policy{First: 100 * time.Millisecond, Max: 5 * time.Second, For: d.cfg.StoreWait}, f,
		func(wait time.Duration, err error) {
			d.log.Warn("store not answering; retrying", "what", what, "in", wait, "error", err)
		})
	if err != nil {
		return fmt.Errorf("daemon: %s: %w", what, err)
	}
	return nil
}

// onControl handles a message on the control channel: another process's
// announcement that its rules changed, or a rule's command
// (api.ControlCommand), whose refusal is logged: there is no one to
// answer.
func (d *Daemon) onControl(topic string, payload []byte) {
	if topic == reload.TriggersChangedTopic {
		d.onTriggersChanged(payload)
		return
	}
	rule, c, ok, err := api.ControlCommand(topic, payload)
	if ok && err == nil {
		_, err = d.eng.Command(rule, c)
	}
	if ok && err == nil {
		// A command from whoever writes Redis: audited as the API's are.
		d.audit.Record(audit.Entry{Who: cmp.Or(c.By, "control channel"), From: "redis control channel", What: audit.Command,
			Detail: fmt.Sprintf("%s %s → done", topic, c.Command)})
	}
	if err != nil {
		// Refused ones, which anyone with Redis can send at will: logged
		// and audited once a second a cause (the topic and why), the rest
		// counted into the next.
		if folded, allow := d.warns.Allow("control\x00" + topic + "\x00" + err.Error()); allow {
			d.log.Warn("rule command refused", "topic", topic, "error", err, "folded", folded)
			if ok {
				d.audit.Record(audit.Entry{Who: cmp.Or(c.By, "control channel"), From: "redis control channel", What: audit.Command,
					Detail: fmt.Sprintf("%s %s → refused: %v (%d more refused since)", topic, c.Command, err, folded)})
			}
		}
	}
}
