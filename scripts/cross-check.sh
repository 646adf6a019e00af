#!/usr/bin/env bash
# The Windows and macOS cross-build check (scripts/test.sh runs it), on a Debian 12 machine:
#  1. installs what is missing (apt: Debian's rustc-web, cargo-web and rust-web-src — a Rust
#     whose standard library can be built for another target —, mingw-w64's C compiler for
#     x86_64, wine);
#  2. builds the core crates' tests for Windows and runs every one under wine, with the totals
#     printed (in the background, while 3 and 4 use the cores);
#  3. type-checks the whole workspace, all targets (tests, benches, examples), for
#     x86_64-pc-windows-gnu (RUSTC_BOOTSTRAP=1 -Zbuild-std=std,panic_abort: Debian ships no
#     prebuilt Windows standard library); wine 8 lacks bcryptprimitives.dll's ProcessPrng, which Rust's standard library
#     needs for random bytes, so scripts/cross/bcryptprimitives.c (a forwarder to RtlGenRandom)
#     is built with mingw and put beside the test programs;
#  4. with --mac, type-checks the core crates (all targets) for aarch64-apple-darwin, zig cc (PyPI's
#     `ziglang`, in a virtual environment of its own) as the C compiler for ring and SQLite; the
#     shell is not (Apple's SDK, see below).
#
# Windows targets go to target-win/ (not target/: another compiler, other flags).
# Usage: bash scripts/cross-check.sh [--no-install | --install-only] [--no-wine] [--mac]
#   --no-install  fail instead of installing what is missing
#   --install-only  install the apt packages that are missing, check nothing (scripts/test.sh
#                 does this in the foreground, as apt must not run beside its other apt-get, then
#                 runs the check, zig's install included, in the background)
#   --no-wine     type-check only
#   --mac         also the macOS type-check of the core (installs zig from PyPI)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
start=$(date +%s)
install=1 wine_run=1 mac=0 install_only=0
for a in "$@"; do
  case "$a" in
    --no-install) install=0 ;;
    --install-only) install_only=1 ;;
    --no-wine) wine_run=0 ;;
    --mac) mac=1 ;;
    *) echo "cross-check.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done
# CPU seconds of this script and what it waited for (/proc: utime, stime, cutime, cstime).
cpu() {
  local f
  read -r -a f < "/proc/$$/stat"
  echo $(((f[13] + f[14] + f[15] + f[16]) / $(getconf CLK_TCK)))
}
step() { echo; echo "==> $* ($(( $(date +%s) - start ))s; cpu $(cpu)s; load $(cut -d' ' -f1-3 /proc/loadavg))"; }

step "tools (Debian's Rust with its sources, mingw-w64, wine)"
need=()
[ -x /usr/bin/cargo ] && /usr/bin/cargo --version | grep -q . || need+=(cargo-web)
[ -x /usr/bin/rustc ] || need+=(rustc-web)
[ -d /usr/lib/rustlib/src/rust/library ] || need+=(rust-web-src)
# Only the x86_64 C compiler (ring's and SQLite's C, the test programs' link): the mingw-w64
# package would add the i686 and C++ toolchains too, about 900 MB that a fresh machine unpacks
# for nothing.
command -v x86_64-w64-mingw32-gcc >/dev/null || need+=(gcc-mingw-w64-x86-64)
if [ "$wine_run" = 1 ]; then command -v wine >/dev/null || need+=(wine wine64); fi
if [ "$mac" = 1 ]; then /usr/bin/python3 -c "import ensurepip, venv" 2>/dev/null || need+=(python3-venv); fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "$install" = 0 ]; then echo "missing: ${need[*]} (apt-get install them, or run without --no-install)" >&2; exit 1; fi
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
# Debian's toolchain, not rustup's (whose stable has no Windows std here): /usr/bin first.
export PATH="/usr/bin:/bin:$PATH"
export RUSTC=/usr/bin/rustc CARGO=/usr/bin/cargo RUSTDOC=/usr/bin/rustdoc
export RUSTC_BOOTSTRAP=1
# scripts/test.sh builds with rustup's clippy-driver as the workspace's compiler: not this one's.
unset RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS
export CARGO_TARGET_DIR="$repo/target-win"
mkdir -p "$CARGO_TARGET_DIR"
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
# No debug info: these builds are checked and run, never debugged, and linking ~50 test
# programs with it is most of this script's time.
export CARGO_PROFILE_DEV_DEBUG=0
# Features resolved once for the whole workspace, whichever packages a step names: the core's
# test build and the workspace's type-check then share their proc-macros and build scripts
# (the shell's dependencies turn on more features of proc-macro2 and syn, which otherwise made
# the type-check build every derive macro again). Unstable in cargo, as -Zbuild-std is.
export CARGO_UNSTABLE_FEATURE_UNIFICATION=true CARGO_RESOLVER_FEATURE_UNIFICATION=workspace
# The core: the layered crates under crates/ and the switchboard crate on top (not the shell).
core=(-p switchboard-wire -p switchboard-domain -p switchboard-dials -p switchboard-link
  -p switchboard-app -p switchboard-control -p switchboard)
