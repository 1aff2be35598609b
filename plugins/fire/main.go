// Command fire is the first-party plugin that starts another rule's run:
// a sub-run, which the execution log shows under the step that fired it.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o fire.wasm ./plugins/fire
//
// Action `fire`, config:
//
//	rule:    the rule to run (required)
//	payload: a JSON object, the new run's trigger; strings may take values
//	         from this run's trigger as in publish ("{{vehicle}}").
//	         default: this run's trigger as it arrived.
//
// The new run's topic is "fire.<rule>"; its condition, mode and state
// apply as to any trigger. The action returns the new run's id. It needs
// the fire capability.
package main

import (
	"github.com/ruled-dev/ruled/plugins/internal/tmpl"
	ruled "github.com/ruled-dev/ruled/sdk/go"
)

func main() {}

func init() {
	ruled.Plugin("fire", "1.0.0")
	ruled.Action("fire", configure).
		Doc("start a run of another rule; the execution log shows it as a sub-run").
		Example(`{"rule":"notify-owner","payload":{"vehicle":"{{vehicle}}"}}`).
		Needs(ruled.CapFire)
}

func configure(cfg ruled.Config) (ruled.DoFunc, error) {
	rule, err := cfg.RequireString("rule")
	if err != nil {
		return nil, err
	}
	var payload *tmpl.Template
	if p, ok := cfg.Decode("payload"); ok {
		if _, isObject := p.(map[string]any); !isObject {
			return nil, ruled.NewError(`fire: config "payload" must be an object`)
		}
		if payload, err = tmpl.JSON(p); err != nil {
			return nil, ruled.NewError("fire: payload: " + err.Error())
		}
	}
	var buf []byte
	return func(in *ruled.Input) ([]byte, error) {
		body := in.Event.Raw()
		if payload != nil {
			buf = payload.Render(buf[:0], in.Event)
			body = buf
		}
		id, err := ruled.Fire(rule, body)
		if err != nil {
			return nil, ruled.NewError("fire " + rule + ": " + err.Error())
		}
		return []byte(id), nil
	}, nil
}
