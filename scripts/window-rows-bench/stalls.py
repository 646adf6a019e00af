#!/usr/bin/env python3
"""What ran on the machine's CPUs during journey 8's long frame gaps.

Journey 8 saves every animation frame's time (`t`, page milliseconds) and the page's time
origin (`origin`, epoch milliseconds) in `target/e2e-shots/dial-window-frames.json`. Recorded
with `perf` on the monotonic clock, the samples of the same run line up with those frames once
the offset between the two clocks is known. For each gap over LIMIT ms (default 50) this prints
the threads that were sampled in it and where: the thread's name and id, the function and the
library of each sample, most frequent first.

Record (as root, while journey 8 streams; its stream starts about 25 s after the app):

    /usr/bin/python3 -c 'import time; print(time.time() - time.monotonic())' > /tmp/offset
    perf record -k mono -a -g -e cpu-clock -F 997 -o /tmp/j8.data -- sleep 110 &
    WEBKIT_DISABLE_COMPOSITING_MODE=1 target/release/deps/e2e-* journey_8 --ignored --nocapture

then

    perf script -i /tmp/j8.data -F comm,tid,time,ip,sym,dso > /tmp/j8.txt
    python3 scripts/window-rows-bench/stalls.py target/e2e-shots/dial-window-frames.json \
        /tmp/j8.txt $(cat /tmp/offset) [LIMIT]

Session 18 found this way WebKit's real-time `ReceiveQueue` thread spinning in
`pas_lock_lock_slow` through 80-140 ms gaps (docs/desktop-dials.md; src-tauri/src/realtime.rs).
"""

import collections
import json
import re
import sys

HEAD = re.compile(r"^\s*(.+?)\s+(\d+)\s+([\d.]+):\s*$")
FRAME = re.compile(r"^\s+[0-9a-f]+\s+(\S+)\s+\((.*)\)\s*$")


def samples(path):
    """(time, thread, leaf function, library) of each sample in `perf script` text."""
    head = None
    with open(path, errors="replace") as f:
        for line in f:
            m = HEAD.match(line)
            if m:
                head = (float(m[3]), f"{m[1]}/{m[2]}")
                continue
            m = FRAME.match(line)
            if m and head:
                yield head[0], head[1], m[1], m[2].rsplit("/", 1)[-1]
                head = None  # the leaf only


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    frames = json.load(open(sys.argv[1]))
    offset = float(sys.argv[3])
    limit = float(sys.argv[4]) if len(sys.argv) > 4 else 50.0
    if "origin" not in frames:
        sys.exit("the frames file has no `origin`: record it with journey 8 of session 18 or later")
    t, origin = frames["t"], frames["origin"]
    gaps = []
    for a, b in zip(t, t[1:]):
        if b - a > limit:
            gaps.append(((origin + a) / 1000 - offset, (origin + b) / 1000 - offset, b - a))
    if not gaps:
        print(f"no gap over {limit:g} ms in {len(t)} frames")
        return
    found = {g: collections.Counter() for g in gaps}
    span = [None, None]
    for when, thread, sym, lib in samples(sys.argv[2]):
        span[0] = when if span[0] is None else min(span[0], when)
        span[1] = when if span[1] is None else max(span[1], when)
        for g in gaps:
            if g[0] <= when <= g[1]:
                found[g][(thread, sym, lib)] += 1
    for g in gaps:
        inside = span[0] is not None and span[0] <= g[0] and g[1] <= span[1]
        print(f"gap of {g[2]:.0f} ms at {g[0]:.3f}-{g[1]:.3f} (monotonic s)"
              + ("" if inside else "  [outside the recording]"))
        for (thread, sym, lib), n in found[g].most_common(12):
            print(f"  {n:4d}  {thread:32s} {sym}  ({lib})")


if __name__ == "__main__":
    main()
