#!/usr/bin/env bash
# Installs what `make test` needs when it is missing: wabt's wat2wasm (apt),
# Node.js and npm (apt), redis-server and redis-cli (apt; internal/redistest starts it for
# the Redis tests), Chromium (apt; the console's browser tests drive it
# headless), mosquitto and mosquitto-clients (apt; internal/mqtttest
# starts the broker for the MQTT tests, TestHomeExample publishes with
# mosquitto_pub), qemu-user (apt; TestCrossBuiltDaemons runs the arm64 and
# armv7 builds under it), clang-14, lld-14 and wasi-libc, rustc and
# libstd-rust-dev-wasm32 (apt; the C and Rust SDKs' plugins are built from
# source by the tests), and the AssemblyScript SDK's node packages (npm ci, pinned by
# sdk/assemblyscript/package-lock.json).
#
# Under CI=true a tool that is still missing afterwards is an error; on a
# developer's machine it is a warning and the tests that need it skip.
set -u
cd "$(dirname "$0")/.."

missing=()
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"

apt_install() {
  if ! command -v apt-get >/dev/null; then return 1; fi
  if [ -z "${APT_UPDATED:-}" ]; then
    $sudo apt-get update -qq >/dev/null 2>&1 || true
    APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null 2>&1
}

need() { # need <command> <apt packages...>
  local cmd=$1; shift
  command -v "$cmd" >/dev/null && return 0
  echo "tools: installing $* for $cmd" >&2
  apt_install "$@" || true
  command -v "$cmd" >/dev/null || missing+=("$cmd")
}

need wat2wasm wabt
need npm nodejs npm
need redis-server redis-server
need redis-cli redis-tools  # the cluster tests join their nodes with it
need chromium chromium
need mosquitto mosquitto  # internal/mqtttest starts it for the MQTT tests
need mosquitto_pub mosquitto-clients  # cmd/ruled's TestHomeExample plays the door sensor with it
need qemu-aarch64 qemu-user  # cmd/ruled's TestCrossBuiltDaemons runs the arm64 and armv7 builds
need curl curl  # .ci/deb_test.sh posts an event to the installed daemon's socket
# The C SDK's plugins (sdk/c/ruled/build.sh): clang 14 for wasm32-wasi, its
# linker, wasi-libc and the wasm32 compiler-rt builtins.
need clang-14 clang-14 lld-14 wasi-libc libclang-rt-14-dev-wasm32
# The Rust SDK's plugins (sdk/rust/build.sh): Debian's rustc and its wasm32
# standard library (a rustup rustc on the PATH has no wasm32 target here).
if [ ! -d /usr/lib/rustlib/wasm32-unknown-unknown ]; then
  echo "tools: installing rustc libstd-rust-dev-wasm32 for sdk/rust" >&2
  apt_install rustc libstd-rust-dev-wasm32 || true
  [ -d /usr/lib/rustlib/wasm32-unknown-unknown ] || missing+=("libstd-rust-dev-wasm32")
fi
if command -v clang-14 >/dev/null && { [ ! -f /usr/lib/wasm32-wasi/libc.a ] || ! command -v wasm-ld-14 >/dev/null; }; then
  echo "tools: installing lld-14 wasi-libc libclang-rt-14-dev-wasm32 for sdk/c" >&2
  apt_install lld-14 wasi-libc libclang-rt-14-dev-wasm32 || true
  [ -f /usr/lib/wasm32-wasi/libc.a ] || missing+=("wasi-libc")
fi

if command -v npm >/dev/null; then
  lock=sdk/assemblyscript/package-lock.json
  stamp=sdk/assemblyscript/node_modules/.ruled-lock
  if [ ! -f "$stamp" ] || ! cmp -s "$lock" "$stamp"; then
    echo "tools: npm ci in sdk/assemblyscript" >&2
    if (cd sdk/assemblyscript && npm ci --no-audit --no-fund --loglevel=error >/dev/null); then
      cp "$lock" "$stamp"
    else
      missing+=("sdk/assemblyscript/node_modules")
    fi
  fi
fi

if [ ${#missing[@]} -gt 0 ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "tools: missing under CI=true: ${missing[*]}" >&2
    exit 1
  fi
  echo "tools: missing (tests that need them will skip): ${missing[*]}" >&2
fi
exit 0
