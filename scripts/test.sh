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
#
# How it is kept under 20 minutes on a fresh clone on 2 cores (docs/performance.md, "CI run
# time"; the table printed at the end gives each stage's seconds):
#  - one Linux build: clippy runs as the compiler of the workspace's own crates while the tests
#    are built (clippy-driver as RUSTC_WORKSPACE_WRAPPER, -D warnings, every target clippy's
#    --all-targets covers), so the ~700 dependencies are compiled once, not once checked for
#    clippy and once built for the tests; every later cargo command here (the licence test,
#    flap.sh, many-phones.sh, package.sh) asks for the same packages and features, so none of
#    them compiles anything again;
#  - the Windows and macOS check (its own toolchain and target-win/) runs in the background from
#    before the Linux build, at a lower priority, so it uses the cores the Linux stages leave
#    idle (the tests' waits, the network namespaces, the package's start); its output is printed
#    at the end and its failure fails the run;
#  - what mostly waits runs beside what computes: tauri-driver compiles while apt downloads, and
#    the shortened flapping-network and many-phones runs go beside the test programs;
#  - CARGO_INCREMENTAL=0: a fresh clone compiles each crate once; incremental data is only
#    written, never used.
# Usage: bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
current="start"
stage_start=$start
stage_names=() stage_secs=() stage_cpus=()
cross_pid="" driver_pid="" faults_pid="" tools_pid=""
# CPU seconds used so far by this script and every program it waited for (/proc: utime, stime,
# cutime, cstime): on a machine shared with other work the wall times stretch, these do not much.
cpu() {
  local f
  read -r -a f < "/proc/$$/stat"
  echo $(((f[13] + f[14] + f[15] + f[16]) / $(getconf CLK_TCK)))
}
stage_cpu=0
step() {
  local now c
  now=$(date +%s) c=$(cpu)
  if [ "$current" != start ]; then
    stage_names+=("$current") stage_secs+=($((now - stage_start))) stage_cpus+=($((c - stage_cpu)))
  fi
  current="$*" stage_start=$now stage_cpu=$c
  echo; echo "==> $* ($((now - start))s; cpu ${c}s; load $(cut -d' ' -f1-3 /proc/loadavg))"
}
# Each stage's wall time, the background cross-check's own steps beside them.
table() {
  local i
  echo
  echo "==> time per stage (wall seconds, CPU seconds; load at the end $(cut -d' ' -f1-3 /proc/loadavg))"
  printf '%6s %6s  %s\n' wall cpu stage
  for i in "${!stage_names[@]}"; do
    printf '%6s %6s  %s\n' "${stage_secs[$i]}" "${stage_cpus[$i]}" "${stage_names[$i]}"
  done
  if [ "$current" != "all checks passed" ]; then
    printf '%6s %6s  %s (unfinished)\n' "$(($(date +%s) - stage_start))" "$(($(cpu) - stage_cpu))" "$current"
  fi
  printf '%6s %6s  total\n' "$(($(date +%s) - start))" "$(cpu)"
  if [ -s target/cross-check.log ]; then
    echo "  in the background from the stage named so (its CPU counts where it was waited for),"
    echo "  scripts/cross-check.sh's steps (start second, its CPU so far):"
    grep -E '^==> ' target/cross-check.log | sed 's/^==> /        /'
  fi
}
on_exit() {
  local rc=$?
  [ -z "$driver_pid" ] || kill -TERM "$driver_pid" 2>/dev/null || true
  [ -z "$faults_pid" ] || kill -TERM -- "-$faults_pid" 2>/dev/null || true
  # An apt-get left half done would hold dpkg's lock: let the tools' install end by itself.
  [ -z "$tools_pid" ] || wait "$tools_pid" 2>/dev/null || true
  # Never leave the background check running past this script, whatever ended it.
  if [ -n "$cross_pid" ] && kill -0 "$cross_pid" 2>/dev/null; then
    kill -TERM -- "-$cross_pid" 2>/dev/null || kill -TERM "$cross_pid" 2>/dev/null || true
    echo "stopped the background Windows and macOS check (its output so far: target/cross-check.log)" >&2
  fi
  table
  exit "$rc"
}
trap on_exit EXIT
trap 'echo; echo "FAILED at: $current (see the output above; fix it and run bash scripts/test.sh again)" >&2' ERR
export CARGO_INCREMENTAL=0

