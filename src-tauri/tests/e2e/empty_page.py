#!/usr/bin/python3
"""An empty WebKitGTK page: the baseline of the e2e window-memory measurement.

Opens a 1280x800 GTK window holding one WebKit2 (4.1, the WebKitGTK Switchboard's window uses)
web view with an empty document, prints "loaded" once it has loaded, and runs until it is sent
SIGTERM. Needs the Debian packages python3-gi, gir1.2-gtk-3.0 and gir1.2-webkit2-4.1
(scripts/install-deps.sh).
"""
import signal

import gi

gi.require_version("Gtk", "3.0")
gi.require_version("WebKit2", "4.1")
from gi.repository import GLib, Gtk, WebKit2  # noqa: E402

window = Gtk.Window(title="empty WebKitGTK page")
window.set_default_size(1280, 800)
view = WebKit2.WebView()
window.add(view)


def on_load(_view, event):
    if event == WebKit2.LoadEvent.FINISHED:
        print("loaded", flush=True)


view.connect("load-changed", on_load)
window.connect("destroy", Gtk.main_quit)
GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, Gtk.main_quit)
view.load_html("<!doctype html><html><head><meta charset='utf-8'></head><body></body></html>", "about:blank")
window.show_all()
Gtk.main()
