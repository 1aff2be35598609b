#!/bin/sh
# build.sh OUT.wasm SOURCE.c... — a ruled plugin from C sources and the
# SDK (ruled.c), for wasm32-wasi with Debian's clang 14, lld and wasi-libc
# (sudo apt-get install clang-14 lld-14 wasi-libc libclang-rt-14-dev-wasm32).
# A reactor module: _initialize runs the plugin's constructors once.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$1; shift
cc=${CC:-clang-14}
command -v "$cc" >/dev/null || cc=clang
exec "$cc" --target=wasm32-wasi -mexec-model=reactor -O2 -std=c11 -Wall -Wno-unused-parameter \
  -ffile-prefix-map="$here"=sdk/c/ruled -Wl,--strip-all -o "$out" "$@" "$here/ruled.c"
