"""Journey 8's saved Live dials page as a test page, for the benches beside this file.

Journey 8 (src-tauri/tests/e2e.rs) saves the page's DOM at the end of its stream
(target/e2e-shots/dial-window-dom.html). `write(out, body_end)` writes it to OUT/page.html with
its scripts dropped, the built CSS of ui/dist copied beside it as app.css, and `body_end` (the
bench's own scripts) put before </body>; it returns the page's file:// URL, or exits with a
message naming what is missing.
"""
import glob, os, re, shutil, sys

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
dom_path = os.path.join(root, 'target', 'e2e-shots', 'dial-window-dom.html')


def write(out, body_end):
    if not os.path.exists(dom_path):
        sys.exit(f'{dom_path} is missing: run journey 8 first (see the bench\'s docstring)')
    css = glob.glob(os.path.join(root, 'ui', 'dist', 'assets', 'index-*.css'))
    if len(css) != 1:
        sys.exit(f'expected one ui/dist/assets/index-*.css, found {len(css)}: run (cd ui && npm run build)')
    os.makedirs(out, exist_ok=True)
    shutil.copy(css[0], os.path.join(out, 'app.css'))
    s = open(dom_path, encoding='utf-8').read()
    s = re.sub(r'<script[^>]*>.*?</script>', '', s, flags=re.S)
    s = re.sub(r'<link rel="stylesheet"[^>]*>', '<link rel="stylesheet" href="app.css">', s)
    s = s.replace('</body>', body_end + '</body>')
    open(os.path.join(out, 'page.html'), 'w', encoding='utf-8').write(s)
    return 'file://' + os.path.join(out, 'page.html')
