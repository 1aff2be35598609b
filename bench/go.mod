module github.com/ruled-dev/ruled/bench

go 1.26.0

replace (
	github.com/ruled-dev/ruled => ../
	github.com/ruled-dev/ruled/abi => ../abi
	github.com/ruled-dev/ruled/sdk/go => ../sdk/go
)

require (
	github.com/eclipse/paho.golang v0.23.0
	github.com/extism/go-pdk v1.1.3
	github.com/extism/go-sdk v1.7.1
	github.com/ruled-dev/ruled v0.0.0
	github.com/tetratelabs/wazero v1.12.0
)

require (
	github.com/dylibso/observe-sdk/go v0.0.0-20240819160327-2d926c5d788a // indirect
	github.com/gobwas/glob v0.2.3 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/ianlancetaylor/demangle v0.0.0-20240805132620-81f5be970eca // indirect
	github.com/tetratelabs/wabin v0.0.0-20230304001439-f6f874872834 // indirect
	go.opentelemetry.io/proto/otlp v1.11.0 // indirect
	golang.org/x/net v0.59.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
