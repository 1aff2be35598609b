#!/usr/bin/env bash
# make bench's footprint figures for `make run`'s daemon (the scooter rules,
# the first-party plugins, the embedded store, its memory-limit-mb): start
# to ready on a cold and a warm compilation cache, RSS idle and peak while
# the simulator's events arrive over HTTP NDJSON in posts of 1,000, and the
# RSS 10,000 idle rules add, per rule.
#   EVENTS=50000 .ci/footprint.sh
set -euo pipefail
cd "$(dirname "$0")/.."
events=${EVENTS:-50000}
make -s bin/ruled plugins >/dev/null
d=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$d"' EXIT
port=$(( 20000 + RANDOM % 20000 ))
url=http://127.0.0.1:$port

start() { # start DATA [flags...]: runs the daemon; ready is the milliseconds to /readyz 200
  local t0
  t0=$(date +%s%N)
  bin/ruled run --config examples/scooter/ruled.yaml --data "$1" --http "127.0.0.1:$port" "${@:2}" >>"$d/log" 2>&1 &
  pid=$!
  until curl -sf "$url/readyz" >/dev/null 2>&1; do
    kill -0 $pid 2>/dev/null || { cat "$d/log" >&2; exit 1; }
    sleep 0.005
  done
  ready=$(( ($(date +%s%N) - t0) / 1000000 ))
}
stop() { kill $pid; wait $pid 2>/dev/null || true; pid=; }
kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$pid/status"; }

start "$d/data"; cold=$ready; stop
start "$d/data"; warm=$ready
sleep 2
idle=$(kb VmRSS)
go run ./examples/scooter/sim -ticks $(( events / 6 )) -every 0 > "$d/events.ndjson"
n=$(wc -l < "$d/events.ndjson")
split -l 1000 "$d/events.ndjson" "$d/post."
t0=$(date +%s%N)
# A post the worker queue has no room for is answered 503 with the line
# to send again from (unprocessed_from): a client waits a moment and
# sends the rest, as this does.
post() { # post FILE: until every line is accepted
  local f=$1 out code from
  while :; do
    out=$(curl -s -w '\n%{http_code}' -H 'Content-Type: application/x-ndjson' --data-binary "@$f" "$url/v1/events")
    code=${out##*$'\n'}
    case $code in
      202) return 0 ;;
      503)
        from=$(printf '%s' "$out" | sed -n 's/.*"unprocessed_from":\([0-9]*\).*/\1/p')
        [ -n "$from" ] || { echo "footprint: 503 without unprocessed_from: $out" >&2; return 1; }
        tail -n +"$from" "$f" > "$f.rest" && mv "$f.rest" "$f"
        sleep 0.02 ;;
      *) echo "footprint: the post was answered $code: $out" >&2; return 1 ;;
    esac
  done
}
# The kernel's peak (VmHWM) counts the executable's own pages, file-backed
# and shared with the page cache, beside the process's anonymous memory;
# the anonymous part's peak is sampled (every 50 ms) to tell them apart.
sampler() { local max=0 v; while kill -0 "$1" 2>/dev/null; do v=$(awk '$1 == "RssAnon:" { print $2 }' "/proc/$1/status" 2>/dev/null || true); [ -n "$v" ] && [ "$v" -gt "$max" ] && max=$v && echo "$max" > "$d/anon"; sleep 0.05; done; }
sampler $pid & spid=$! # stopped below, once the posts are in
for f in "$d"/post.*; do
  post "$f"
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
sleep 1
kill $spid 2>/dev/null; wait $spid 2>/dev/null || true
after=$(kb VmRSS); peak=$(kb VmHWM); anon=$(cat "$d/anon" 2>/dev/null || echo 0)
exe=$(awk -v f="$(readlink -f bin/ruled)" '/^[0-9a-f]+-[0-9a-f]+ /{ours = ($6 == f)} /^Rss:/ && ours { s += $2 } END { print s + 0 }' "/proc/$pid/smaps")
stop
echo "footprint: start to ready ${cold} ms cold, ${warm} ms warm (compilation cache in the data directory)"
echo "footprint: RSS idle $((idle / 1024)) MB; through $n events over HTTP NDJSON, posts of 1,000 (${ms} ms, $(( n * 1000 / (ms + 1) )) events/s, the durable rule's journal writes included): $((after / 1024)) MB after, $((peak / 1024)) MB peak"
echo "footprint: of it, anonymous memory (heap, stacks, plugins' memory and code) $((anon / 1024)) MB at its peak; the executable's own pages (file-backed, shared with the page cache) $((exe / 1024)) MB after"

# 10,000 idle rules beside one: what a rule costs when it only waits.
mkdir -p "$d/one" "$d/many"
rule() { printf -- '- id: r%s\n  on: idle.%s\n  key: vehicle\n  when: battery < 20 && !charging\n  steps:\n    - do: log.log\n      with: {message: "{{vehicle}} low"}\n' "$1" "$1"; }
rule 0 > "$d/one/rules.yaml"
for i in $(seq 1 10000); do rule "$i"; done > "$d/many/rules.yaml"
cp -r "$d/data" "$d/d1"; cp -r "$d/data" "$d/d2" # the warm compilation cache
start "$d/d1" --rules "$d/one"; sleep 2; one=$(kb VmRSS); stop
start "$d/d2" --rules "$d/many"; sleep 2; many=$(kb VmRSS); stop
echo "footprint: 10,000 idle rules: RSS $((one / 1024)) MB with one rule, $((many / 1024)) MB with 10,001: $(( (many - one) * 1024 / 10000 )) bytes a rule"
