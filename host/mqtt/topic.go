package mqtt

import (
	"errors"
	"fmt"
	"strings"
)

// ErrTopic is an MQTT topic or filter with no ruled counterpart.
var ErrTopic = errors.New("mqtt: no ruled topic for it")

// Topic maps an MQTT topic to a ruled topic: its levels joined with "."
// ("scooter/v1/telemetry" → "scooter.v1.telemetry"). A level that is empty,
// holds ".", a wildcard or a space, or a topic under "$" (the broker's own)
// has no ruled counterpart.
func Topic(mqttTopic string) (string, error) {
	if mqttTopic == "" || strings.HasPrefix(mqttTopic, "$") {
		return "", fmt.Errorf("%w: %q", ErrTopic, mqttTopic)
	}
	levels := strings.Split(mqttTopic, "/")
	for _, l := range levels {
		if l == "" {
			return "", fmt.Errorf("%w: %q has an empty level", ErrTopic, mqttTopic)
		}
		if i := strings.IndexAny(l, ".*>+# \t\r\n"); i >= 0 {
			return "", fmt.Errorf("%w: %q: level %q holds %q, which a ruled topic's words cannot (rename the device or topic without spaces, dots or wildcards, e.g. zigbee2mqtt's friendly_name front_door)",
				ErrTopic, mqttTopic, l, l[i:i+1])
		}
	}
	return strings.Join(levels, "."), nil
}

// Pattern maps an MQTT topic filter to the ruled topic pattern it
// delivers: "+" is "*", a final "#" is ">" ("scooter/+/#" →
// "scooter.*.>"). A rule's `on:` written with the pattern sees what the
// filter brings.
func Pattern(filter string) (string, error) {
	if filter == "" || strings.HasPrefix(filter, "$") {
		return "", fmt.Errorf("%w: filter %q", ErrTopic, filter)
	}
	levels := strings.Split(filter, "/")
	for i, l := range levels {
		switch {
		case l == "+":
			levels[i] = "*"
		case l == "#" && i == len(levels)-1:
			levels[i] = ">"
		case l == "" || strings.ContainsAny(l, ".*>+# \t\r\n"):
			return "", fmt.Errorf("%w: filter %q (level %q)", ErrTopic, filter, l)
		}
	}
	return strings.Join(levels, "."), nil
}
