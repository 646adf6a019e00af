#!/usr/bin/env bash
# Many phones (docs/faults.md, "Many phones"): PHONES paired reference phones stream dials at
# RATE dials a second each for SECS seconds into one desktop, on loopback only (127.0.0.1).
#
# The desktop is the core app (link, hub, dial log in SQLite, bridge banners) run by the
# `many_phones_desk` example (examples/many_phones_desk.rs), which confirms each pairing as the
# person would and keeps state.json current. The phones are the reference phone,
# `switchboard-phone`, each with its own identity, paired one after another through the pairing
# window (address, fingerprint and code), then all started at once. Phones 1..PHONES-1 play the
# demo's successful dials; the last phone ("the troubled phone") plays every demo dial (one fails
# with the host's permission error, one with a tool error) and the probe's bridge status error,
# so it raises a bridge banner and diagnostics that must name it alone.
#
# Checked at the end (exit 1 and the reason in words when one fails):
#   - all PHONES phones were connected at once while streaming, and none reconnected;
#   - nothing lost or doubled: each phone's dials, as the history's `phone:<device> kind:dial`
#     pages list them (rows, distinct ids, none of another phone) and as dials.sqlite3 holds
#     them (rows, distinct dial ids, distinct call ids), are exactly the dials the phone played,
#     and it ended with 0 unacknowledged (the history's own count is printed; an estimate when
#     counting takes too long, judged only when exact);
#   - each phone's banners and health its own: every bridge banner and diagnostic names the
#     troubled phone, at least one banner does, only its dials have outcomes other than ok, and
#     each phone has connection events of its own in the history (none under another name);
#   - nothing leaks: the desktop's open file descriptors and threads (from /proc/PID), read after
#     the phones paired (none connected, 12 s after the last activity so the runtime's idle
#     blocking threads have ended), are back to the same within 20 s of the phones' end;
#   - memory flat after warm-up: the desktop's VmRSS, sampled every 10 s (3 s in --short), grows less than 5 %
#     from the sample at a fifth of the run (minute 2 of 10) to the last one while every phone
#     streams. In --short it is printed, not judged (too short to be past warm-up).
#
# Usage (run from the repository; loopback only, no root needed):
#   bash scripts/many-phones.sh           # the full run: 8 phones x 1000 dials/s x 600 s, release
#   bash scripts/many-phones.sh --short   # CI: 4 phones x 100 dials/s x 15 s, debug build (about 50 s)
#   options: --phones N --rate N --secs N --debug (a debug build for the full run)
#   MANY_PHONES_KEEP=1 keeps the work folder (logs, state, the history) and prints its path.
# Prints one summary line `phones=.. rate=.. ...` (the figures docs/faults.md quotes), and the
# rate each phone actually reached (dials / its play's wall time): on a loaded machine the
# phones fall behind RATE and say so.
set -euo pipefail
cd "$(dirname "$0")/.."

PHONES=8 RATE=1000 SECS=600 PROFILE=release SHORT=0 EVERY=10
while [ $# -gt 0 ]; do
  case "$1" in
    --short) SHORT=1 PHONES=4 RATE=100 SECS=15 PROFILE=debug EVERY=3 ;;
    --phones) PHONES=$2; shift ;;
    --rate) RATE=$2; shift ;;
    --secs) SECS=$2; shift ;;
    --debug) PROFILE=debug ;;
    *) echo "many-phones.sh: unknown argument $1 (--short, --phones N, --rate N, --secs N, --debug)" >&2; exit 2 ;;
  esac
  shift
done
for v in PHONES RATE SECS; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "many-phones.sh: $v must be a whole number > 0, not ${!v}" >&2; exit 2; }
done
[ "$PHONES" -ge 2 ] || { echo "many-phones.sh: needs at least 2 phones (one troubled, one not)" >&2; exit 2; }
command -v python3 > /dev/null || { echo "many-phones.sh: python3 is missing" >&2; exit 1; }
echo "==> many phones: $PHONES phones x $RATE dials/s x $SECS s ($PROFILE build)"

