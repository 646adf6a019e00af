#!/usr/bin/env bash
# A flapping network (docs/faults.md, "A flapping network"): the phone's link taken down and up
# FLAPS times while it streams dials, with random gaps, in two network namespaces joined by a
# veth pair (documentation addresses 192.0.2.1 desktop, 192.0.2.2 phone; nothing else is ever a
# target). At each drop the phone's sockets are destroyed (`ss -K`), as a phone's system does
# when its Wi-Fi goes: the phone notices at once and reconnects once the link is back.
#
# The desktop is the core app (link, hub, dial log in SQLite) run by the `netns` test binary's
# `app_desktop_in_namespace` role, which writes its state (dials held, duplicates dropped, the
# hub's connected/disconnected notices, its own open file descriptors and threads from
# /proc/self) to state.json every 100 ms. The phone is the reference phone,
# `switchboard-phone`, which keeps what is not acknowledged and replays it after a reconnect.
#
# Checked at the end (exit 1 and the reason when one fails):
#   - every drop was seen and every reconnect made: a drop is a live connection destroyed at a
#     flap (`ss -K` counts them; a flap while the phone is still reconnecting has none, one that
#     hits a connection still in TLS or hello costs a try of the same reconnect); the phone
#     reconnected at most once per drop, the desktop took every connection the phone used (and
#     at most one per drop), and saw every one of them end;
#   - nothing lost or doubled: every dial the phone played is held once (held = dials played,
#     and nothing more arrived in the last second), the phone ends with 0 unacknowledged;
#   - nothing leaks: the desktop's open file descriptors and threads, read after the phone
#     paired and again after the flaps and its scenario (both times not connected, 12 s after
#     the last activity so the runtime's idle blocking threads have ended), are the same.
#
# Usage (root; `ip` from iproute2 with `ss`; run from the repository):
#   bash scripts/flap.sh            # the full run: 200 flaps, gaps 50 ms-3 s (about 10 min)
#   bash scripts/flap.sh --short    # CI: 12 flaps, down 50-600 ms, up 1.5-3 s (about a minute)
#   FLAP_SEED=42 bash scripts/flap.sh   # repeat a run's gaps
# Prints one summary line `flaps=.. reconnects=.. ...` (the figures docs/faults.md quotes).
set -euo pipefail
cd "$(dirname "$0")/.."

# Gaps: how long the link stays down, then up, each drawn uniformly from its range.
FLAPS=200
DOWN_MIN_MS=50 DOWN_MAX_MS=3000 UP_MIN_MS=50 UP_MAX_MS=3000
if [ "${1:-}" = "--short" ]; then
  # Up long enough for the phone to be back before the next drop, so each flap drops a live
  # connection (with short up gaps the phone is often still backing off between tries).
  FLAPS=12
  DOWN_MAX_MS=600 UP_MIN_MS=1500
fi
SEED=${FLAP_SEED:-$RANDOM}
echo "==> flap: $FLAPS flaps, down ${DOWN_MIN_MS}-${DOWN_MAX_MS} ms, up ${UP_MIN_MS}-${UP_MAX_MS} ms, FLAP_SEED=$SEED"

if [ "$(id -u)" != 0 ]; then
  echo "flap.sh: needs root (network namespaces)" >&2
  exit 1
fi
for tool in ip ss python3; do
  command -v "$tool" > /dev/null || { echo "flap.sh: $tool is missing" >&2; exit 1; }
done

