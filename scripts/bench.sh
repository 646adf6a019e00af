#!/usr/bin/env bash
# Runs the performance measurements (release builds) and ends with one `key=value` a line, the
# keys docs/performance.md describes, so runs can be compared:
#   ingest_vs_bare, p99_vs_bare          cargo bench -p switchboard --bench live_dials
#   tray_rss_vs_core, tray_rss_growth_pct, reopen_first_paint_ms,
#   idle_cpu_pct_tray, idle_cpu_pct_window, idle_wakeups_per_s
#                                        cargo bench -p switchboard-desktop --bench tray
#                                        (Xvfb, dbus-daemon, xdotool: scripts/install-deps.sh)
#   dial_to_pixel_p99_ms                 cargo test --release -p switchboard-desktop --test e2e
#                                        dial_to_pixel -- --ignored (WebDriver: tauri-driver,
#                                        WebKitWebDriver, gnome-keyring; the phone it pairs,
#                                        switchboard-phone, built first)
# Each bench's own output is kept in target/bench/. About 17 minutes with the builds done;
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

echo "==> dial to pixel (release app, WebDriver, the reference phone at 100 and 1 000 dials/s)"
cargo build --locked --release -p switchboard --bin switchboard-phone
# Drawn as the app draws by default (no accelerated compositing).
WEBKIT_DISABLE_COMPOSITING_MODE=1 cargo test --locked --release -p switchboard-desktop --test e2e \
  dial_to_pixel -- --ignored --nocapture 2>&1 | tee "$out/dial_to_pixel.txt"

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
value=$(grep -E "^dial_to_pixel_p99_ms=" "$out/dial_to_pixel.txt" | tail -n1 | cut -d= -f2-)
echo "dial_to_pixel_p99_ms=${value:-not measured}"