win=(--target x86_64-pc-windows-gnu -Zbuild-std=std,panic_abort --locked)
echo "$(/usr/bin/rustc --version); $(/usr/bin/cargo --version); $(x86_64-w64-mingw32-gcc --version | head -1)"
if [ "$mac" = 1 ] && [ "$install_only" = 0 ]; then
  # zig from PyPI (ziglang) in a virtual environment of this script's own: Debian's Python
  # refuses packages installed beside its own.
  venv="$CARGO_TARGET_DIR/zig-venv"
  export ZIG_PYTHON="$venv/bin/python3"
  if ! "$ZIG_PYTHON" -m ziglang version >/dev/null 2>&1; then
    if [ "$install" = 0 ]; then echo "zig is missing ($venv: pip install ziglang): the macOS check needs a C compiler for ring and SQLite" >&2; exit 1; fi
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'ziglang==0.14.*'
  fi
  echo "zig $("$ZIG_PYTHON" -m ziglang version)"
fi
if [ "$install_only" = 1 ]; then
  step "tools in place (--install-only: nothing checked)"
  exit 0
fi

# The shell's build script embeds the front end (tauri.conf.json, frontendDist).
if [ ! -f ui/dist/index.html ]; then
  step "front end build (the shell embeds ui/dist)"
  (cd ui && { [ -d node_modules ] || npm ci --silent; } && npm run build --silent)
fi