step "installing what is missing"
bash scripts/install-deps.sh

mkdir -p target
cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
export PATH="$cargo_bin:$PATH"
# tauri-driver compiles (a minute of CPU) while apt downloads the cross-check's tools (in the
# background too, below): neither waits for the other.
driver_pid=""
if ! command -v tauri-driver >/dev/null 2>&1; then
  cargo install tauri-driver --locked --version '^2' > target/tauri-driver-install.log 2>&1 &
  driver_pid=$!
fi

step "Windows and macOS: tools installing in the background (scripts/cross-check.sh --install-only; output in target/cross-tools.log)"
# On a fresh machine these apt packages (Debian's Rust with its sources, mingw-w64's x86_64 C
# compiler, wine: about 1.4 GB unpacked) take minutes of downloading and unpacking that need
# neither the front end's checks nor the Linux build, which go on meanwhile. The background
# check waits for them (it starts later, and installs only zig, from PyPI); check-package.sh's
# apt-get must not run beside them, so this script waits for them before the packages stage.
rm -f target/cross-tools.rc
( if bash scripts/cross-check.sh --mac --install-only > target/cross-tools.log 2>&1; then
    echo 0 > target/cross-tools.rc
  else
    echo 1 > target/cross-tools.rc
  fi ) &
tools_pid=$!

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

step "Windows and macOS: started in the background (scripts/cross-check.sh --mac; output in target/cross-check.log, printed at the end)"
# After the front end's build: the shell's build embeds ui/dist, which must not change under it.
# Its own session (setsid), so it can be stopped whole. With the kernel's autogroup scheduling (on
# in Debian's kernels) each session gets an equal share of the CPU whatever its nice (the nice
# orders the check's own programs only): the Linux stages and this check split the two cores
# while both want them, and either takes both while the other waits (the tests' timeouts, the
# network namespaces, wine). The timing-sensitive tests passed beside it (docs/performance.md).
# It waits for the tools' install above (an hour at most), then runs.
setsid -w nice -n 10 bash -c 'for _ in $(seq 3600); do [ -s target/cross-tools.rc ] && break; sleep 1; done
  cat target/cross-tools.log
  [ "$(cat target/cross-tools.rc 2>/dev/null)" = 0 ] ||
    { echo "installing the Windows and macOS tools failed or did not end (above)" >&2; exit 1; }
  exec bash scripts/cross-check.sh --mac' > target/cross-check.log 2>&1 &
cross_pid=$!

step "WebDriver for the end-to-end journeys (tauri-driver: waiting for its install)"
if [ -n "$driver_pid" ]; then
  if ! wait "$driver_pid"; then
    cat target/tauri-driver-install.log
    echo "installing tauri-driver failed (above)" >&2
    false
  fi
  driver_pid=""
fi
command -v tauri-driver >/dev/null || { echo "tauri-driver is not on PATH after its install" >&2; exit 1; }

# From here on every cargo command compiles the workspace's crates with clippy-driver (the lints
# of `cargo clippy -- -D warnings`); flap.sh, many-phones.sh and package.sh inherit it, so they
# find everything built. (cross-check.sh, with Debian's compiler, drops these two.)
clippy_driver=$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver) ||
  { echo "clippy-driver not found: rustup component add clippy" >&2; exit 1; }
export RUSTC_WORKSPACE_WRAPPER="$clippy_driver"
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
step "cargo clippy -D warnings, as the tests are built (lib, bins, tests, examples, benches of every crate: what clippy --all-targets covers)"
cargo test --workspace --locked --no-run
cargo test --workspace --locked --benches --no-run

