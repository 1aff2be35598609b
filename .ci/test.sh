#!/usr/bin/env bash
# make test: every part runs, a failing one does not stop the rest, and
# the failures are listed together at the end (exit 1 if any). Parts: the
# tests of each Go module, the wasm host's once more on wazero's
# interpreter, the committed AssemblyScript modules against their source,
# the release's packages (make dist; the .deb installed under CI=true),
# and a short smoke of every fuzz target.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
TEST_FLAGS=${TEST_FLAGS:--race -timeout 20m}
FUZZ_TIME=${FUZZ_TIME:-3s}
failed=()

part() { # part NAME COMMAND...: run it, note a failure
  local name=$1
  shift
  echo "== $name"
  local start=$SECONDS
  if ! "$@"; then
    failed+=("$name")
    echo "== $name: FAILED ($((SECONDS - start)) s)"
  else
    echo "== $name: ok ($((SECONDS - start)) s)"
  fi
}

for m in . abi sdk/go test/browser; do
  # shellcheck disable=SC2086 # TEST_FLAGS is a list of flags
  part "go test $m" bash -c "cd '$m' && $GO test $TEST_FLAGS ./..."
done
# Not under -race: the interpreter reads the stop global in Go code while
# the deadline timer writes it, a race by design (see instrument tests).
part "host/wasm on wazero's interpreter" env RULED_WASM_INTERPRETER=1 $GO test -timeout 20m -count=1 ./host/wasm/
if command -v npm >/dev/null && [ -d sdk/assemblyscript/node_modules ]; then
  part "committed AssemblyScript modules match their source" bash -c "cd sdk/assemblyscript && npm run --silent check"
else
  echo "== committed AssemblyScript modules: skipped (npm or sdk/assemblyscript/node_modules missing)"
  if [ "${CI:-}" = true ]; then failed+=("AssemblyScript check (npm missing)"); fi
fi
part "make dist, and the amd64 .deb installed, run and removed" .ci/deb_test.sh
part "fuzz smoke ($FUZZ_TIME a target)" .ci/fuzz.sh "$FUZZ_TIME"

echo
if [ ${#failed[@]} -gt 0 ]; then
  echo "make test: ${#failed[@]} part(s) failed:"
  printf '  - %s\n' "${failed[@]}"
  exit 1
fi
echo "make test: every part passed"
