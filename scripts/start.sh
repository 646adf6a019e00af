#!/usr/bin/env bash
# Installs what is missing, builds Switchboard and opens it on its built-in demo phone.
# Usage: bash scripts/start.sh [extra app arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
echo "==> building the front end"
(cd ui && npm run build --silent)
echo "==> building Switchboard and its command line (the first build takes a few minutes)"
cargo build -p switchboard-desktop -p switchboard --bin switchboard-desktop --bin switchboard
cli="${CARGO_TARGET_DIR:-target}/debug/switchboard"
echo "    the command line is $cli: while the app runs, try"
echo "    $cli status   (or: phones, pair, bundle; --help lists them all)"
echo "==> starting Switchboard on its demo phone"
if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ] && [ "$(uname)" = "Linux" ]; then
  echo "    no display found: running inside a virtual X server (xvfb-run), where the window is not"
  echo "    visible. To see it, run this from a desktop session (or over ssh -X), or start your own"
  echo "    X server and point DISPLAY at it: Xvfb :1 -screen 0 1280x800x24 & DISPLAY=:1 bash scripts/start.sh"
  echo "    (a screenshot then: DISPLAY=:1 import -window root shot.png, with ImageMagick). Ctrl+C stops Switchboard."
  exec xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- cargo run -p switchboard-desktop -- --demo "$@"
fi
exec cargo run -p switchboard-desktop -- --demo "$@"
