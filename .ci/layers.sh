#!/usr/bin/env bash
# The layer guard. Layers run one way: cmd -> sdk/ruletest -> host/* -> abi
# on the host side, plugins -> sdk/go -> abi on the guest side.
#
# Host side: every package of the main module (plugins and the example's
# plugin aside, which are guests) has a layer below, and imports only
# packages of lower layers — never one above (upward) nor one of its own
# layer (sideways). A new package must be given a layer here before it
# builds past `make check`. The graph is read for linux and for darwin, so
# files built for one of them only are seen. Tests may import across
# layers — a journal test runs on a real store, a store test on the
# sequencer's interfaces — but never cmd/ or sdk/ruletest from host/, and
# only tests import internal/testkit (fakes).
#
# Guest side: nothing under sdk/go, plugins or the example's plugin may
# import wazero or host, and abi imports only the standard library.
#
# Usage: .ci/layers.sh [ROOT] — ROOT (default: this checkout) is a copy of
# the repository; .ci/layers_test.sh uses it to show the guard fails.
set -euo pipefail
root=${1:-"$(dirname "$0")/.."}
cd "$root"
fail=0

# layer of each host-side package, lowest first. sdk/go is a guest's
# package; cmd/ruled reads only its files (Sources, for ruled new).
layers='
-1 abi
-1 abi/tmpl
0 sdk/go
0 sdk/c
0 sdk/rust
0 sdk/assemblyscript
0 plugins/build
0 internal/backoff
0 internal/fastjson
0 internal/fuzzmem
0 internal/golden
0 internal/lograte
0 internal/mqtttest
0 internal/otlptest
0 internal/plugintest
0 internal/redistest
0 internal/regular
0 internal/schema
0 internal/schema/schematest
-1 internal/suggest
0 internal/syncbuf
0 internal/traceparent
0 internal/testkit
0 host/cronspec
1 host/trust
0 host/sun
0 host/exprcheck
0 host/keyspace
0 host/wasm/internal/instrument
1 internal/release
1 host/bus
1 host/candidates
1 host/console
1 host/planner
1 host/outbound
1 host/pool
1 host/rules
1 host/runlog
1 host/history
1 host/audit
1 host/sched
1 host/wasm
2 host/journal
2 host/state
2 host/window
2 host/traces
3 host/hold
2 host/mqtt
2 host/pipeline
2 host/schedule
2 host/task
2 host/triggers
2 host/seq/core
3 host/seq
3 host/store
5 host/api
4 host/fleet
4 host/status
4 host/observe
4 host/reload
4 host/ruleset
5 host/catalog
6 host/config
5 host/ingest
5 host/metrics
5 host/placement
6 host/engine
7 host/daemon
8 sdk/ruletest
9 sdk/ruletest/scenario
10 cmd/ruled
10 examples/scooter
10 examples/scooter/sim
10 examples/home
'
mod=github.com/ruled-dev/ruled
guests="^$mod/(plugins|examples/scooter/plugin)(/|$| )"
graph=$( (go list -e -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}' ./...
  GOOS=darwin go list -e -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}' ./...) | grep -v -E "$guests")
errs=$( (go list -e -f '{{if .Error}}{{.ImportPath}}: {{.Error}}{{end}}' ./...) | grep -v -E "$guests" || true)
if [ -n "$errs" ]; then
  echo "layers: go list: $errs" >&2; fail=1
fi
tests=$(go list -e -f '{{.ImportPath}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}' ./host/... |
  awk -v mod="$mod/" '{ for (i = 2; i <= NF; i++) if (index($i, mod "cmd/") == 1 || index($i, mod "sdk/ruletest") == 1) print "layers: a test of " substr($1, length(mod) + 1) " imports " substr($i, length(mod) + 1) }')
if [ -n "$tests" ]; then
  echo "$tests" >&2; fail=1
fi
# internal/testkit is fakes for tests: no package's own code imports it.
fakes=$(grep -E " $mod/internal/testkit( |$)" <<<"$graph" | awk -v mod="$mod/" '{ print "layers: " substr($1, length(mod) + 1) " imports internal/testkit, which is for tests" }' | sort -u || true)
if [ -n "$fakes" ]; then
  echo "$fakes" >&2; fail=1
fi
bad=$(awk -v mod="$mod/" -v table="$layers" '
  BEGIN {
    n = split(table, rows, "\n")
    for (i = 1; i <= n; i++) if (split(rows[i], f, " ") == 2) layer[f[2]] = f[1]
  }
  {
    p = substr($1, length(mod) + 1)
    if (!(p in layer)) { print "layers: " p " has no layer: add it to .ci/layers.sh"; next }
    for (i = 2; i <= NF; i++) {
      if (index($i, mod) != 1) continue
      q = substr($i, length(mod) + 1)
      if (!(q in layer)) { print "layers: " p " imports " q ", which has no layer"; continue }
      if (layer[q] > layer[p]) print "layers: " p " (layer " layer[p] ") imports " q " (layer " layer[q] "): upward"
      else if (layer[q] == layer[p]) print "layers: " p " imports " q ", of its own layer " layer[p] ": sideways"
    }
  }' <<<"$graph" | sort -u || true)
if [ -n "$bad" ]; then
  echo "$bad" >&2; fail=1
fi

deps=$( (cd sdk/go && GOOS=wasip1 GOARCH=wasm go list -deps ./... && go list -deps ./...) )
if echo "$deps" | grep -E 'tetratelabs/wazero|ruled-dev/ruled/host' ; then
  echo "layers: sdk/go imports wazero or host" >&2; fail=1
fi
nonstd=$(cd abi && go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./... | grep -v -E '^github.com/ruled-dev/ruled/abi(/[a-z]+)?$' || true)
if [ -n "$nonstd" ]; then
  echo "layers: abi imports outside the standard library: $nonstd" >&2; fail=1
fi
plug=$(GOOS=wasip1 GOARCH=wasm go list -deps ./plugins/... ./examples/scooter/plugin | grep -E 'tetratelabs/wazero|ruled-dev/ruled/host' || true)
if [ -n "$plug" ]; then
  echo "layers: plugins import wazero or host: $plug" >&2; fail=1
fi
exit $fail