step "licences of every Rust and npm dependency (offline; tests/licences.rs)"
cargo test --workspace --locked --test licences -- --nocapture

# The flapping network and the many phones run beside the test programs: both mostly wait (the
# link's gaps, the phones' pace) and need nothing of theirs (their own network namespaces, and
# loopback ports the system picks; the e2e journeys' fixed port is the app's, which neither
# starts). Their cargo calls find everything built (cargo holds its lock while it builds, not
# while tests run). Their output is printed when the tests end; their failure fails the run.
# The full runs: `bash scripts/flap.sh` (200 flaps, about 15 min) and `bash scripts/many-phones.sh`
# (8 phones x 1 000 dials/s x 10 min, release); docs/faults.md has their figures.
step "a flapping network (12 flaps in network namespaces: scripts/flap.sh --short) and many phones (4 phones x 100 dials/s x 15 s on loopback: scripts/many-phones.sh --short), in the background"
# Its own session, as the cross-check's, so it can be stopped whole (flap.sh removes its
# namespaces when stopped).
setsid -w bash -c 'set -e
  echo "==> a flapping network, shortened (scripts/flap.sh --short)"
  bash scripts/flap.sh --short
  echo "==> many phones, shortened (scripts/many-phones.sh --short)"
  bash scripts/many-phones.sh --short' > target/flap-many-phones.log 2>&1 &
faults_pid=$!

step "cargo test (unit, integration, mock runtime, real window under Xvfb, e2e journeys)"
cargo test --workspace --locked

step "a flapping network and many phones (waiting for them)"
if wait "$faults_pid"; then faults_rc=0; else faults_rc=$?; fi
faults_pid=""
cat target/flap-many-phones.log
if [ "$faults_rc" != 0 ]; then
  echo "the flapping network or the many phones failed (exit $faults_rc; output above, target/flap-many-phones.log)" >&2
  false
fi

# The packages of the dev build cargo test just made (nothing compiled again: package.sh's dev
# build is `cargo test --workspace --no-run`, and the front end is the one built above; a cold
# release build on 2 busy cores took well over an hour here); what is checked, the files, the
# dependencies, the install, the launch from the desktop entry and the purge, is the same for
# every profile. People's packages come from `bash scripts/package.sh` (release).
step "packages: build the .deb and .rpm (dev build), install the .deb, start it from its desktop entry, remove it"
# apt-get runs below: the background install of the cross-check's tools must have ended.
if [ -n "$tools_pid" ]; then
  wait "$tools_pid" || true
  tools_pid=""
fi
pkg_start=$(date +%s)
mkdir -p target
bash scripts/package.sh --profile dev --bundles deb,rpm --front-end-built | tee target/package-build.log
mapfile -t packages < <(grep -E '^/.*\.(deb|rpm)$' target/package-build.log)
deb=$(printf '%s\n' "${packages[@]}" | grep '\.deb$')
rpm=$(printf '%s\n' "${packages[@]}" | grep '\.rpm$')
bash scripts/check-package.sh "$deb" "$rpm"
echo "packaging took $(( $(date +%s) - pkg_start ))s"

step "Windows and macOS: the workspace type-checks for Windows, the core's tests under wine, the core type-checks for macOS (waiting for the background scripts/cross-check.sh)"
if wait "$cross_pid"; then cross_rc=0; else cross_rc=$?; fi
cross_pid=""
echo "---- scripts/cross-check.sh --mac (target/cross-check.log)"
cat target/cross-check.log
echo "---- end of scripts/cross-check.sh (exit $cross_rc)"
if [ "$cross_rc" != 0 ]; then
  echo "the Windows and macOS check failed (exit $cross_rc; its output above, target/cross-check.log)" >&2
  false
fi

step "TypeScript bindings match the Rust types"
if [ -n "$(git status --porcelain -- ui/src/bindings)" ]; then
  git status --porcelain -- ui/src/bindings
  echo "ui/src/bindings drifted from the Rust types: run cargo test and commit ui/src/bindings" >&2
  exit 1
fi

step "all checks passed"
