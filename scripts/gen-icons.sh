#!/usr/bin/env bash
# Regenerates the app icons from icons/icon.svg: the PNG sizes Tauri expects, a tray icon, and
# icon.ico for Windows, icon.icns for macOS. Needs rsvg-convert (librsvg2-bin), ImageMagick's
# convert and png2icns (icnsutils).
set -euo pipefail
cd "$(dirname "$0")/../icons"
render() { rsvg-convert -w "$1" -h "$1" icon.svg -o "$2"; }
# Every hicolor size the Linux packages install (/usr/share/icons/hicolor/NxN/apps; the SVG
# itself goes to scalable/apps), 128x128@2x for macOS, icon.png (512) as Tauri's default.
for s in 16 22 24 32 48 64 96 128 256; do render "$s" "${s}x${s}.png"; done
render 256 128x128@2x.png
render 512 icon.png
render 64 tray.png
# The tray icon while at least one phone is connected: the same with a green status dot.
sed 's#</svg>#  <circle cx="420" cy="420" r="84" fill="\#06d6a0" stroke="\#0f1c4d" stroke-width="20"/>\n</svg>#' icon.svg > tray-connected.svg
rsvg-convert -w 64 -h 64 tray-connected.svg -o tray-connected.png
rm -f tray-connected.svg
for s in 16 24 32 48 64 256; do render "$s" "ico-$s.png"; done
convert ico-16.png ico-24.png ico-32.png ico-48.png ico-64.png ico-256.png icon.ico
rm -f ico-*.png
# Tauri requires RGBA PNGs.
for f in 16x16.png 22x22.png 24x24.png 32x32.png 48x48.png 64x64.png 96x96.png 128x128.png \
  256x256.png 128x128@2x.png icon.png tray.png tray-connected.png; do
  convert "$f" -define png:color-type=6 "$f"
done
# macOS: icon.icns from the same PNGs (png2icns, Debian's icnsutils).
png2icns icon.icns 16x16.png 32x32.png 128x128.png 256x256.png icon.png
echo "icons written to $(pwd)"
