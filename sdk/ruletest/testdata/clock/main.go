// Command clock is a test plugin: its action publishes "now" with the
// host's clock as the guest sees it, for the harness's virtual-clock test.
package main

import (
	"strconv"

	ruled "github.com/ruled-dev/ruled/sdk/go"
)

func main() {}

func init() {
	ruled.Plugin("clock", "0")
	ruled.Action("publish_now", func(ruled.Config) (ruled.DoFunc, error) {
		return func(*ruled.Input) ([]byte, error) {
			return nil, ruled.Publish("now", []byte(`{"now":`+strconv.FormatInt(ruled.Now().UnixNano(), 10)+`}`))
		}, nil
	}).Needs(ruled.CapPublish)
}
