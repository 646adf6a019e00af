#!/usr/bin/python3
"""What one batch of live dials costs WebKitGTK in the real page, outside the app.

Journey 8 (src-tauri/tests/e2e.rs) saves the Live dials page's DOM at the end of its stream
(target/e2e-shots/dial-window-dom.html). This script turns it into a test page (scripts dropped,
the built CSS of ui/dist, batch-harness.js added) in target/window-batch-bench/, opens it in the
same WebKitGTK at the app's window size (1180x735) and lets the harness change the page every
12th frame as a batch does. Variants are comma lists of the harness's switches given as
arguments, run in turn A B A B (ROUNDS, default 3):

  rows     the rows in view shift by one (every cell's text set in place, as RowPainter does)
  grow     the spacer (the scroll area's extent) grows by 120 rows
  count    the "N dials match" text changes
  one      with rows: only the first row changes
  hide     the rows are not painted (visibility: hidden): style and layout without paint
  task     the batch is applied in a task posted from the frame before (as the app does since
           session 16, `ui/src/lib/afterFrame.ts`), not in the batch frame's own callback
  abs      the cells placed absolutely at their widths (no grid layout per row)
  cellcontain  `contain: size layout style` on every cell
  force    with task: style and layout forced at the end of the task (`offsetHeight`)
  contain / nocontain, gridrows / nogridrows, nowill, noradius, noclip, notext, noborder,
  sans, nosb   CSS variants (see batch-harness.js)

Per variant and round it prints a batch frame's work (frame start to the end of its rendering:
a MessageChannel message posted in the frame) p50/p90/max in ms, the same for the frames
between batches, the gaps between all frames (p50/p90/p99/max and how many were over 20 ms, as
journey 8 counts them), the web process's CPU time per frame (ms, /proc/PID/schedstat) and the CPU
time the host stole during the round (ticks of 10 ms, /proc/stat: on a shared virtual machine
compare only rounds with little of it).

  cargo test --release -p switchboard-desktop --test e2e journey_8 -- --ignored   # the DOM
  (cd ui && npm run build)                                                         # the CSS
  Xvfb :91 -screen 0 1280x800x24 &
  DISPLAY=:91 WEBKIT_DISABLE_COMPOSITING_MODE=1 JSC_useJIT=false \\
    /usr/bin/python3 scripts/window-rows-bench/batch.py nocontain nocontain,rows nocontain,rows,hide

Q adds URL parameters: every=12 (frames per batch), batches=40 (batches per round), js=MS (a
batch's scripts: the page is kept busy MS ms before the rows change, as the app's effects and
RowPainter keep it 4-6 ms).
"""
import json, os, shutil, subprocess, sys

import gi
gi.require_version('Gtk', '3.0'); gi.require_version('WebKit2', '4.1')
from gi.repository import Gtk, WebKit2, GLib

import saved_page

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
out = os.path.join(root, 'target', 'window-batch-bench')


def build_page():
    """Writes the test page; exits with a message naming what is missing."""
    os.makedirs(out, exist_ok=True)
    shutil.copy(os.path.join(here, 'batch-harness.js'), os.path.join(out, 'harness.js'))
    return saved_page.write(out, '<script src="harness.js"></script>')


page = build_page()
variants = sys.argv[1:] or ['nocontain', 'nocontain,rows']
rounds = int(os.environ.get('ROUNDS', '3'))
order = [v for _ in range(rounds) for v in variants]
res = {v: [] for v in variants}
win = Gtk.Window(); win.set_default_size(1180, 735)
wv = WebKit2.WebView(); win.add(wv); win.show_all()
idx = [0]
mark = [0.0, 0]


def steal():
    return int(open('/proc/stat').readline().split()[8])


def web_cpu_ms():
    t = 0
    for pid in subprocess.run(['pgrep', '-f', 'WebKitWebProcess'], capture_output=True, text=True).stdout.split():
        try:
            t += int(open(f'/proc/{pid}/schedstat').read().split()[0])
        except OSError:
            pass
    return t / 1e6


def load():
    if idx[0] >= len(order):
        for v in variants:
            print(f"{v:36s}", ' | '.join(
                f"batch {r['batch']['p50']:.0f}/{r['batch']['p90']:.0f}/{r['batch']['max']:.0f} "
                f"other {r['idle']['p50']:.0f}/{r['idle']['p90']:.0f} gaps p50/p90/p99/max {r['gaps']['p50']:.0f}/{r['gaps']['p90']:.0f}/{r['gaps']['p99']:.0f}/{r['gaps']['max']:.0f} >20 {r['gaps']['over20']}/{r['gaps']['n']} "
                f"cpu/frame {r['cpu']:.1f} stolen {r['st']}"
                for r in res[v]))
        Gtk.main_quit()
        return
    mark[0] = web_cpu_ms(); mark[1] = steal()
    wv.load_uri(page + '?v=' + order[idx[0]] + '&' + os.environ.get('Q', ''))


def on_title(_w, _p):
    t = wv.get_title() or ''
    if t.startswith('R '):
        r = json.loads(t[2:])
        r['cpu'] = (web_cpu_ms() - mark[0]) / r['frames']
        r['st'] = steal() - mark[1]
        res[order[idx[0]]].append(r)
        idx[0] += 1
        GLib.idle_add(load)


wv.connect('notify::title', on_title)
GLib.timeout_add_seconds(900, lambda: sys.exit('no result within 900 s'))
load()
Gtk.main()
