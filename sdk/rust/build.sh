#!/bin/sh
# build.sh OUT.wasm PLUGIN.rs — a ruled plugin from one Rust source file
# (a crate root) and the SDK (sdk/rust), for wasm32-unknown-unknown, with
# rustc alone: no cargo, no registry. It uses Debian's rustc 1.63 and its
# wasm32 standard library (sudo apt-get install rustc
# libstd-rust-dev-wasm32), or $RUSTC. With bulk memory a copy is one
# memory.copy, not compiler-builtins' loop charged fuel each byte
# (temp_high 1.2x -> 1.03x native). With cargo, depend on sdk/rust by path
# and build --target wasm32-unknown-unknown --release, with RUSTFLAGS="-C
# target-feature=+bulk-memory".
#
# build.sh --test OUT PLUGIN.rs builds the plugin's tests to run natively
# instead (its #[cfg(test)] module, with ruled::native's in-memory host).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
test=
if [ "$1" = --test ]; then
  test=1
  shift
fi
out=$1
src=$2
rustc=${RUSTC:-/usr/bin/rustc}
[ -x "$rustc" ] || rustc=rustc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -n "$test" ]; then
  "$rustc" --edition 2021 --crate-type rlib --crate-name ruled -o "$tmp/libruled.rlib" "$here/src/lib.rs"
  name=$(basename "$src" .rs | tr -c 'a-zA-Z0-9_\n' _)
  "$rustc" --edition 2021 --test --crate-name "$name" --extern ruled="$tmp/libruled.rlib" -L "$tmp" -o "$out" "$src"
  exit 0
fi
flags="--edition 2021 --target wasm32-unknown-unknown -C opt-level=s -C panic=abort -C target-feature=+bulk-memory"
"$rustc" $flags --crate-type rlib --crate-name ruled -o "$tmp/libruled.rlib" "$here/src/lib.rs"
name=$(basename "$src" .rs | tr -c 'a-zA-Z0-9_\n' _)
"$rustc" $flags -C lto -C strip=symbols --crate-type cdylib --crate-name "$name" \
  --extern ruled="$tmp/libruled.rlib" -L "$tmp" -o "$out" "$src"
