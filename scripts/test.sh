#!/usr/bin/env bash
# Runs every check and test: formatting, lints, the front end's type check and unit tests, the
# Rust test suite (with the mock-runtime IPC tests, the real-window smoke test under Xvfb and the
# end-to-end user journeys driven through WebDriver: src-tauri/tests/e2e.rs), and the
# TypeScript-bindings drift check, the cross-build check (scripts/cross-check.sh: the workspace
# type-checked for Windows, the core's tests run under wine, the core type-checked for macOS),
# and the Linux packages (scripts/package.sh builds the .deb
# and .rpm; scripts/check-package.sh installs the .deb, starts the installed app from its desktop
# entry under Xvfb, runs the installed CLI and man page, and purges it: root or sudo).
# Installs what is missing first (tauri-driver too).
# Before the tests, every Rust and npm dependency's licence is checked against an allow list
# (tests/licences.rs, offline).
# Usage: bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
current="start"
step() { current="$*"; echo; echo "==> $* ($(( $(date +%s) - start ))s)"; }
trap 'echo; echo "FAILED at: $current (see the output above; fix it and run bash scripts/test.sh again)" >&2' ERR

step "installing what is missing"
bash scripts/install-deps.sh

step "WebDriver for the end-to-end journeys (tauri-driver)"
cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
export PATH="$cargo_bin:$PATH"
if ! command -v tauri-driver >/dev/null 2>&1; then
  cargo install tauri-driver --locked --version '^2'
fi

step "front end: type check"
(cd ui && npm run check --silent)
step "front end: unit tests"
(cd ui && npm test --silent)
step "front end: build"
(cd ui && npm run build --silent)

step "switchboard-tap: build and unit tests (tap/; its link test runs in cargo test: tests/network/tap_node.rs)"
(cd tap && npm test --silent && npm run test:bun --silent)

step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "licences of every Rust and npm dependency (offline; tests/licences.rs)"
cargo test -p switchboard --locked --test licences -- --nocapture

step "cargo test (unit, integration, mock runtime, real window under Xvfb, e2e journeys)"
cargo test --workspace --locked

# The full run (200 flaps, about 15 min) is `bash scripts/flap.sh`; docs/faults.md has its figures.
step "a flapping network, shortened (12 flaps in network namespaces: scripts/flap.sh --short)"
bash scripts/flap.sh --short

# The full run (8 phones x 1 000 dials/s x 10 min, release) is `bash scripts/many-phones.sh`;
# docs/faults.md has its figures.
step "many phones, shortened (4 phones x 100 dials/s x 15 s on loopback: scripts/many-phones.sh --short)"
bash scripts/many-phones.sh --short

# The packages of the dev build cargo test just made (no second build of ~630 crates: a cold
# release build on 2 busy cores took well over an hour here); what is checked, the files, the
# dependencies, the install, the launch from the desktop entry and the purge, is the same for
# every profile. People's packages come from `bash scripts/package.sh` (release).
step "packages: build the .deb and .rpm (dev build), install the .deb, start it from its desktop entry, remove it"
pkg_start=$(date +%s)
mkdir -p target
bash scripts/package.sh --profile dev --bundles deb,rpm | tee target/package-build.log
mapfile -t packages < <(grep -E '^/.*\.(deb|rpm)$' target/package-build.log)
deb=$(printf '%s\n' "${packages[@]}" | grep '\.deb$')
rpm=$(printf '%s\n' "${packages[@]}" | grep '\.rpm$')
bash scripts/check-package.sh "$deb" "$rpm"
echo "packaging took $(( $(date +%s) - pkg_start ))s"

step "Windows and macOS: the workspace type-checks for Windows, the core's tests under wine, the core type-checks for macOS (scripts/cross-check.sh)"
bash scripts/cross-check.sh --mac

step "TypeScript bindings match the Rust types"
if [ -n "$(git status --porcelain -- ui/src/bindings)" ]; then
  git status --porcelain -- ui/src/bindings
  echo "ui/src/bindings drifted from the Rust types: run cargo test and commit ui/src/bindings" >&2
  exit 1
fi

step "all checks passed"
