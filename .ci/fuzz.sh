#!/usr/bin/env bash
# Runs every fuzz target for the given time (default 30s each). The seed
# corpora under testdata/fuzz run as ordinary tests in `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-30s}
targets=(
  "abi FuzzAppendJSONView"
  "abi FuzzParseView"
  "abi FuzzParseCallInput"
  ". ./host/wasm/internal/instrument FuzzInstrument"
  ". ./host/rules FuzzParseFile"
  ". ./host/bus FuzzDecode"
  ". ./host/runlog FuzzParseKey"
  ". ./host/runlog FuzzEncode"
  ". ./host/runlog FuzzReadEntries"
  ". ./host/seq FuzzDecodePending"
)
for tgt in "${targets[@]}"; do
  set -- $tgt
  if [ $# = 2 ]; then dir=$1; pkg=.; name=$2; else dir=$1; pkg=$2; name=$3; fi
  echo "== fuzz $name ($t)"
  (cd "$dir" && go test -run '^$' -fuzz "^${name}\$" -fuzztime "$t" "$pkg" 2>&1 | tail -3)
done
