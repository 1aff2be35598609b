#!/usr/bin/env bash
# The layer guard: layers run one way (cmd -> host/* -> abi; plugins ->
# sdk/go -> abi). Nothing under sdk/go may import wazero or host, and abi
# imports only the standard library.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
deps=$( (cd sdk/go && GOOS=wasip1 GOARCH=wasm go list -deps ./... && go list -deps ./...) )
if echo "$deps" | grep -E 'tetratelabs/wazero|ruled-dev/ruled/host' ; then
  echo "layers: sdk/go imports wazero or host" >&2; fail=1
fi
nonstd=$(cd abi && go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./... | grep -v '^github.com/ruled-dev/ruled/abi$' || true)
if [ -n "$nonstd" ]; then
  echo "layers: abi imports outside the standard library: $nonstd" >&2; fail=1
fi
plug=$(GOOS=wasip1 GOARCH=wasm go list -deps ./plugins/... | grep -E 'tetratelabs/wazero|ruled-dev/ruled/host' || true)
if [ -n "$plug" ]; then
  echo "layers: plugins import wazero or host: $plug" >&2; fail=1
fi
exit $fail
