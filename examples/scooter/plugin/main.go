// Command plugin is the scooter example's own plugin: what the example rules
// need beyond the first-party plugins. Its file name, scooter.wasm, is its
// name in rules.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o scooter.wasm ./examples/scooter/plugin
package main

import (
	"strconv"

	"github.com/ruled-dev/ruled/abi"
	ruled "github.com/ruled-dev/ruled/sdk/go"
)

func main() {}

func init() {
	ruled.Plugin("scooter", "1.0.0")

	ruled.Condition("moving_while_locked", func(cfg ruled.Config) (ruled.WhenFunc, error) {
		min := cfg.Float("min_speed", 3)
		return func(ev ruled.Event) (bool, error) {
			locked, _ := ev.Bool("locked")
			speed, _ := ev.Float("speed")
			return locked && speed >= min, nil
		}, nil
	}).Doc("a locked scooter moving at min_speed km/h or more").Example(`{"min_speed":3}`)

	ruled.Action("remember", func(ruled.Config) (ruled.DoFunc, error) {
		return func(in *ruled.Input) ([]byte, error) {
			vehicle, ok := in.Event.String("vehicle")
			level, hasLevel := in.Event.Float("battery")
			if !ok || !hasLevel {
				return nil, nil
			}
			v := strconv.FormatFloat(level, 'f', -1, 64)
			return nil, ruled.KVSet("battery:"+vehicle, []byte(v))
		}, nil
	}).Doc("remember the scooter's latest battery level").Needs(ruled.CapKV)

	ruled.Action("limit_speed", func(cfg ruled.Config) (ruled.DoFunc, error) {
		below := cfg.Float("below", 20)
		maxSpeed := cfg.Int("max_speed", 15)
		return func(in *ruled.Input) ([]byte, error) {
			vehicle, _ := in.Event.String("vehicle")
			b, found, err := ruled.KVGet("battery:" + vehicle)
			if err != nil {
				return nil, err
			}
			if !found {
				ruled.Log(ruled.LevelInfo, "no battery level known for "+vehicle+"; no limit")
				return []byte("recovered"), nil
			}
			level, _ := strconv.ParseFloat(string(b), 64)
			if level >= below {
				ruled.Log(ruled.LevelInfo, "battery of "+vehicle+" recovered to "+string(b)+"%; no limit")
				return []byte("recovered"), nil
			}
			payload := `{"vehicle":` + string(abi.AppendJSONString(nil, vehicle)) +
				`,"max_speed":` + strconv.FormatInt(maxSpeed, 10) + `,"key":` + string(abi.AppendJSONString(nil, in.Key())) + `}`
			if err := ruled.Publish("scooter.cmd.limit", []byte(payload)); err != nil {
				return nil, err
			}
			return []byte("limited to " + strconv.FormatInt(maxSpeed, 10) + " km/h"), nil
		}, nil
	}).Doc("limit the speed if the battery is still below a level").
		Example(`{"below":20,"max_speed":15}`).Needs(ruled.CapKV, ruled.CapPublish)

	ruled.Action("alarm", func(ruled.Config) (ruled.DoFunc, error) {
		return func(in *ruled.Input) ([]byte, error) {
			vehicle, _ := in.Event.String("vehicle")
			payload := `{"vehicle":` + string(abi.AppendJSONString(nil, vehicle)) +
				`,"round":` + strconv.Itoa(in.Pass()+1) + `}`
			return nil, ruled.Publish("scooter.cmd.alarm", []byte(payload))
		}, nil
	}).Doc("sound the scooter's alarm").Needs(ruled.CapPublish)
}
