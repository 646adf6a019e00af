#!/usr/bin/env bash
# The Windows and macOS cross-build check (scripts/test.sh runs it), on a Debian 12 machine:
#  1. installs what is missing (apt: Debian's rustc-web, cargo-web and rust-web-src — a Rust
#     whose standard library can be built for another target —, mingw-w64, wine);
#  2. type-checks the whole workspace, all targets (tests, benches, examples), for
#     x86_64-pc-windows-gnu (RUSTC_BOOTSTRAP=1 -Zbuild-std=std,panic_abort: Debian ships no
#     prebuilt Windows standard library);
#  3. builds the core crate's tests for Windows and runs every one under wine, with the totals
#     printed; wine 8 lacks bcryptprimitives.dll's ProcessPrng, which Rust's standard library
#     needs for random bytes, so scripts/cross/bcryptprimitives.c (a forwarder to RtlGenRandom)
#     is built with mingw and put beside the test programs;
#  4. type-checks the core crate for aarch64-apple-darwin when `zig` is on PATH (PyPI's
#     `ziglang`: zig cc is the C compiler for ring and SQLite) and says what blocks otherwise.
#
# Windows targets go to target-win/ (not target/: another compiler, other flags).
# Usage: bash scripts/cross-check.sh [--no-install] [--no-wine] [--mac]
#   --no-install  fail instead of installing what is missing
#   --no-wine     type-check only
#   --mac         also the macOS type-check (needs zig; off by default: see README, Platforms)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
start=$(date +%s)
install=1 wine_run=1 mac=0
for a in "$@"; do
  case "$a" in
    --no-install) install=0 ;;
    --no-wine) wine_run=0 ;;
    --mac) mac=1 ;;
    *) echo "cross-check.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done
step() { echo; echo "==> $* ($(( $(date +%s) - start ))s; load $(cut -d' ' -f1-3 /proc/loadavg))"; }

step "tools (Debian's Rust with its sources, mingw-w64, wine)"
need=()
[ -x /usr/bin/cargo ] && /usr/bin/cargo --version | grep -q . || need+=(cargo-web)
[ -x /usr/bin/rustc ] || need+=(rustc-web)
[ -d /usr/lib/rustlib/src/rust/library ] || need+=(rust-web-src)
command -v x86_64-w64-mingw32-gcc >/dev/null || need+=(mingw-w64)
if [ "$wine_run" = 1 ]; then command -v wine >/dev/null || need+=(wine wine64); fi
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
export CARGO_TARGET_DIR="$repo/target-win"
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
win=(--target x86_64-pc-windows-gnu -Zbuild-std=std,panic_abort --locked)
echo "$(/usr/bin/rustc --version); $(/usr/bin/cargo --version); $(x86_64-w64-mingw32-gcc --version | head -1)"

# The shell's build script embeds the front end (tauri.conf.json, frontendDist).
if [ ! -f ui/dist/index.html ]; then
  step "front end build (the shell embeds ui/dist)"
  (cd ui && { [ -d node_modules ] || npm ci --silent; } && npm run build --silent)
fi

step "type-check the whole workspace, all targets, for x86_64-pc-windows-gnu"
nice -n 10 /usr/bin/cargo check --workspace --all-targets "${win[@]}"

if [ "$wine_run" = 1 ]; then
  step "build the core crate's tests for Windows"
  nice -n 10 /usr/bin/cargo test -p switchboard --lib --bins --tests "${win[@]}" --no-run \
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

  step "run the core crate's tests under wine (${#exes[@]} test programs)"
  export WINEPREFIX="$CARGO_TARGET_DIR/wineprefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
  # ts-rs writes the TypeScript bindings where TS_RS_EXPORT_DIR says (cargo sets it from
  # .cargo/config.toml, wine does not): a scratch folder, never the committed ones.
  export TS_RS_EXPORT_DIR="$CARGO_TARGET_DIR/ts-bindings"
  # Tests run with the repository as the working folder, as cargo runs them (the corpus is
  # ../shared/corpus from there).
  # Skipped under wine, each for a reason that is not Windows': switchboard-tap's journey needs
  # a Windows Node.js and Bun, which wine does not have (it runs on Linux in cargo test, and would
  # on a Windows machine with them installed).
  skip_tap=(--skip tap_under_node --skip tap_under_bun)
  passed=0 failed=0 ignored=0 programs_failed=()
  for exe in "${exes[@]}"; do
    name=$(basename "$exe" .exe)
    log="$CARGO_TARGET_DIR/wine-$name.log"
    extra=()
    case "$name" in tap_node-*) extra=("${skip_tap[@]}"); echo "  $name: skipping the Node and Bun journeys (no Windows Node.js or Bun under wine)";; esac
    if timeout 900 wine "$exe" --test-threads=2 "${extra[@]}" > "$log" 2>&1; then rc=0; else rc=$?; fi
    line=$(grep -E '^test result:' "$log" | tail -1 || true)
    p=$(sed -nE 's/.* ([0-9]+) passed.*/\1/p' <<<"$line"); f=$(sed -nE 's/.* ([0-9]+) failed.*/\1/p' <<<"$line")
    i=$(sed -nE 's/.* ([0-9]+) ignored.*/\1/p' <<<"$line")
    passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0})); ignored=$((ignored + ${i:-0}))
    if [ "$rc" != 0 ]; then
      programs_failed+=("$name")
      echo "  FAILED $name (exit $rc): ${line:-no totals}; see $log"
      grep -E '^    [a-z_:0-9]+$|panicked at' "$log" | head -20 | sed 's/^/    /'
    else
      echo "  ok $name: $line"
    fi
  done
  step "under wine: $passed passed, $failed failed, $ignored ignored, in ${#exes[@]} test programs"
  if [ ${#programs_failed[@]} -gt 0 ]; then
    echo "failed under wine: ${programs_failed[*]}" >&2
    exit 1
  fi
fi

if [ "$mac" = 1 ]; then
  step "type-check the core crate for aarch64-apple-darwin (zig cc as the C compiler)"
  if ! command -v zig >/dev/null; then
    echo "zig is not on PATH (pip install ziglang, then python3 -m ziglang): the macOS check needs a C compiler for ring and SQLite" >&2
    exit 1
  fi
  export CC_aarch64_apple_darwin="$repo/scripts/cross/zig-cc-macos"
  nice -n 10 /usr/bin/cargo check -p switchboard --lib --bins --target aarch64-apple-darwin \
    -Zbuild-std=std,panic_abort --locked
fi

step "cross-build check passed"
