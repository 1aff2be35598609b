//go:build wasip1

// Command extism-plugin is the two-field condition written the idiomatic
// Extism way (go-pdk, encoding/json), for the comparison in `make bench`.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o extism.wasm ./extism-plugin
package main

import (
	"encoding/json"

	"github.com/extism/go-pdk"
)

func main() {}

type event struct {
	Type string `json:"type"`
	Data struct {
		Value float64 `json:"value"`
	} `json:"data"`
}

//go:wasmexport noop
func noop() int32 { return 0 }

//go:wasmexport when
func when() int32 {
	var ev event
	if err := json.Unmarshal(pdk.Input(), &ev); err != nil {
		pdk.SetError(err)
		return 1
	}
	if ev.Type == "temperature" && ev.Data.Value > 20 {
		pdk.Output([]byte{1})
	} else {
		pdk.Output([]byte{0})
	}
	return 0
}
