package api

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ruled-dev/ruled/host/status"
)

// CommandTopicPrefix starts the control topic a rule's commands arrive on
// in Redis mode: ruled.cmd.<rule>, its payload a Command as JSON. Being
// under bus.ReservedPrefix, neither ingest nor plugins can publish it.
const CommandTopicPrefix = "ruled.cmd."

// ControlCommand reads a control channel message as a rule's command: ok
// is false when topic is not one (CommandTopicPrefix), and a payload that
// is not a Command is ErrBadCommand. The control channel has no one to
// answer, so the caller logs what it could not apply.
func ControlCommand(topic string, payload []byte) (rule string, c status.Command, ok bool, err error) {
	rule, ok = strings.CutPrefix(topic, CommandTopicPrefix)
	if !ok {
		return "", c, false, nil
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return rule, c, true, fmt.Errorf("%w: payload: %v", status.ErrBadCommand, err)
	}
	c.By = "control channel" // whoever may publish on Redis's reserved topics
	return rule, c, true, nil
}
