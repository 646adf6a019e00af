#!/usr/bin/env bash
# Runs the performance measurements (release builds) and ends with one `key=value` a line, the
# keys docs/performance.md describes, so runs can be compared:
#   ingest_vs_bare, p99_vs_bare          cargo bench -p switchboard --bench live_dials
#   tray_rss_vs_core, tray_rss_growth_pct, reopen_first_paint_ms,
#   idle_cpu_pct_tray, idle_cpu_pct_window, idle_wakeups_per_s
#                                        cargo bench -p switchboard-desktop --bench tray
#                                        (Xvfb, dbus-daemon, xdotool: scripts/install-deps.sh)
#   dial_to_pixel_p99_ms                 not measured by this script yet
# Each bench's own output is kept in target/bench/. About 15 minutes with the builds done;
# the release builds of a fresh clone take 20-40 minutes more on 2 cores.
# Usage: bash scripts/bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/bench
mkdir -p "$out"

echo "==> front end (ui/dist, embedded in the app)"
(cd ui && npm run build --silent)

echo "==> cargo bench -p switchboard --bench live_dials"
cargo bench --locked -p switchboard --bench live_dials 2>&1 | tee "$out/live_dials.txt"

echo "==> cargo bench -p switchboard-desktop --bench tray"
cargo bench --locked -p switchboard-desktop --bench tray 2>&1 | tee "$out/tray.txt"

# live_dials' table: the ratio row's first number, and the latency ratio over the pairs.
ingest=$(awk '/^ratio desktop \(stored\) \/ bare/ { for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.]+$/) { print $i; exit } }' "$out/live_dials.txt")
p99=$(awk '/latency p99 desktop \/ bare \(/ { sub(/.*pairs\)/, ""); for (i = 1; i <= NF; i++) if ($i ~ /^[0-9.]+$/) { print $i; exit } }' "$out/live_dials.txt")

echo
echo "ingest_vs_bare=${ingest:-not measured}"
echo "p99_vs_bare=${p99:-not measured}"
for key in tray_rss_vs_core tray_rss_growth_pct reopen_first_paint_ms idle_cpu_pct_tray \
  idle_cpu_pct_window idle_wakeups_per_s; do
  value=$(grep -E "^$key=" "$out/tray.txt" | tail -n1 | cut -d= -f2-)
  echo "$key=${value:-not measured}"
done
echo "dial_to_pixel_p99_ms=not measured"
