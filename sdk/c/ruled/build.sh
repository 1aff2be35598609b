#!/bin/sh
# build.sh OUT.wasm SOURCE.c... — a ruled plugin from C sources and the
# SDK (ruled.c), for wasm32-wasi with Debian's clang 14, lld and wasi-libc
# (sudo apt-get install clang-14 lld-14 wasi-libc libclang-rt-14-dev-wasm32).
# A reactor module: _initialize runs the plugin's constructors once.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=$1; shift
# The stack comes first in memory (64 KiB): a stack that overflows traps
# at address 0 instead of growing down over the SDK's data. RULED_CC
# names another clang (CC is often a host compiler).
cc=${RULED_CC:-clang-14}
command -v "$cc" >/dev/null || cc=clang
exec "$cc" --target=wasm32-wasi -mexec-model=reactor -O2 -std=c11 -Wall -Wno-unused-parameter \
  -I"$here" -ffile-prefix-map="$here"=sdk/c/ruled -Wl,--stack-first -Wl,-z,stack-size=65536 -Wl,--strip-all \
  -o "$out" "$@" "$here/ruled.c"
