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
  "abi FuzzHTTPCodec"
  ". ./host/wasm/internal/instrument FuzzInstrument"
  ". ./host/rules FuzzParseFile"
  ". ./host/exprcheck FuzzCheck"
  ". ./host/exprcheck FuzzEval"
  ". ./host/cronspec FuzzParse"
  ". ./plugins FuzzExprDifferential"
  ". ./host/bus FuzzDecode"
  ". ./host/bus FuzzWithMembers"
  ". ./host/bus FuzzWithMembersChecked"
  ". ./host/runlog FuzzParseKey"
  ". ./host/runlog FuzzEncode"
  ". ./host/runlog FuzzReadEntries"
  ". ./host/seq FuzzDecodePending"
  ". ./host/seq FuzzDecodeFast"
  ". ./host/seq FuzzRunner"
  ". ./host/seq/core FuzzAdmit"
  ". ./host/seq/core FuzzAdvance"
  ". ./host/journal FuzzDecode"
  ". ./host/state FuzzSame"
  ". ./host/window FuzzDecode"
  ". ./host/wasm FuzzSDKViews"
  ". ./host/trust FuzzParseSignature"
  ". ./host/mqtt FuzzTopic"
  ". ./host/store FuzzSegmentOpen"
  ". ./host/store FuzzExecIndex"
  ". ./sdk/ruletest/scenario FuzzParse"
  ". ./sdk/ruletest/scenario FuzzReadCapture"
)
for tgt in "${targets[@]}"; do
  set -- $tgt
  if [ $# = 2 ]; then dir=$1; pkg=.; name=$2; else dir=$1; pkg=$2; name=$3; fi
  echo "== fuzz $name ($t)"
  # A crasher the fuzzer finds is written under testdata and fails the
  # run. The fuzzing engine itself can also fail on a loaded machine (a
  # worker process that hangs or dies without an input to blame): that
  # is tried once more, with the whole output shown.
  for attempt in 1 2; do
    if out=$(cd "$dir" && go test -run '^$' -fuzz "^${name}\$" -fuzztime "$t" "$pkg" 2>&1); then
      echo "$out" | tail -3
      break
    fi
    echo "$out" | grep -v 'fuzz: elapsed' | tail -30
    if echo "$out" | grep -q 'Failing input written to' || [ "$attempt" = 2 ]; then
      exit 1
    fi
    echo "== fuzz $name: the engine failed without an input to blame; once more"
  done
done
