// Command http is a Go plugin for the wasm host's outbound HTTP tests: an
// action that sends what its config says, and a condition that tries to
// (conditions may not).
package main

import (
	ruled "github.com/ruled-dev/ruled/sdk/go"
)

func main() {}

func init() {
	ruled.Plugin("httptest", "0")
	ruled.Action("get", func(cfg ruled.Config) (ruled.DoFunc, error) {
		url := cfg.String("url", "")
		return func(*ruled.Input) ([]byte, error) {
			resp, err := ruled.HTTP(ruled.Request{URL: url})
			if err != nil {
				return nil, err
			}
			return append([]byte(ruled.Header(resp.Header, "X-Answer")+" "), resp.Body...), nil
		}, nil
	}).Needs(ruled.CapHTTP)
	ruled.Condition("try_http", func(cfg ruled.Config) (ruled.WhenFunc, error) {
		return func(ruled.Event) (bool, error) {
			_, err := ruled.HTTP(ruled.Request{URL: "http://example.com/"})
			return err == nil, err
		}, nil
	})
}
