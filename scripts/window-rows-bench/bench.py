#!/usr/bin/python3
"""What WebKitGTK spends on the Live dials table's rows, outside the app: a test page
(rows.html) with the table's row markup and CSS, whose rows in view get new text in
requestAnimationFrame, opened in the same WebKitGTK the app uses. Prints, per variant and run,
the frame gaps (p50, p99, longest, ms), the page's script time per frame (ms) and the CPU time
the web process and the X server spent per frame (ms, from /proc). Variants are body classes of
rows.html given as arguments ("idle": nothing changes, the bare baseline; "data": text set in
place instead of textContent; "hide": rows not painted; "contain", "flex", "nonum", "noell",
"grow" ...), run in turn A B A B (ROUNDS, default 2). Q adds URL parameters: rows=21,
frames=600, every=N (change the rows every Nth frame only; "upd" then lists the gaps after
them).

  Xvfb :91 -screen 0 1280x800x24 &
  DISPLAY=:91 WEBKIT_DISABLE_COMPOSITING_MODE=1 JSC_useJIT=false \
    /usr/bin/python3 scripts/window-rows-bench/bench.py idle "" data

Stop other jobs while it runs; the figures move with the machine's load (docs/desktop-dials.md,
session 13).
"""
import sys, os, json
import gi
gi.require_version('Gtk','3.0'); gi.require_version('WebKit2','4.1')
from gi.repository import Gtk, WebKit2, GLib
variants=sys.argv[1:] or ['']
rounds=int(os.environ.get('ROUNDS','2'))
order=[v for _ in range(rounds) for v in variants]
res={v:[] for v in variants}
win=Gtk.Window(); win.set_default_size(1280,780)
wv=WebKit2.WebView(); win.add(wv); win.show_all()
page='file://'+os.path.join(os.path.dirname(os.path.abspath(__file__)),'rows.html')
idx=[0]
import subprocess
def cpu(name):
    t=0
    for pid in subprocess.run(['pgrep','-f',name],capture_output=True,text=True).stdout.split():
        try:
            f=open(f'/proc/{pid}/stat').read().rsplit(')',1)[1].split()
            t+=int(f[11])+int(f[12])
        except Exception: pass
    return t*10
mark=[0,0]
def load():
    if idx[0]>=len(order):
        for v in variants:
            r=res[v]; print(f"{v or 'base':28s}", ' | '.join(f"p50 {x['p50']:.1f} p99 {x['p99']:.1f} max {x['max']:.1f} js50 {x['js50']:.2f} js99 {x['js99']:.0f} web {x['web']:.1f} X {x['x']:.1f} upd {x.get('u')}" for x in r))
        Gtk.main_quit(); return
    mark[0]=cpu('WebKitWebProcess'); mark[1]=cpu('Xvfb '+os.environ.get('DISPLAY',':0'))
    wv.load_uri(page+'?v='+order[idx[0]]+'&'+os.environ.get('Q',''))
def on_title(w,p):
    t=wv.get_title() or ''
    if t.startswith('R '):
        r=json.loads(t[2:]); r['web']=(cpu('WebKitWebProcess')-mark[0])/r['n']; r['x']=(cpu('Xvfb '+os.environ.get('DISPLAY',':0'))-mark[1])/r['n']; res[order[idx[0]]].append(r); idx[0]+=1; GLib.idle_add(load)
wv.connect('notify::title',on_title)
load(); Gtk.main()
