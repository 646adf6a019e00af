#!/usr/bin/env bash
# Installs what Switchboard needs to build, run and test, skipping what is already there:
# Debian/Ubuntu packages (WebKitGTK, Xvfb, D-Bus, a keyring, screenshot tools), the Rust
# toolchain check, and the npm packages of the front end (ui/package-lock.json) and of
# switchboard-tap (tap/package-lock.json).
# fonts-noto-color-emoji: emoji in proposal parameters and phone texts render as emoji, not
# boxes (WebKitGTK has no emoji font of its own); the .deb/.rpm should recommend it too
# (Debian fonts-noto-color-emoji, Fedora google-noto-color-emoji-fonts).
# strace is for tests/crash_safe_files.rs (a writer killed at each step of a write).
# python3-gi, gir1.2-gtk-3.0, gir1.2-webkit2-4.1: the empty WebKitGTK page the e2e window-memory
# measurement compares against (src-tauri/tests/e2e/empty_page.py).
# appstream, desktop-file-utils, rpm, man-db and x11-utils are for the packages
# (scripts/package.sh, scripts/check-package.sh): `appstreamcli validate` on the metainfo,
# `desktop-file-validate` on the desktop entry, `rpm -qpl` on the .rpm (the bundler itself needs
# no rpmbuild), `man` on the installed page, `xprop` on the installed app's window.
# Usage: bash scripts/install-deps.sh
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential pkg-config file libssl-dev
  libwebkit2gtk-4.1-dev libsoup-3.0-dev libjavascriptcoregtk-4.1-dev
  libayatana-appindicator3-dev librsvg2-dev librsvg2-bin libxdo-dev
  xvfb xauth webkit2gtk-driver dbus dbus-x11 fonts-dejavu-core fonts-noto-color-emoji
  gnome-keyring libsecret-1-dev libnotify-bin imagemagick xdotool
  strace
  python3-gi gir1.2-gtk-3.0 gir1.2-webkit2-4.1
  iproute2
  appstream desktop-file-utils rpm man-db x11-utils
)

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "==> installing system packages: ${missing[*]}"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
else
  echo "==> not a Debian/Ubuntu system: install the prerequisites listed in README.md yourself"
fi

command -v cargo >/dev/null 2>&1 || { echo "cargo not found: install Rust from rustup.rs" >&2; exit 1; }
command -v npm >/dev/null 2>&1 || { echo "npm not found: install Node.js 20 or newer" >&2; exit 1; }

# Every crate in Cargo.lock, for every platform (cargo fetch downloads those a build here skips,
# such as Windows' and Android's): the licence check (tests/licences.rs) reads them all with
# `cargo metadata --offline`, which failed on a new machine whose cache held only this
# platform's crates. Quick when they are already there.
echo "==> Rust crates of every platform in Cargo.lock (cargo fetch --locked)"
cargo fetch --locked --quiet

# Front-end packages: reinstall when the lock file changed since the last install.
stamp=ui/node_modules/.switchboard-lock
if [ ! -f "$stamp" ] || ! cmp -s ui/package-lock.json "$stamp"; then
  echo "==> installing front-end packages (npm ci)"
  (cd ui && npm ci --no-audit --no-fund --loglevel=error)
  cp ui/package-lock.json "$stamp"
fi

# switchboard-tap's packages (tap/package-lock.json), the same way.
stamp=tap/node_modules/.switchboard-lock
if [ ! -f "$stamp" ] || ! cmp -s tap/package-lock.json "$stamp"; then
  echo "==> installing switchboard-tap packages (npm ci in tap/)"
  (cd tap && npm ci --no-audit --no-fund --loglevel=error)
  cp tap/package-lock.json "$stamp"
fi