if [ "$wine_run" = 1 ]; then
  step "build the core crates' tests for Windows"
  nice -n 10 /usr/bin/cargo test "${core[@]}" --lib --bins --tests "${win[@]}" --no-run \
    --message-format=json-render-diagnostics > "$CARGO_TARGET_DIR/win-tests.json"
  mapfile -t exes < <(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("profile", {}).get("test") and m.get("executable"):
        print(m["executable"])' "$CARGO_TARGET_DIR/win-tests.json" | sort -u)
  deps="$CARGO_TARGET_DIR/x86_64-pc-windows-gnu/debug"
  x86_64-w64-mingw32-gcc -O2 -shared -o "$deps/deps/bcryptprimitives.dll" scripts/cross/bcryptprimitives.c -ladvapi32
  cp "$deps/deps/bcryptprimitives.dll" "$deps/bcryptprimitives.dll"

fi

# The tests under wine run in the background while the type-checks below use the cores: much of
# their time is waiting (timeouts, reconnects, wine itself), little of it compiling. Their
# output goes to wine-run.log, printed once they end; their failure fails this script.
wine_tests() {
  step "run the core crates' tests under wine (${#exes[@]} test programs)"
  export WINEPREFIX="$CARGO_TARGET_DIR/wineprefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
  # ts-rs writes the TypeScript bindings where TS_RS_EXPORT_DIR says (cargo sets it from
  # .cargo/config.toml, wine does not): a scratch folder, never the committed ones.
  export TS_RS_EXPORT_DIR="$CARGO_TARGET_DIR/ts-bindings"
  # Tests run with the repository as the working folder, as cargo runs them (the corpus is
  # ../shared/corpus from there).
  # Skipped under wine, for a reason that is not Windows': switchboard-tap's journey runs the
  # tap under Bun (tap/node_modules/.bin/bun, a Linux program here), and wine has no Windows
  # Bun; it runs on Linux in cargo test, and would on a Windows machine with Bun installed.
  # The skip is printed, never silent.
  skip_tap=(--skip tap_under_bun)
  passed=0 failed=0 ignored=0 programs_failed=() skipped_programs=()
  for exe in "${exes[@]}"; do
    name=$(basename "$exe" .exe)
    log="$CARGO_TARGET_DIR/wine-$name.log"
    extra=()
    # The licence check and the version module read the repository with `cargo metadata` (the
    # licences of every dependency, one version everywhere): the same answer on every system,
    # checked on Linux by cargo test; wine has no Windows cargo to run. Said here, never silent.
    case "$name" in
      network-*) extra=("${skip_tap[@]}"); echo "  $name: skipping the Bun journey (no Windows Bun under wine)";;
      app-*) extra=(--skip version:: --skip layers::); echo "  $name: skipping its version and layers modules (cargo metadata; no Windows cargo under wine; run on Linux by cargo test)";;
      licences-*) echo "  $name: not run under wine (cargo metadata; no Windows cargo under wine; run on Linux by cargo test)"; skipped_programs+=("$name"); continue;;
    esac
    if timeout 900 wine "$exe" --test-threads=2 "${extra[@]}" > "$log" 2>&1; then rc=0; else rc=$?; fi
    line=$(grep -E '^test result:' "$log" | tail -1 || true)
    p=$(sed -nE 's/.* ([0-9]+) passed.*/\1/p' <<<"$line"); f=$(sed -nE 's/.* ([0-9]+) failed.*/\1/p' <<<"$line")
    i=$(sed -nE 's/.* ([0-9]+) ignored.*/\1/p' <<<"$line")
    passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0})); ignored=$((ignored + ${i:-0}))
    if [ "$rc" != 0 ]; then
      programs_failed+=("$name")
      echo "  FAILED $name (exit $rc): ${line:-no totals}; see $log"
      # Each panic with the lines that say why (its message follows the "panicked at" line).
      grep -E -A4 'panicked at' "$log" | head -40 | sed 's/^/    /'
    else
      echo "  ok $name: $line"
    fi
  done
  step "under wine: $passed passed, $failed failed, $ignored ignored, in ${#exes[@]} test programs (${#skipped_programs[@]} not run, named above)"
  if [ ${#programs_failed[@]} -gt 0 ]; then
    echo "failed under wine: ${programs_failed[*]}" >&2
    return 1
  fi
}
wine_pid=""
stop_wine() {
  if [ -n "$wine_pid" ] && kill -0 "$wine_pid" 2>/dev/null; then
    kill "$wine_pid" 2>/dev/null || true
    WINEPREFIX="$CARGO_TARGET_DIR/wineprefix" wineserver -k 2>/dev/null || true
  fi
}
trap stop_wine EXIT
if [ "$wine_run" = 1 ]; then
  wine_tests > "$CARGO_TARGET_DIR/wine-run.log" 2>&1 &
  wine_pid=$!
  echo "  the tests under wine run in the background: $CARGO_TARGET_DIR/wine-run.log (printed when they end)"
fi

step "type-check the whole workspace, all targets, for x86_64-pc-windows-gnu"
# Warnings fail the check, as clippy's -D warnings does on Linux: code that is dead or wrong
# only off Linux shows here first (cargo replays a crate's warnings when it is up to date).
nice -n 10 /usr/bin/cargo check --workspace --all-targets "${win[@]}" 2>&1 | tee "$CARGO_TARGET_DIR/win-check.log"
if grep -E '^warning: `[^`]+` \([^)]*\) generated [0-9]+ warnings?' "$CARGO_TARGET_DIR/win-check.log"; then
  echo "the workspace has warnings when built for Windows (above): fix them" >&2
  exit 1
fi

if [ "$mac" = 1 ]; then
  step "type-check the core crates for aarch64-apple-darwin (zig cc as the C compiler)"
  export CC_aarch64_apple_darwin="$repo/scripts/cross/zig-cc-macos"
  # The core crates, all targets. The shell (src-tauri) is not: its notifications'
  # mac-notification-sys compiles Objective-C against Cocoa.h, which only Apple's SDK has, and
  # that SDK may not be copied onto a Linux machine.
  nice -n 10 /usr/bin/cargo check "${core[@]}" --all-targets --target aarch64-apple-darwin \
    -Zbuild-std=std,panic_abort --locked 2>&1 | tee "$CARGO_TARGET_DIR/mac-check.log"
  if grep -E '^warning: `[^`]+` \([^)]*\) generated [0-9]+ warnings?' "$CARGO_TARGET_DIR/mac-check.log"; then
    echo "the core has warnings when built for macOS (above): fix them" >&2
    exit 1
  fi
fi

if [ "$wine_run" = 1 ]; then
  step "waiting for the tests under wine"
  if wait "$wine_pid"; then wine_rc=0; else wine_rc=$?; fi
  wine_pid=""
  cat "$CARGO_TARGET_DIR/wine-run.log"
  [ "$wine_rc" = 0 ] || { echo "the tests under wine failed (exit $wine_rc; above)" >&2; exit 1; }
fi

step "cross-build check passed"
