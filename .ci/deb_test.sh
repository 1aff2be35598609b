#!/usr/bin/env bash
# make dist, then its .deb installed as an operator would: dpkg -i the
# amd64 package, `ruled version` from the PATH, the daemon started from the
# installed config as the ruled user (a rule of our own in /etc/ruled/rules
# on the packaged plugins), then the package removed (its conffiles kept)
# and purged (nothing of it left). It changes the machine, so it runs
# under CI=true or RULED_DEB_TEST=1 only, as root or with sudo.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go} .ci/dist.sh
if [ "${CI:-}" != true ] && [ "${RULED_DEB_TEST:-}" != 1 ]; then
  echo "deb test: the install skipped (it changes this machine: set RULED_DEB_TEST=1, or CI=true)"
  exit 0
fi
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo -n"
fail() { echo "deb test: $*" >&2; exit 1; }
command -v dpkg >/dev/null || fail "no dpkg: the .deb test needs a Debian-like machine"
if dpkg -s ruled >/dev/null 2>&1; then
  fail "a ruled package is installed already: remove it first (dpkg -P ruled)"
fi

deb=$(ls .build/dist/ruled_*_amd64.deb)
echo "deb test: dpkg -i $deb"
$sudo dpkg -i "$deb"
cleanup() { $sudo pkill -u ruled -x ruled 2>/dev/null || true; $sudo dpkg -P ruled >/dev/null 2>&1 || true; }
trap cleanup EXIT

v=$(ruled version) || fail "ruled version from the PATH failed"
echo "deb test: $v"
[ "$(command -v ruled)" = /usr/bin/ruled ] || fail "ruled is $(command -v ruled), not /usr/bin/ruled"
getent passwd ruled >/dev/null || fail "no ruled system user"
[ -f /lib/systemd/system/ruled.service ] && grep -q 'ExecStart=/usr/bin/ruled run --config /etc/ruled/ruled.yaml' /lib/systemd/system/ruled.service ||
  fail "the unit does not start /usr/bin/ruled on /etc/ruled/ruled.yaml"
[ "$(stat -c %U /var/lib/ruled)" = ruled ] || fail "/var/lib/ruled is not the ruled user's"

# A rule of ours, on the packaged plugins, in the installed layout.
$sudo tee /etc/ruled/rules/deb-test.yaml >/dev/null <<'RULES'
- id: deb-test
  on: deb.test
  when: n > 1
  steps:
    - do: log.log
      with: {message: "DEB TEST {{n}}"}
RULES
log=$(mktemp)
$sudo runuser -u ruled -- /usr/bin/ruled run --config /etc/ruled/ruled.yaml --http 127.0.0.1:0 >"$log" 2>&1 &
for _ in $(seq 1 300); do
  grep -q "ruled running" "$log" && break
  sleep 0.2
done
grep -q "ruled running" "$log" || { cat "$log"; fail "the installed daemon did not start"; }
status=$($sudo runuser -u ruled -- /usr/bin/ruled status --data /var/lib/ruled) || fail "ruled status: $status"
grep -q "deb-test" <<<"$status" || fail "the installed daemon has not loaded /etc/ruled/rules: $status"
$sudo runuser -u ruled -- sh -c 'printf "%s" "{\"topic\":\"deb.test\",\"n\":2}" | curl -sf --unix-socket /var/lib/ruled/ruled.sock -H "Content-Type: application/json" --data-binary @- http://ruled/v1/events' >/dev/null ||
  fail "posting an event through the socket failed"
for _ in $(seq 1 100); do
  grep -q "DEB TEST 2" "$log" && break
  sleep 0.1
done
grep -q "DEB TEST 2" "$log" || { cat "$log"; fail "the rule did not run"; }
$sudo pkill -TERM -u ruled -x ruled
for _ in $(seq 1 100); do pgrep -u ruled -x ruled >/dev/null || break; sleep 0.1; done
pgrep -u ruled -x ruled >/dev/null && fail "the daemon did not stop on SIGTERM"

$sudo rm /etc/ruled/rules/deb-test.yaml
$sudo dpkg -r ruled
[ ! -e /usr/bin/ruled ] || fail "/usr/bin/ruled is left after dpkg -r"
[ -f /etc/ruled/ruled.yaml ] || fail "dpkg -r took the config, a conffile"
$sudo dpkg -P ruled
for p in /etc/ruled /var/lib/ruled /lib/systemd/system/ruled.service; do
  [ ! -e "$p" ] || fail "$p is left after dpkg -P"
done
trap - EXIT
echo "deb test: installed, ran a rule as the ruled user from /etc/ruled, removed and purged cleanly"