echo "==> building the netns test binary and the reference phone"
# The test build of the whole workspace (--workspace: every member's features, as
# `cargo test --workspace` resolves them; scripts/test.sh has built that already, so nothing is
# compiled again). An integration test's build makes its package's bins: the reference phone too.
# Tried up to three times: CI runs this beside `cargo test --workspace`, and a cargo call that
# meets the other's build of the same artifacts has once come back without the executable.
# The last try's errors are printed.
PHONE_BIN=target/debug/switchboard-phone
NETNS_BIN=
BUILD_LOG=$(mktemp /tmp/sb-flap-build.XXXXXX)
for try in 1 2 3; do
  NETNS_BIN=$(cargo test -q --workspace --locked --test netns --no-run --message-format=json 2> "$BUILD_LOG" |
    python3 -c 'import json,sys
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m["target"]["name"]=="netns" and m.get("executable"):
        print(m["executable"])')
  [ -x "$NETNS_BIN" ] && [ -x "$PHONE_BIN" ] && break
  echo "flap.sh: build try $try of 3 gave no netns test binary or reference phone" >&2
  sleep 5
done
if ! { [ -x "$NETNS_BIN" ] && [ -x "$PHONE_BIN" ]; }; then
  cat "$BUILD_LOG" >&2
  rm -f "$BUILD_LOG"
  echo "flap.sh: build failed" >&2
  exit 1
fi
rm -f "$BUILD_LOG"

D=sbflap$$d
P=sbflap$$p
WORK=$(mktemp -d /tmp/sb-flap.XXXXXX)
DESK_PID=
cleanup() {
  [ -n "$DESK_PID" ] && { touch "$WORK/stop"; sleep 2; kill "$DESK_PID" 2> /dev/null || true; }
  ip netns del "$D" 2> /dev/null || true
  ip netns del "$P" 2> /dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

ip netns add "$D"
ip netns add "$P"
ip -n "$D" link set lo up
ip -n "$P" link set lo up
ip link add sbf$$d netns "$D" type veth peer name sbf$$p netns "$P"
ip -n "$D" link set sbf$$d name eth0
ip -n "$P" link set sbf$$p name wlan0
ip -n "$D" addr add 192.0.2.1/24 dev eth0
ip -n "$P" addr add 192.0.2.2/24 dev wlan0
ip -n "$D" link set eth0 up
ip -n "$P" link set wlan0 up

# Long enough for the full run and the replay after it (the role ends at `stop` anyway).
SWITCHBOARD_NETNS_APP_DIR=$WORK SWITCHBOARD_NETNS_APP_SECS=$((FLAPS * 8 + 300)) \
  ip netns exec "$D" "$NETNS_BIN" --exact app_desktop_in_namespace --nocapture --test-threads=1 \
  > "$WORK/desktop.log" 2>&1 &
DESK_PID=$!

state() { python3 -c "import json;print(json.load(open('$WORK/state.json'))$1)" 2> /dev/null; }
wait_for() { # wait_for SECONDS PYTHON-CONDITION-ON-s  (s = state.json)
  local end=$((SECONDS + $1))
  while [ $SECONDS -lt $end ]; do
    if python3 -c "import json,sys;s=json.load(open('$WORK/state.json'));sys.exit(0 if ($2) else 1)" 2> /dev/null; then
      return 0
    fi
    sleep 0.2
  done
  echo "flap.sh: timed out waiting for: $2; state: $(cat "$WORK/state.json" 2> /dev/null)" >&2
  return 1
}

for _ in $(seq 1 150); do [ -s "$WORK/invite.json" ] && break; sleep 0.2; done
LINK=$(python3 -c "import json;print(json.load(open('$WORK/invite.json'))['link'])")
ip netns exec "$P" "$PHONE_BIN" --identity "$WORK/phone.json" --link "$LINK" --confirm-code \
  --pair-only > "$WORK/pair.log" 2>&1 || { cat "$WORK/pair.log" >&2; exit 1; }

# The baseline: paired, the pairing connection gone, the runtime's idle blocking threads ended
# (tokio keeps one 10 s).
wait_for 30 'not s["connected_now"]'
sleep 12
FDS0=$(state '["fds"]')
THREADS0=$(state '["threads"]')
CONNECTS0=$(state '["connects"]')
DISCONNECTS0=$(state '["disconnects"]')
echo "==> before: fds=$FDS0 threads=$THREADS0 (paired, not connected)"

# The built-in scenario is 40 messages (13 dials); at 20 messages a second, enough repetitions
# to outlast the flaps (the two gaps of a flap and its commands, about 0.6 s on a quiet machine
# but over 2 s at load 6, where 12 flaps outlasted a phone given a third more: so twice).
RATE=20
COUNT=$(( FLAPS * ((DOWN_MIN_MS + DOWN_MAX_MS + UP_MIN_MS + UP_MAX_MS) / 2 + 600) * RATE * 2 / 1000 / 40 + 2 ))
ip netns exec "$P" "$PHONE_BIN" --identity "$WORK/phone.json" --rate "$RATE/s" --count "$COUNT" \
  > "$WORK/phone.log" 2>&1 &
PHONE_PID=$!
wait_for 30 's["connected_now"] and s["ingested"] >= 3'

gap() { # gap STEP MIN_MS MAX_MS: seconds, the same for the same FLAP_SEED
  python3 -c "import random;random.seed($SEED*1000+$1);print(random.randint($2,$3)/1000)"
}
DROPS=0
for i in $(seq 1 "$FLAPS"); do
  ip -n "$P" link set wlan0 down
  # The phone's system drops its connections with the network (no FIN reaches the desktop). A
  # drop is a live connection destroyed; a flap while the phone is still reconnecting from the
  # last one has none.
  KILLED=$(ip netns exec "$P" ss -K -H state established dst 192.0.2.1 2> /dev/null | grep -c . || true)
  DROPS=$((DROPS + KILLED))
  sleep "$(gap $((2 * i)) $DOWN_MIN_MS $DOWN_MAX_MS)"
  ip -n "$P" link set wlan0 up
  sleep "$(gap $((2 * i + 1)) $UP_MIN_MS $UP_MAX_MS)"
  kill -0 "$PHONE_PID" 2> /dev/null || { echo "flap.sh: the phone ended (or failed) at flap $i, before the flaps did:" >&2; grep -v "desktop refused" "$WORK/phone.log" >&2; exit 1; }
  [ $((i % 20)) = 0 ] && echo "    $i flaps, held $(state '["held"]'), connects $(state '["connects"]')"
done
echo "==> flaps done; waiting for the phone to finish its scenario"
END=$((SECONDS + COUNT * 2 + 120))
while kill -0 "$PHONE_PID" 2> /dev/null; do
  [ $SECONDS -lt $END ] || { echo "flap.sh: the phone did not finish" >&2; exit 1; }
  sleep 0.5
done
wait "$PHONE_PID" || { echo "flap.sh: the phone failed:" >&2; cat "$WORK/phone.log" >&2; exit 1; }
REPORT=$(grep -E '^sent ' "$WORK/phone.log" | tail -1)
echo "    phone: $REPORT"
RECONNECTS=$(echo "$REPORT" | sed -E 's/.* ([0-9]+) reconnect\(s\).*/\1/')
UNACKED=$(echo "$REPORT" | sed -E 's/.* ([0-9]+) unacknowledged.*/\1/')
DIALS=$((COUNT * 13))

# The phone closed at its end: the desktop settles (and its idle blocking threads end), then
# the figures are read, with the phone not connected as at the baseline.
wait_for 60 "s['held'] == $DIALS and not s['connected_now']"
sleep 12
HELD=$(state '["held"]')
INGESTED=$(state '["ingested"]')
DUPS=$(state '["duplicates"]')
CONNECTS=$(state '["connects"]')
DISCONNECTS=$(state '["disconnects"]')
FDS1=$(state '["fds"]')
THREADS1=$(state '["threads"]')

FAIL=0
check() { if ! eval "$1"; then echo "FAILED: $2" >&2; FAIL=1; fi; }
check '[ "$DROPS" -gt 0 ]' "no connection was dropped (ss -K destroyed none)"
# A drop can hit a connection the phone is still setting up (TLS, hello): that is a failed try
# of the same reconnect, not a new one. So: at most one reconnect per drop, and the desktop took
# at least every connection the phone ended up using (the first, then one per reconnect) and no
# more than one per drop.
CONNS=$((CONNECTS - CONNECTS0))
ENDS=$((DISCONNECTS - DISCONNECTS0))
check '[ "$RECONNECTS" -ge 1 ] && [ "$RECONNECTS" -le "$DROPS" ]' "the phone reconnected $RECONNECTS times for $DROPS drops"
check '[ "$CONNS" -ge $((RECONNECTS + 1)) ] && [ "$CONNS" -le $((DROPS + 1)) ]' "the desktop took $CONNS connections for $RECONNECTS reconnects and $DROPS drops"
# Every connection the desktop took was seen to end: dropped ones when the phone's next hello
# replaced them (or by the 45 s silence), the last one when the phone closed at its end.
check '[ "$ENDS" = "$CONNS" ]' "the desktop saw $ENDS of its $CONNS connections end"
check '[ "$UNACKED" = 0 ]' "the phone ended with $UNACKED unacknowledged"
check '[ "$HELD" = "$DIALS" ] && [ "$INGESTED" = "$DIALS" ]' "held $HELD, ingested $INGESTED, played $DIALS (lost or doubled)"
check '[ "$THREADS1" = "$THREADS0" ]' "threads $THREADS0 before, $THREADS1 after"
check '[ "$FDS1" = "$FDS0" ]' "open descriptors $FDS0 before, $FDS1 after"

echo "flaps=$FLAPS seed=$SEED drops=$DROPS reconnects=$RECONNECTS hub_connects=$CONNS hub_disconnects=$ENDS dials=$DIALS held=$HELD duplicates_dropped=$DUPS unacked=$UNACKED fds=$FDS0->$FDS1 threads=$THREADS0->$THREADS1"
[ "$FAIL" = 0 ] || exit 1
echo "==> flap: passed"
