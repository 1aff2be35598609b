// Command log is the first-party plugin that writes to the daemon's log.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o log.wasm ./plugins/log
//
// Action `log`, config:
//
//	message: the line, with {{path}} placeholders filled from the trigger
//	         event (required)
//	level:   trace, debug, info, warn or error. default: info.
//
// It needs no capability.
package main

import (
	"github.com/ruled-dev/ruled/plugins/internal/tmpl"
	ruled "github.com/ruled-dev/ruled/sdk/go"
)

func main() {}

var levels = map[string]ruled.Level{
	"trace": ruled.LevelTrace, "debug": ruled.LevelDebug, "info": ruled.LevelInfo,
	"warn": ruled.LevelWarn, "error": ruled.LevelError,
}

func init() {
	ruled.Plugin("log", "1.0.0")
	ruled.Action("log", configure).
		Doc("write a line to the daemon's log").
		Example(`{"level":"warn","message":"battery {{battery}}% on {{vehicle}}"}`)
}

func configure(cfg ruled.Config) (ruled.DoFunc, error) {
	m, err := cfg.RequireString("message")
	if err != nil {
		return nil, err
	}
	msg, err := tmpl.Text(m)
	if err != nil {
		return nil, ruled.NewError("log: message: " + err.Error())
	}
	name := cfg.String("level", "info")
	level, ok := levels[name]
	if !ok {
		return nil, ruled.NewError(`log: level "` + name + `" is not one of trace, debug, info, warn, error`)
	}
	return func(in *ruled.Input) ([]byte, error) {
		line := msg.String(in.Event)
		ruled.Log(level, line)
		return []byte(line), nil
	}, nil
}
