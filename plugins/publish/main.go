// Command publish is the first-party plugin that puts events on the bus.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o publish.wasm ./plugins/publish
//
// Action `publish`, config:
//
//	topic:   the topic, with {{path}} placeholders filled from the trigger
//	         event (required)
//	payload: a JSON object; a string that is exactly "{{path}}" takes the
//	         event's value with its type, other strings splice text in.
//	         default: the trigger event as it arrived.
//
// It needs the publish capability.
package main

import (
	"github.com/ruled-dev/ruled/plugins/internal/tmpl"
	ruled "github.com/ruled-dev/ruled/sdk/go"
)

func main() {}

func init() {
	ruled.Plugin("publish", "1.0.0")
	ruled.Action("publish", configure).
		Doc("publish an event to a topic; payload fields may take values from the trigger").
		Example(`{"topic":"alerts.battery.{{vehicle}}","payload":{"vehicle":"{{vehicle}}","level":"{{battery}}"}}`).
		Needs(ruled.CapPublish)
}

func configure(cfg ruled.Config) (ruled.DoFunc, error) {
	t, err := cfg.RequireString("topic")
	if err != nil {
		return nil, err
	}
	topic, err := tmpl.Text(t)
	if err != nil {
		return nil, ruled.NewError("publish: topic: " + err.Error())
	}
	var payload *tmpl.Template
	if p, ok := cfg.Decode("payload"); ok {
		if _, isObject := p.(map[string]any); !isObject {
			return nil, ruled.NewError(`publish: config "payload" must be an object`)
		}
		if payload, err = tmpl.JSON(p); err != nil {
			return nil, ruled.NewError("publish: payload: " + err.Error())
		}
	}
	var buf []byte
	return func(in *ruled.Input) ([]byte, error) {
		ev := in.Event
		to := topic.String(ev)
		var body []byte
		if payload == nil {
			body = ev.Raw()
		} else {
			buf = payload.Render(buf[:0], ev)
			body = buf
		}
		if err := ruled.Publish(to, body); err != nil {
			return nil, ruled.NewError("publish to " + to + ": " + err.Error())
		}
		return []byte(to), nil
	}, nil
}
