// Command note is a test plugin in two versions (note-v1, note-v2) that
// differ only in the version they publish: a scenario upgrades it while a
// step waits and sees which module each run used.
package main

import (
	ruled "github.com/ruled-dev/ruled/sdk/go"
)

const version = "2"

func main() {}

func init() {
	ruled.Plugin("note", version)
	ruled.Action("remind", func(ruled.Config) (ruled.DoFunc, error) {
		return func(in *ruled.Input) ([]byte, error) {
			v, _ := in.Event.String("vehicle")
			return nil, ruled.Publish("reminder."+v, []byte(`{"vehicle":"`+v+`","version":`+version+`}`))
		}, nil
	}).Needs(ruled.CapPublish)
}
