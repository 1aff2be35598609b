package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ruled-dev/ruled/host/api"
	"github.com/ruled-dev/ruled/host/reload"
)

// CommandTopicPrefix starts the control topic a rule's commands arrive on
// in Redis mode: ruled.cmd.<rule>, its payload a Command as JSON. Being
// under bus.ReservedPrefix, neither ingest nor plugins can publish it.
const CommandTopicPrefix = "ruled.cmd."

// stop is an error retry gives up on at once: waiting will not cure it.
type stop struct{ err error }

func (s stop) Error() string { return s.err.Error() }

// retry calls f until it succeeds, backing off from 100ms to 5s, for up to
// Config.StoreWait; the last error is returned after that or when ctx ends.
// An error f wraps in a stop (a malformed URL, a wrong password) is
// returned at once: a minute of retries would only hide it.
func (d *Daemon) retry(ctx context.Context, what string, f func() error) error {
	deadline := time.Now().Add(d.cfg.StoreWait)
	wait := 100 * time.Millisecond
	for {
		err := f()
		var st stop
		switch {
		case err == nil:
			return nil
		case errors.As(err, &st):
			return fmt.Errorf("daemon: %s: %w", what, st.err)
		}
		if time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("daemon: %s: %w (gave up after %v)", what, err, d.cfg.StoreWait)
		}
		d.log.Warn("store not answering; retrying", "what", what, "in", wait, "error", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("daemon: %s: %w", what, err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// control handles a message on the control channel: a rule's command, or
// another process's announcement that its rules changed.
func (d *Daemon) control(topic string, payload []byte) {
	if topic == reload.TriggersChangedTopic {
		d.onTriggersChanged(payload)
		return
	}
	d.commandTopic(topic, payload)
}

// commandTopic handles a control message ruled.cmd.<rule> (Redis mode):
// there is no one to answer, so its outcome is logged.
func (d *Daemon) commandTopic(topic string, payload []byte) {
	rule, ok := strings.CutPrefix(topic, CommandTopicPrefix)
	if !ok {
		return
	}
	var c api.Command
	if err := json.Unmarshal(payload, &c); err != nil {
		d.log.Warn("rule command refused", "topic", topic, "error", fmt.Errorf("%w: payload: %v", api.ErrBadCommand, err))
		return
	}
	if _, err := d.Command(rule, c); err != nil {
		d.log.Warn("rule command refused", "topic", topic, "error", err)
	}
}
