# ruled: the two commands are `make run` and `make test`.
SHELL := /bin/bash
GO    ?= go

# One plugin build directory and one wazero compilation cache for every test
# package (see internal/plugintest).
export RULED_PLUGIN_DIR   ?= $(CURDIR)/.build/plugins
export RULED_WAZERO_CACHE ?= $(CURDIR)/.build/wazero

MODULES     := . abi sdk/go test/browser
ALL_MODULES := $(MODULES) bench
AS_PLUGINS  := expr publish log fire http
TEST_FLAGS  ?= -race -timeout 20m
BENCH_FLAGS ?= -benchtime 1s -count 1
FUZZ_TIME   ?= 30s
SOAK_TIME   ?= 1m
SOAK_RATE   ?= 10

.PHONY: run test check plugins plugins-as bench bench-nodered fuzz fuzz-smoke soak tools clean dist

## run: the daemon on the example scooter rules, fed by the telemetry simulator.
run: bin/ruled plugins
	@echo "ruled on examples/scooter (embedded store in .build/run); Ctrl-C stops it."
	@echo "In another terminal: bin/ruled status --data .build/run; bin/ruled pending ls --data .build/run; bin/ruled state ls --data .build/run"
	@echo "Plugins from bin/scooter-plugins (what the rules call; make plugins fills it)."
	$(GO) run ./examples/scooter/sim | bin/ruled run --config examples/scooter/ruled.yaml --events -

# bin/ruled's inputs are every file of this repository its packages compile
# or embed, as go list says — host/console/static, host/wasm's calibration
# module, sdk/ruletest, internal/… — so that a change to any of them
# rebuilds it (a find over a few directories missed the embedded console).
# .ci/make_test.sh holds make to it.
RULED_INPUTS := $(filter $(CURDIR)/%,$(shell $(GO) list -deps -f '{{if not .Standard}}{{range .GoFiles}}{{$$.Dir}}/{{.}} {{end}}{{range .EmbedFiles}}{{$$.Dir}}/{{.}} {{end}}{{end}}' ./cmd/ruled 2>/dev/null))

# The release tag of the tree, when it has one, is the version bin/ruled
# says (internal/release); the commit and its state come from Go's own
# build information.
RELEASE   := github.com/ruled-dev/ruled/internal/release
RULED_TAG := $(shell git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null)
LDFLAGS   ?= $(if $(RULED_TAG),-X $(RELEASE).tag=$(RULED_TAG)) \
  -X $(RELEASE).commit=$(shell git rev-parse HEAD 2>/dev/null) \
  -X $(RELEASE).modified=$(shell git diff --quiet HEAD 2>/dev/null && echo false || echo true)

# The stamp holds the ldflags last built with: a new commit or tag (or a
# tree that became modified) rewrites it, and bin/ruled is built again
# with the version it should say, though no source file changed.
VERSION_STAMP := .build/ldflags
$(shell mkdir -p .build; printf '%s\n' "$(LDFLAGS)" | cmp -s - $(VERSION_STAMP) || printf '%s\n' "$(LDFLAGS)" > $(VERSION_STAMP))

bin/ruled: $(RULED_INPUTS) go.mod go.sum abi/go.mod $(VERSION_STAMP)
	$(GO) build -ldflags '$(LDFLAGS)' -o $@ ./cmd/ruled

## plugins: the first-party plugins and the example's into bin/plugins/, and
## what the scooter rules call into bin/scooter-plugins/ (make run's): all
## AssemblyScript, committed builds (plugins/build, see plugins-as).
plugins:
	@mkdir -p bin/plugins bin/scooter-plugins
	@for p in $(AS_PLUGINS); do cp plugins/build/$$p.wasm bin/plugins/$$p.wasm || exit 1; done
	cp examples/scooter/plugin/scooter.wasm bin/plugins/scooter.wasm
	@for p in expr publish log fire scooter; do cp bin/plugins/$$p.wasm bin/scooter-plugins/$$p.wasm || exit 1; done

## plugins-as: rebuild the committed AssemblyScript modules, the SDK's and the
## first-party plugins (needs npm; make test checks them against their source).
plugins-as: tools
	cd sdk/assemblyscript && npm run --silent build

## tools: install what the tests need when it is missing.
tools:
	@.ci/tools.sh

## test: every test of every module, real plugins included; a failing
## part does not stop the others, and the failures are listed at the end.
test: tools
	@GO="$(GO)" TEST_FLAGS="$(TEST_FLAGS)" FUZZ_TIME=3s .ci/test.sh

## check: formatting, vet, tidy modules, the layer guard, cross-builds.
check:
	@echo "== gofmt"; out=$$(gofmt -l $$(git ls-files '*.go')); [ -z "$$out" ] || { echo "$$out"; exit 1; }
	@for m in $(ALL_MODULES); do echo "== vet $$m"; (cd $$m && $(GO) vet ./...) || exit 1; done
	@echo "== vet wasip1"; GOOS=wasip1 GOARCH=wasm $(GO) vet ./plugins/... && (cd sdk/go && GOOS=wasip1 GOARCH=wasm $(GO) vet ./...)
	@for m in $(ALL_MODULES); do \
	  echo "== go mod tidy $$m"; \
	  (cd $$m && $(GO) mod tidy && git diff --exit-code -- go.mod $$(ls go.sum 2>/dev/null)) || \
	    { echo "go mod tidy changed $$m: commit the result"; exit 1; }; \
	done
	@echo "== layer guard"; .ci/layers.sh && .ci/layers_test.sh
	@echo "== make rebuilds bin/ruled when a file it is built from changes"; .ci/make_test.sh
	@echo "== cross-build linux/arm64 linux/arm"
	GOOS=linux GOARCH=arm64 $(GO) build -o /dev/null ./cmd/ruled
	GOOS=linux GOARCH=arm GOARM=7 $(GO) build -o /dev/null ./cmd/ruled

## dist: the release's archives and .debs for linux/amd64, arm64 and armv7
## in .build/dist (.ci/dist.sh; nFPM builds the packages).
dist:
	@GO="$(GO)" .ci/dist.sh

## bench: the benchmarks of issue figures, as ratios within one run, and the
## example daemon's footprint (start to ready, RSS, RSS per idle rule).
bench:
	@.ci/bench.sh
	@.ci/footprint.sh

## bench-nodered: ruled and Node-RED 4.1 on one MQTT flow, side by side
## (alerts/s, CPU a message, p99 at 1,000 msg/s; Node-RED from npm).
bench-nodered:
	cd bench && RULED_PERF=1 $(GO) test -count=1 -timeout 30m -run 'TestFlowAgainstNodeRED' -v . | grep -E 'flow_test|SKIP'

## fuzz: run each fuzz target for FUZZ_TIME.
fuzz:
	@.ci/fuzz.sh $(FUZZ_TIME)

## soak: the crash soaks — the daemon SIGKILLed at random under load, SOAK_TIME per store, SOAK_RATE events/s; and a fleet of three members, killed one at a time.
soak: tools
	set -o pipefail; RULED_SOAK=1 RULED_SOAK_TIME=$(SOAK_TIME) RULED_SOAK_RATE=$(SOAK_RATE) $(GO) test -count=1 -timeout 60m -run '^(TestSoak|TestFleetSoak)$$' -v ./cmd/ruled/ | grep -E '^(soak|--- |ok|FAIL|PASS)|soak_test'

fuzz-smoke:
	@.ci/fuzz.sh $(FUZZ_TIME)

clean:
	rm -rf bin .build
