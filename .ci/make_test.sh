#!/usr/bin/env bash
# make rebuilds bin/ruled when any file it is built from changes — a Go
# file, an embedded console file, sdk/ruletest — and when the version it
# stamps does (a commit, a tag). Run by make check. It touches each
# file's mtime forward and puts it back, so the tree is left as it was.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s bin/ruled >/dev/null
fail=0
for f in host/console/static/app.js host/console/static/index.html sdk/ruletest/ruletest.go host/wasm/calibrate.wasm internal/syncbuf/syncbuf.go cmd/ruled/main.go; do
  [ -e "$f" ] || { echo "make_test: $f is gone: pick another file" >&2; fail=1; continue; }
  old=$(stat -c %y "$f")
  touch -d "$(date -d '+1 minute' '+%Y-%m-%d %H:%M:%S')" "$f"
  if make -q bin/ruled 2>/dev/null; then
    echo "make_test: bin/ruled is not rebuilt when $f changes" >&2; fail=1
  fi
  touch -d "$old" "$f"
done
make -q bin/ruled || { echo "make_test: bin/ruled out of date after the files were put back" >&2; fail=1; }
# A new version to stamp (a commit, a tag: other ldflags) rebuilds it too,
# though no file changed; then it is built back as it was.
if make -q bin/ruled LDFLAGS='-X github.com/ruled-dev/ruled/internal/release.tag=v9.9.9' 2>/dev/null; then
  echo "make_test: bin/ruled is not rebuilt when the version it stamps changes" >&2; fail=1
fi
make -s bin/ruled >/dev/null
exit $fail
