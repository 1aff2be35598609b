#!/usr/bin/env bash
# `make run`: until the daemon lands, call the example plugins once each with
# `ruled call`, the way a rule author tries a plugin.
set -euo pipefail
cd "$(dirname "$0")/.."
ev=examples/scooter/events
step() { echo; echo "\$ $*"; "$@"; }
step bin/ruled plugin inspect bin/plugins/expr.wasm
step bin/ruled call bin/plugins/expr.wasm expr --event $ev/low-battery.json --config 'expr=battery < 20 && !charging'
step bin/ruled call bin/plugins/expr.wasm expr --event $ev/charging.json --config 'expr=battery < 20 && !charging'
step bin/ruled call bin/plugins/publish.wasm publish --event $ev/low-battery.json \
  --config 'topic=alerts.battery.{{vehicle}}' --config 'payload.vehicle="{{vehicle}}"' --config 'payload.level="{{battery}}"'
step bin/ruled call bin/plugins/log.wasm log --event $ev/low-battery.json --config 'message=battery {{battery}}% on {{vehicle}}' --config level=warn
step bin/ruled call bin/plugins/battery_as.wasm battery_low --event $ev/low-battery.json --config below=15
