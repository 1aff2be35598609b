// Package plugintest builds and finds the wasm plugins that tests load, so
// that every test package shares one build directory and one wazero
// compilation cache: building a Go plugin takes seconds and compiling it
// about one, and `make test` runs many packages.
//
// It is for tests only and owns no goroutine.
package plugintest
