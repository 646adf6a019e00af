#!/usr/bin/env bash
# Runs one fuzz target under AFL++ for a number of executions and prints what it did.
# Usage: bash scripts/fuzz.sh TARGET EXECS      (targets: switchboard::fuzz::TARGETS, e.g.
#        bash scripts/fuzz.sh dial_shortcut 1000000)
# FUZZ_SECONDS=N also stops it after N seconds, whichever comes first (the count printed is
# then what it reached). FUZZ_MAX_LEN=BYTES caps the inputs AFL makes (afl-fuzz -G; the default
# is 1 MB, and a text target spends most of its time on inputs of tens of kilobytes).
# FUZZ_RESUME=1 goes on from the output folder of an earlier run of the target (afl-fuzz -i -:
# its queue, not its seeds; AFL++ keeps `execs_done` across a resume, so EXECS and the count
# printed are the target's total over its runs).
# Sharing the machine: `nice` alone does not make the fuzzer yield to work started from another
# session (Linux schedules each session's autogroup fairly); set the fuzzer's session's
# autogroup too, e.g. `setsid nice -n 19 bash scripts/fuzz.sh ...` and then
# `echo 19 > /proc/<afl-fuzz pid>/autogroup`. A fuzzer paused (SIGSTOP) mid-execution counts
# that execution as a hang when it resumes: replay any hang (`BIN < FILE`) before believing it.
# Both cores: while a run is under way, a second instance on the same output folder doubles the
# rate (`cargo afl fuzz -i fuzz/seeds/TARGET -o $FUZZ_OUT/TARGET -S sec1 -G $FUZZ_MAX_LEN -t 2000
# -- $FUZZ_TARGET_DIR/release/fuzz_TARGET`, with the AFL_* variables below); the target's count
# is then the instances' `execs_done` summed, and Ctrl+C (SIGINT) ends each cleanly.
# Engine: AFL++ through the `afl` crate (`cargo afl`, which builds AFL++ from its bundled source
# when it is installed; no nightly toolchain needed). The fuzz crate is `fuzz/` (not a
# workspace member). Seeds: fuzz/seeds/TARGET/ (make them with
# `cargo run -p switchboard --example gen_fuzz_seeds`). Output: $FUZZ_OUT/TARGET (default
# target/fuzz-out); crashes and hangs found are listed at the end: copy each into
# fuzz/seeds/TARGET/ as crash-NAME (tests/protocol/fuzz_seeds.rs replays it in cargo test) and fix it.
# Build folder: $FUZZ_TARGET_DIR (default target/fuzz-afl), separate from the normal build.
# Not used by CI: CI only replays the seeds (tests/protocol/fuzz_seeds.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 2 ]; then
  echo "usage: bash scripts/fuzz.sh TARGET EXECS" >&2
  exit 2
fi
target=$1
execs=$2
root=$PWD
seeds="$root/fuzz/seeds/$target"
bin_src="$root/fuzz/src/bin/fuzz_$target.rs"
if [ ! -f "$bin_src" ] || [ ! -d "$seeds" ]; then
  echo "no target $target (fuzz/src/bin/fuzz_$target.rs and fuzz/seeds/$target/ are needed)" >&2
  echo "targets: $(ls fuzz/src/bin | sed -e 's/^fuzz_//' -e 's/\.rs$//' | tr '\n' ' ')" >&2
  exit 2
fi
case $execs in ''|*[!0-9]*) echo "EXECS must be a whole number" >&2; exit 2;; esac

cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
export PATH="$cargo_bin:$PATH"
if ! cargo afl --version >/dev/null 2>&1; then
  echo "==> installing cargo-afl (builds AFL++ from its bundled source; needs make and a C compiler)"
  cargo install cargo-afl --locked
fi

export CARGO_TARGET_DIR="${FUZZ_TARGET_DIR:-$root/target/fuzz-afl}"
echo "==> building fuzz_$target with AFL++ instrumentation (release, overflow and debug assertions on)"
(cd fuzz && cargo afl build --release --bin "fuzz_$target")
bin="$CARGO_TARGET_DIR/release/fuzz_$target"

out="${FUZZ_OUT:-$root/target/fuzz-out}/$target"
input="$seeds"
if [ "${FUZZ_RESUME:-0}" = 1 ] && [ -d "$out/default/queue" ]; then
  input=-
  mv "$out/afl.log" "$out/afl.log.$(date +%s)" 2>/dev/null || true
else
  rm -rf "$out"
  mkdir -p "$out"
fi
# No UI; no CPU binding (the machine is shared); a crash dump handler in core_pattern is not
# ours to change; a slow, busy machine gets 2 s per execution before it counts as a hang.
export AFL_NO_UI=1 AFL_NO_AFFINITY=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1
export AFL_FORKSRV_INIT_TMOUT=20000
if [ "$input" = - ]; then
  echo "==> fuzzing $target for $execs more executions, going on from $out"
else
  echo "==> fuzzing $target for $execs executions from $(ls "$seeds" | wc -l) seeds"
fi
cargo afl fuzz -i "$input" -o "$out" -E "$execs" ${FUZZ_SECONDS:+-V "$FUZZ_SECONDS"} \
  ${FUZZ_MAX_LEN:+-G "$FUZZ_MAX_LEN"} -t 2000 -- "$bin" >"$out/afl.log" 2>&1 || {
  echo "afl-fuzz failed; its last lines:" >&2
  tail -30 "$out/afl.log" >&2
  exit 1
}
stats="$out/default/fuzzer_stats"
get() { awk -F' *: *' -v k="$1" '$1 == k { print $2 }' "$stats"; }
echo "target:      $target"
echo "executions:  $(get execs_done)"
echo "exec/s:      $(get execs_per_sec)"
echo "run time:    $(get run_time) s"
echo "corpus:      $(get corpus_count) inputs ($(get bitmap_cvg) of the map)"
echo "crashes:     $(get saved_crashes)"
echo "hangs:       $(get saved_hangs)"
found=0
for kind in crashes hangs; do
  for f in "$out/default/$kind"/id:*; do
    [ -e "$f" ] || continue
    echo "  $kind: $f"
    found=1
  done
done
if [ "$found" -ne 0 ]; then
  echo "findings above: copy each into fuzz/seeds/$target/crash-NAME, fix, run cargo test --test protocol fuzz_seeds::"
fi
