#!/usr/bin/python3
"""What RowPainter's scripts cost per paint in the window's own engine, without rendering.

Bundles ui/src/lib/rowPainter.ts (and, with BASE=<git revision>, that revision's version of it
beside) with the front end's esbuild, puts it into journey 8's saved Live dials page (its DOM and
the built CSS, as batch.py does) and has it paint the table's 20 row slots REPS times in a loop,
in the same WebKitGTK with the app's script settings. Rendering never runs inside the loop, so
the figure is the painter's scripts and DOM writes alone: ms per paint of 20 rows, one figure
per variant and round, rounds A B A B (ROUNDS, default 3), with the host's steal per round.

Variants:
  shift   streaming at the top: each paint shows 12 new rows above the last ones
  same    scrolled down while dials arrive: the same 20 row objects again at each paint
  bare    the loop alone (the rows sliced, nothing painted): the baseline
  shift0, same0   the same with BASE's painter

  cargo test --release -p switchboard-desktop --test e2e journey_8 -- --ignored   # the DOM
  (cd ui && npm run build)                                                         # the CSS
  Xvfb :91 -screen 0 1280x800x24 &
  DISPLAY=:91 WEBKIT_DISABLE_COMPOSITING_MODE=1 JSC_useJIT=false BASE=HEAD~1 \\
    /usr/bin/python3 scripts/window-rows-bench/painter.py shift0 shift same0 same bare
"""
import os, subprocess, sys

import gi
gi.require_version('Gtk', '3.0'); gi.require_version('WebKit2', '4.1')
from gi.repository import Gtk, WebKit2, GLib

import saved_page

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
lib = os.path.join(root, 'ui', 'src', 'lib')
out = os.path.join(root, 'target', 'window-painter-bench')
esbuild = os.path.join(root, 'ui', 'node_modules', '.bin', 'esbuild')

LOOP = r'''
<script>
(() => {
  const ops = ["read_item", "list_items", "grep_items", "describe", "write_item"];
  const outs = ["ok", "ok", "ok", "tool_error", "error"];
  const N = 4000, base = Date.UTC(2026, 11, 3, 10, 0, 0), data = [];
  for (let i = 0; i < N; i++) data.push({ kind: "dial", seq: N - i, id: "d" + i, phone: "dev_" + (i % 3),
    call_id: "c" + i, session: "s", caller: i % 2 ? "lumiagent" : "lumirealm", callee: "lumirealm",
    endpoint: "lumirealm.phoneline", op: ops[i % 5], start_ms: base - i * 1.37, duration_ms: (i * 37) % 1500,
    outcome: outs[i % 5], slow: false, has_error: false, spec_findings: i % 17 === 0 ? 2 : 0 });
  const names = { dev_0: "Demo phone", dev_1: "Pixel", dev_2: "" };
  const q = new URLSearchParams(location.search), v = q.get("v"), reps = +q.get("reps");
  const rowsEl = document.querySelector(".rows");
  rowsEl.textContent = "";
  const P = v.endsWith("0") ? window.RP0 : window.RP;
  const painter = P && new P.RowPainter(rowsEl);
  const same = v.startsWith("same"), bare = v === "bare";
  setTimeout(() => {
    let off = N - 40;
    const t0 = performance.now();
    for (let r = 0; r < reps; r++) {
      const rows = data.slice(off, off + 20);
      if (!bare) painter.paint(rows, { start: 0, selected: null, phoneNames: names });
      else window.__rows = rows;
      if (!same) { off -= 12; if (off < 0) off = N - 40; }
    }
    document.title = "RESULT " + ((performance.now() - t0) / reps).toFixed(3);
  }, 300);
})();
</script>
'''


def bundle(source, name, dest):
    """Bundles `source` (TypeScript text of rowPainter.ts) as global `name` into `dest`."""
    r = subprocess.run([esbuild, '--bundle', '--format=iife', f'--global-name={name}', '--loader=ts',
                        '--sourcefile=rowPainter.ts', f'--outfile={dest}'],
                       input=source, text=True, cwd=lib, capture_output=True)
    if r.returncode != 0:
        sys.exit(f'esbuild failed on {name}: {r.stderr}')


def build_page(variants):
    """Writes the test page; exits with a message naming what is missing."""
    if not os.path.exists(esbuild):
        sys.exit(f'{esbuild} is missing: run (cd ui && npm ci)')
    os.makedirs(out, exist_ok=True)
    bundle(open(os.path.join(lib, 'rowPainter.ts'), encoding='utf-8').read(), 'RP', os.path.join(out, 'rp.js'))
    scripts = '<script src="rp.js"></script>'
    if any(v.endswith('0') for v in variants):
        rev = os.environ.get('BASE')
        if not rev:
            sys.exit('shift0 and same0 need BASE=<git revision> (the painter to compare with)')
        old = subprocess.run(['git', 'show', f'{rev}:ui/src/lib/rowPainter.ts'], cwd=root,
                             capture_output=True, text=True)
        if old.returncode != 0:
            sys.exit(f'git show {rev}:ui/src/lib/rowPainter.ts failed: {old.stderr}')
        bundle(old.stdout, 'RP0', os.path.join(out, 'rp0.js'))
        scripts += '<script src="rp0.js"></script>'
    return saved_page.write(out, scripts + LOOP)


def steal():
    return int(open('/proc/stat').readline().split()[8])


variants = sys.argv[1:] or ['shift', 'same', 'bare']
page = build_page(variants)
rounds = int(os.environ.get('ROUNDS', '3'))
reps = os.environ.get('REPS', '300')
order = [v for _ in range(rounds) for v in variants]
res = {v: [] for v in variants}
win = Gtk.Window(); win.set_default_size(1180, 735)
wv = WebKit2.WebView(); win.add(wv); win.show_all()
wv.get_settings().set_allow_file_access_from_file_urls(True)
state = {'v': None, 'steal': 0}


def load():
    if not order:
        Gtk.main_quit()
        return False
    state['v'] = order.pop(0)
    state['steal'] = steal()
    wv.load_uri(f'{page}?v={state["v"]}&reps={reps}')
    return False


def on_title(*_):
    t = wv.get_title() or ''
    if t.startswith('RESULT '):
        res[state['v']].append((float(t.split()[1]), steal() - state['steal']))
        GLib.idle_add(load)


wv.connect('notify::title', on_title)
GLib.timeout_add_seconds(900, lambda: (print('timed out after 900 s', file=sys.stderr), Gtk.main_quit()))
load()
Gtk.main()
if any(len(r) < rounds for r in res.values()):
    sys.exit('not every round finished')
print(f'ms per paint of 20 rows ({reps} paints a round; in brackets the host\'s steal in the round, ticks of 10 ms):')
for v, r in res.items():
    print(f'{v:8s}', '  '.join(f'{ms:.3f} [{st}]' for ms, st in r))