echo "==> building the reference phone and the desktop (examples/many_phones_desk.rs)"
FLAGS=()
[ "$PROFILE" = release ] && FLAGS=(--release)
# --workspace: the features `cargo test --workspace` resolves, so after scripts/test.sh's test
# build nothing is compiled again (with -p switchboard alone tokio, serde and the rest would be
# built a second time with other features).
cargo build -q --workspace --locked "${FLAGS[@]}" --bin switchboard-phone --example many_phones_desk
PHONE_BIN=target/$PROFILE/switchboard-phone
DESK_BIN=target/$PROFILE/examples/many_phones_desk
[ -x "$PHONE_BIN" ] && [ -x "$DESK_BIN" ] || { echo "many-phones.sh: build failed" >&2; exit 1; }

WORK=$(mktemp -d /tmp/sb-many-phones.XXXXXX)
DESK_PID=
PHONE_PIDS=()
cleanup() {
  for p in "${PHONE_PIDS[@]}"; do kill "$p" 2> /dev/null || true; done
  if [ -n "$DESK_PID" ] && kill -0 "$DESK_PID" 2> /dev/null; then
    touch "$WORK/stop"
    for _ in $(seq 1 50); do kill -0 "$DESK_PID" 2> /dev/null || break; sleep 0.2; done
    kill "$DESK_PID" 2> /dev/null || true
  fi
  if [ "${MANY_PHONES_KEEP:-}" = 1 ]; then echo "work folder kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# The scenarios: the demo's dials (scenarios/demo.jsonl), one play each; the healthy phones only
# its successful ones, the troubled phone all of them and the probe's failing bridge status.
python3 - "$WORK" << 'EOF'
import json, sys
work = sys.argv[1]
lines = [l for l in open("scenarios/demo.jsonl") if l.startswith("{")]
def kind(l): return json.loads(l)["msg"]["type"]
def outcome(l): return json.loads(l)["msg"]["payload"].get("outcome")
healthy = [l for l in lines if kind(l) == "event.phoneline.dial" and outcome(l) == "ok"]
probe = [l for l in lines if kind(l) == "event.bridge.status" and outcome(l) == "error"][:1]
troubled = [l for l in lines if kind(l) == "event.phoneline.dial" or l in probe]
assert healthy and probe and len(troubled) > len(healthy) + 1, "the demo scenario changed"
open(f"{work}/healthy.jsonl", "w").write("".join(healthy))
open(f"{work}/troubled.jsonl", "w").write("".join(troubled))
json.dump({"healthy": [len(healthy), len(healthy)],
           "troubled": [len(troubled), len(troubled) - len(probe)]},
          open(f"{work}/plays.json", "w"))
EOF
plays() { python3 -c "import json;print(json.load(open('$WORK/plays.json'))['$1'][$2])"; }
H_MSGS=$(plays healthy 0) H_DIALS=$(plays healthy 1)
T_MSGS=$(plays troubled 0) T_DIALS=$(plays troubled 1)

"$DESK_BIN" "$WORK" $((SECS * 4 + 900)) > "$WORK/desktop.log" 2>&1 &
DESK_PID=$!

state() { python3 -c "import json;s=json.load(open('$WORK/state.json'));print($1)"; }
wait_for() { # wait_for SECONDS PYTHON-CONDITION-ON-s  (s = state.json)
  local end=$((SECONDS + $1))
  while [ $SECONDS -lt $end ]; do
    if python3 -c "import json,sys;s=json.load(open('$WORK/state.json'));sys.exit(0 if ($2) else 1)" 2> /dev/null; then
      return 0
    fi
    kill -0 "$DESK_PID" 2> /dev/null || { echo "many-phones.sh: the desktop ended:" >&2; tail -20 "$WORK/desktop.log" >&2; exit 1; }
    sleep 0.2
  done
  echo "many-phones.sh: timed out waiting for: $2; state: $(cat "$WORK/state.json" 2> /dev/null)" >&2
  exit 1
}
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$DESK_PID/status"; }
fds() { find "/proc/$DESK_PID/fd" -mindepth 1 -maxdepth 1 | wc -l; }
threads() { find "/proc/$DESK_PID/task" -mindepth 1 -maxdepth 1 | wc -l; }
cpu_s() { awk '{print ($14 + $15) / 100}' "/proc/$DESK_PID/stat"; }

echo "==> pairing $PHONES phones"
touch "$WORK/pairing"
for i in $(seq 1 "$PHONES"); do
  end=$((SECONDS + 30))
  until [ -s "$WORK/invite.json" ] && [ "$(python3 -c "import json;print(json.load(open('$WORK/invite.json'))['paired'])")" = $((i - 1)) ]; do
    [ $SECONDS -lt $end ] || { echo "many-phones.sh: no pairing window for phone $i" >&2; exit 1; }
    sleep 0.1
  done
  read -r PORT FP CODE < <(python3 -c "import json;i=json.load(open('$WORK/invite.json'));print(i['port'],i['fp'],i['code'])")
  "$PHONE_BIN" --identity "$WORK/phone$i.json" --label "phone $i" --addr "127.0.0.1:$PORT" \
    --fp "$FP" --code "$CODE" --confirm-code --pair-only > "$WORK/pair$i.log" 2>&1 ||
    { echo "many-phones.sh: phone $i did not pair:" >&2; cat "$WORK/pair$i.log" >&2; exit 1; }
  wait_for 10 "len(s['phones']) == $i"
done
rm -f "$WORK/pairing"
device() { python3 -c "import json;print(json.load(open('$WORK/phone$1.json'))['device_id'])"; }

# The baseline: paired, no phone connected, the runtime's idle blocking threads ended (tokio
# keeps one 10 s).
wait_for 30 's["connected"] == 0'
sleep 12
FDS0=$(fds) THREADS0=$(threads) RSS0=$(rss_kb) CPU0=$(cpu_s)
CONNECTS0=$(state 's["connects"]') DISCONNECTS0=$(state 's["disconnects"]')
echo "    before: fds=$FDS0 threads=$THREADS0 VmRSS=$((RSS0 / 1024)) MB (paired, none connected)"

echo "==> streaming: $PHONES phones, $RATE dials/s each, $SECS s"
START=$SECONDS
for i in $(seq 1 "$PHONES"); do
  if [ "$i" = "$PHONES" ]; then SCEN=troubled MSGS=$T_MSGS DIALS=$T_DIALS; else SCEN=healthy MSGS=$H_MSGS DIALS=$H_DIALS; fi
  # Plays of the scenario enough for SECS at RATE dials/s; messages paced so the dials come at
  # RATE (the troubled phone's probe status is a message more per play).
  COUNT=$(( (SECS * RATE + DIALS - 1) / DIALS ))
  MRATE=$(python3 -c "print($RATE * $MSGS / $DIALS)")
  echo "$COUNT $DIALS" > "$WORK/expect$i"
  "$PHONE_BIN" --identity "$WORK/phone$i.json" --scenario "$WORK/$SCEN.jsonl" --rate "$MRATE/s" \
    --count "$COUNT" > "$WORK/phone$i.log" 2>&1 &
  PHONE_PIDS+=($!)
done

# Every 10 s (3 s in --short): the desktop's VmRSS and CPU, the phones connected, the dials taken in. Bounded:
# four times the run and two minutes more (a loaded machine makes the phones late, never this
# loop endless).
MAXCONN=0
PHONE_TICKS=()
STREAMING_SAMPLES=()
: > "$WORK/samples.txt"
END=$((START + SECS * 4 + 120))
NEXT=$((START + EVERY))
while :; do
  running=0
  for i in "${!PHONE_PIDS[@]}"; do
    # Each phone's CPU time (utime + stime, clock ticks) while it runs: the last reading counts.
    if read -r -a st 2> /dev/null < "/proc/${PHONE_PIDS[$i]}/stat" && [ "${st[1]}" = "(switchboard-pho)" ]; then
      running=$((running + 1))
      PHONE_TICKS[$i]=$((st[13] + st[14]))
    fi
  done
  c=$(state 's["connected"]' 2> /dev/null || echo 0)
  [ "$c" -gt "$MAXCONN" ] && MAXCONN=$c
  [ "$running" = 0 ] && break
  [ $SECONDS -lt $END ] || { echo "many-phones.sh: the phones did not finish within $((SECS * 4 + 120)) s" >&2; exit 1; }
  if [ $SECONDS -ge $NEXT ]; then
    t=$((SECONDS - START)) r=$(rss_kb) ing=$(state 's["ingested"]')
    echo "$t $r $c $ing $(cpu_s)" >> "$WORK/samples.txt"
    # Samples while every phone still streams count for the memory figure.
    [ "$running" = "$PHONES" ] && STREAMING_SAMPLES+=("$t:$r")
    [ $((t % 60)) -lt "$EVERY" ] && echo "    ${t} s: VmRSS $((r / 1024)) MB, $c connected, $ing dials taken in"
    NEXT=$((NEXT + EVERY))
  fi
  sleep 0.5
done
STREAMED=$((SECONDS - START))
echo "==> phones done after $STREAMED s"

FAIL=0
fail() { echo "FAILED: $*" >&2; FAIL=1; }
TOTAL_DIALS=0
RATES=()
for i in $(seq 1 "$PHONES"); do
  if ! wait "${PHONE_PIDS[$((i - 1))]}"; then
    fail "phone $i failed: $(grep -v SIMULATOR "$WORK/phone$i.log" | tail -5 | tr '\n' ' ')"
    continue
  fi
  REPORT=$(grep -E '^sent ' "$WORK/phone$i.log" | tail -1)
  read -r COUNT DIALS < "$WORK/expect$i"
  SECS_PLAYED=$(echo "$REPORT" | sed -E 's/^sent [0-9]+ frame\(s\) in ([0-9.]+) s.*/\1/')
  RECONNECTS=$(echo "$REPORT" | sed -E 's/.* ([0-9]+) reconnect\(s\).*/\1/')
  UNACKED=$(echo "$REPORT" | sed -E 's/.* ([0-9]+) unacknowledged.*/\1/')
  PLAYED=$((COUNT * DIALS))
  TOTAL_DIALS=$((TOTAL_DIALS + PLAYED))
  RATES+=("$(python3 -c "print(round($PLAYED / $SECS_PLAYED))")")
  [ "$UNACKED" = 0 ] || fail "phone $i ended with $UNACKED unacknowledged"
  [ "$RECONNECTS" = 0 ] || fail "phone $i reconnected $RECONNECTS times on loopback"
  echo "$(device "$i") $PLAYED $SECS_PLAYED" >> "$WORK/played.txt"
done
echo "    dials/s reached per phone: ${RATES[*]} (asked $RATE)"
PHONES_CPU_S=$(( ($(printf '%s+' "${PHONE_TICKS[@]}")0) / 100 ))
echo "    CPU time over the $STREAMED s: the phones ${PHONES_CPU_S} s together, the desktop $(python3 -c "print(round($(cpu_s) - $CPU0))") s; load average $(cut -d' ' -f1-3 /proc/loadavg)"

CPU1=$(cpu_s)
# The same counts as before once the runtime's idle blocking threads have ended (at most 10 s
# after their last use; 20 s allowed): a descriptor or thread left behind never gets there.
wait_for 60 's["connected"] == 0'
end=$((SECONDS + 20))
while :; do
  FDS1=$(fds) THREADS1=$(threads)
  { [ "$FDS1" = "$FDS0" ] && [ "$THREADS1" = "$THREADS0" ]; } || [ $SECONDS -ge $end ] && break
  sleep 0.5
done
[ "$FDS1" = "$FDS0" ] || fail "open descriptors $FDS0 before, $FDS1 after"
[ "$THREADS1" = "$THREADS0" ] || fail "threads $THREADS0 before, $THREADS1 after"
[ "$MAXCONN" = "$PHONES" ] || fail "at most $MAXCONN of $PHONES phones were connected at once"
DUPS=$(state 's["duplicates"]')
CONNECTS=$(( $(state 's["connects"]') - CONNECTS0 ))
DISCONNECTS=$(( $(state 's["disconnects"]') - DISCONNECTS0 ))
[ "$CONNECTS" = "$PHONES" ] || fail "the desktop took $CONNECTS connections for $PHONES phones (each should connect once)"
[ "$DISCONNECTS" = "$PHONES" ] || fail "the desktop saw $DISCONNECTS of its $PHONES connections end"
cp "$WORK/state.json" "$WORK/state-end.json"

# Memory: from the sample at a fifth of the run (the warm-up: minute 2 of 10) to the last one
# taken while every phone streamed.
MEM=$(python3 - "$SECS" "${STREAMING_SAMPLES[@]}" << 'EOF'
import sys
secs = int(sys.argv[1])
s = [tuple(map(int, a.split(":"))) for a in sys.argv[2:]]
warm = [x for x in s if x[0] >= secs / 5]
if len(warm) < 2:
    print("none 0 0 0 0")
else:
    (t0, r0), (t1, r1) = warm[0], warm[-1]
    print(f"{(r1 - r0) * 100 / r0:.1f} {t0} {r0 // 1024} {t1} {r1 // 1024}")
EOF
)
read -r GROWTH MEM_T0 MEM_R0 MEM_T1 MEM_R1 <<< "$MEM"
PEAK_MB=$(( $(awk '{print $2}' "$WORK/samples.txt" | sort -n | tail -1) / 1024 ))
if [ "$GROWTH" = none ]; then
  [ "$SHORT" = 1 ] || fail "too few memory samples while every phone streamed"
  echo "    memory: too few samples after warm-up to say"
else
  echo "    VmRSS ${MEM_R0} MB at ${MEM_T0} s, ${MEM_R1} MB at ${MEM_T1} s: ${GROWTH} % (peak ${PEAK_MB} MB)"
  if [ "$SHORT" = 0 ] && python3 -c "import sys;sys.exit(0 if $GROWTH >= 5 else 1)"; then
    fail "VmRSS grew ${GROWTH} % from ${MEM_T0} s to ${MEM_T1} s (at most 5 %)"
  fi
fi

echo "==> counting each phone's dials (history, then dials.sqlite3 after shutdown)"
touch "$WORK/finish"
end=$((SECONDS + SECS * 2 + 300))
while [ ! -s "$WORK/final.json" ]; do
  [ $SECONDS -lt $end ] || { echo "many-phones.sh: the desktop wrote no final.json" >&2; tail -20 "$WORK/desktop.log" >&2; exit 1; }
  kill -0 "$DESK_PID" 2> /dev/null || { echo "many-phones.sh: the desktop ended without final.json:" >&2; tail -20 "$WORK/desktop.log" >&2; exit 1; }
  sleep 0.5
done
wait "$DESK_PID" || fail "the desktop exited with an error: $(tail -3 "$WORK/desktop.log" | tr '\n' ' ')"
DESK_PID=

TROUBLED=$(device "$PHONES")
if ! python3 - "$WORK" "$TROUBLED" << 'EOF'
import json, sys
work, troubled = sys.argv[1], sys.argv[2]
final = json.load(open(f"{work}/final.json"))
end = json.load(open(f"{work}/state-end.json"))
ok = True
def bad(why):
    global ok
    ok = False
    print(f"FAILED: {why}", file=sys.stderr)
played = {}
for line in open(f"{work}/played.txt"):
    dev, n, _ = line.split()
    played[dev] = int(n)
for dev, n in played.items():
    st = final["stored"].get(dev, {"rows": 0, "distinct_ids": 0, "distinct_calls": 0, "not_ok": 0})
    if not (st["rows"] == st["distinct_ids"] == st["distinct_calls"] == n):
        bad(f"{dev}: played {n} dials; stored {st['rows']} rows, {st['distinct_ids']} distinct ids, "
            f"{st['distinct_calls']} distinct call ids (lost or doubled)")
    h = final["history"].get(dev, {})
    if not (h.get("rows") == h.get("distinct_ids") == n) or h.get("other_phones") != 0:
        bad(f"{dev}: played {n} dials; the history's `phone:{dev} kind:dial` pages hold {h.get('rows')} rows, "
            f"{h.get('distinct_ids')} distinct ids, {h.get('other_phones')} of another phone")
    if h.get("exact") and h.get("count") != n:
        bad(f"{dev}: the history counts {h.get('count')} dials (exact), played {n}")
    print(f"{dev}: played {n}; history {h.get('rows')} rows in {h.get('pages')} pages ({h.get('ms')} ms), "
          f"its count {h.get('count')} ({'exact' if h.get('exact') else 'estimate'}); stored {st['rows']}, not ok {st['not_ok']}")
    if dev == troubled and st["not_ok"] == 0:
        bad(f"the troubled phone {dev} has no failed dial stored")
    if dev != troubled and st["not_ok"] != 0:
        bad(f"{dev} has {st['not_ok']} failed dials stored; only the troubled phone's dials fail")
events = final["connection_events"]
for dev in played:
    if not events.get(dev):
        bad(f"{dev} has no connection event of its own in the history")
if set(events) - set(played):
    bad(f"connection events under phones that did not connect: {sorted(set(events) - set(played))}")
others = set(final["stored"]) - set(played)
if others:
    bad(f"dials stored under phones that did not play: {sorted(others)}")
banners = {b["phone"] for b in end["banners"]}
diags = {d["phone"] for d in end["diagnostics"]}
if troubled not in banners:
    bad(f"the troubled phone {troubled} raised no bridge banner: {end['banners']}")
if banners - {troubled}:
    bad(f"bridge banners name phones whose calls never failed: {sorted(banners - {troubled})}")
if diags - {troubled}:
    bad(f"diagnostics name phones whose calls never failed: {sorted(diags - {troubled})}")
print(f"history index caught up {final['index_caught_up_ms'] / 1000:.1f} s after the phones ended; desktop shutdown {final['shutdown_ms']} ms")
print(f"banners={len(end['banners'])} (phones named: {len(banners)}) diagnostics={len(end['diagnostics'])} (phones named: {len(diags)})")
sys.exit(0 if ok else 1)
EOF
then FAIL=1; fi

RATE_MIN=$(printf '%s\n' "${RATES[@]}" | sort -n | head -1)
RATE_MAX=$(printf '%s\n' "${RATES[@]}" | sort -n | tail -1)
DESK_CPU=$(python3 -c "print(round(($CPU1 - $CPU0) / $STREAMED * 100))")
echo "phones=$PHONES rate_asked=$RATE secs=$SECS streamed_s=$STREAMED dials_per_s_per_phone=${RATE_MIN}-${RATE_MAX} dials=$TOTAL_DIALS duplicates_dropped=$DUPS connects=$CONNECTS disconnects=$DISCONNECTS max_connected=$MAXCONN desk_cpu=${DESK_CPU}% vmrss_mb=$((RSS0 / 1024))->${MEM_R0:-?}@${MEM_T0:-?}s->${MEM_R1:-?}@${MEM_T1:-?}s growth=${GROWTH}% peak_mb=$PEAK_MB fds=$FDS0->$FDS1 threads=$THREADS0->$THREADS1"
[ "$FAIL" = 0 ] || exit 1
echo "==> many phones: passed"
