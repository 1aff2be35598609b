#!/usr/bin/env bash
# The layer guard's own test: on a copy of the repository it passes as it
# is, and fails — naming the import — on a deliberate upward import
# (host/runlog importing host/task; host/store importing host/daemon, a
# cycle too), a sideways one (host/seq importing host/store), a package
# with no layer, a guest importing host (a plugin, the example's plugin),
# an upward import in a file built for darwin only, and a host test
# importing sdk/ruletest. sdk/go is a module of its own that does not
# require the host's: an import of host there does not build at all.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
copy() {
  rm -rf "$tmp/repo"; mkdir -p "$tmp/repo"
  (cd "$here" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$tmp/repo" 2>/dev/null) || true
}
bad=0
expect() { # name, file, content, what the guard must say
  copy
  mkdir -p "$(dirname "$tmp/repo/$2")"
  printf '%s\n' "$3" > "$tmp/repo/$2"
  if out=$("$here/.ci/layers.sh" "$tmp/repo" 2>&1); then
    echo "layers_test: $1: the guard passed; want it to fail" >&2; bad=1
  elif ! grep -qF "$4" <<<"$out"; then
    echo "layers_test: $1: the guard said: $out; want: $4" >&2; bad=1
  else
    echo "layers_test: $1: refused ($4)"
  fi
}
copy
if ! out=$("$here/.ci/layers.sh" "$tmp/repo" 2>&1); then
  echo "layers_test: the unchanged copy fails: $out" >&2; exit 1
fi
expect upward host/runlog/zz_bad.go 'package runlog
import _ "github.com/ruled-dev/ruled/host/task"' 'host/runlog (layer 1) imports host/task (layer 2): upward'
expect sideways host/seq/zz_bad.go 'package seq
import _ "github.com/ruled-dev/ruled/host/store"' 'host/seq imports host/store, of its own layer 3: sideways'
expect unplaced host/newthing/a.go 'package newthing' 'host/newthing has no layer'
expect upward-cycle host/store/zz_bad.go 'package store
import _ "github.com/ruled-dev/ruled/host/daemon"' 'host/store (layer 3) imports host/daemon (layer 7): upward'
expect guest plugins/publish/zz_bad.go 'package main
import _ "github.com/ruled-dev/ruled/host/keyspace"' 'plugins import wazero or host'
expect example-guest examples/scooter/plugin/zz_bad.go 'package main
import _ "github.com/ruled-dev/ruled/host/keyspace"' 'plugins import wazero or host'
expect darwin-only host/keyspace/zz_bad_darwin.go 'package keyspace
import _ "github.com/ruled-dev/ruled/host/bus"' 'host/keyspace (layer 0) imports host/bus (layer 1): upward'
expect test-of-host host/pool/zz_bad_test.go 'package pool
import _ "github.com/ruled-dev/ruled/sdk/ruletest"' 'a test of host/pool imports sdk/ruletest'
expect fakes-in-code host/pool/zz_bad.go 'package pool
import _ "github.com/ruled-dev/ruled/internal/testkit"' 'host/pool imports internal/testkit, which is for tests'
exit $bad
