// Package ruled is the Go SDK for writing ruled plugins: WebAssembly modules
// whose conditions decide whether a rule runs and whose actions do its steps.
//
// A plugin is a main package built with the standard Go toolchain:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o battery.wasm .
//
// It registers its functions in init and leaves main empty:
//
//	func init() {
//		ruled.Condition("low", func(cfg ruled.Config) (ruled.WhenFunc, error) {
//			below := cfg.Float("below", 20)
//			return func(ev ruled.Event) (bool, error) {
//				v, ok := ev.Float("battery")
//				return ok && v < below, nil
//			}, nil
//		}).Example(`{"below": 20}`)
//	}
//
//	func main() {}
//
// The SDK owns the module's exports (the `//go:wasmexport` functions of ABI
// v1, see abi/ABI.md) and its imports of host functions; an author writes
// plain Go. Configure runs once per config and returns the function that
// serves every call, so a plugin parses or compiles its config once.
//
// The package imports only the standard library and the abi package: a
// plugin's module does not inherit the host's dependencies. Off wasm, a
// test calls the plugin's functions in its own process with Native, whose
// in-memory host keeps what they publish, fire and store; outside a Native
// call the host functions answer StatusUnavailable, except Log and Now.
// sdk/ruletest's Plugin runs the same calls on the compiled module.
//
// # Notes
//
//   - Values an Event hands out as []byte are views into the call's input and
//     are valid only until the call returns. Strings are copies.
//   - A plugin instance is single-threaded and the host may throw it away at
//     any time (after any failed call): keep nothing in globals that must
//     survive, use the kv host functions instead.
//   - A panic in a condition or action is recovered and reported to the host
//     as an error with the panic's text.
package ruled
