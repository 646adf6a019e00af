#!/usr/bin/env bash
# Checks the packages scripts/package.sh made, then installs the .deb on this machine, uses it
# the way a person would and removes it again:
#   1. the .deb's fields and file list (every file it should hold, with its mode; nothing it
#      should not: the phone simulator, the docs writer), the .rpm's file list;
#   2. every library the installed programs load (ldd, and the tray's libayatana-appindicator,
#      which is opened at run time) belongs to a package in the closure of the declared Depends,
#      so `apt-get install ./switchboard.deb` on a fresh Debian or Ubuntu brings it;
#   3. the AppStream metainfo (`appstreamcli validate`, offline: its URLs are not fetched) and
#      the desktop entry (`desktop-file-validate`);
#   4. `apt-get install ./<deb>`, then every file in place;
#   5. the app started from its installed desktop entry (Exec=) under Xvfb, D-Bus and an
#      unlocked gnome-keyring, to its first window: screenshot target/package/installed-app.png;
#   6. the installed `switchboard --version` and `info --json`, `man switchboard` rendering, the
#      bash completion loading;
#   7. `apt-get purge`, then nothing left: no file of the package, no folder it created, no
#      process.
# Needs root (or sudo) for apt-get: CI runs as root. A check that cannot run fails.
# Usage: bash scripts/check-package.sh target/package/switchboard_*.deb [target/package/*.rpm]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
deb="${1:?usage: bash scripts/check-package.sh DEB [RPM]}"
rpm_file="${2:-}"
deb=$(readlink -f "$deb")
fail() { echo "check-package: $*" >&2; exit 1; }
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
for tool in dpkg-deb apt-get apt-cache appstreamcli desktop-file-validate man Xvfb xdotool \
  xprop import convert dbus-run-session gnome-keyring-daemon rpm; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool is missing: run bash scripts/install-deps.sh"
done
version=$(cargo metadata --format-version 1 --no-deps --offline --locked |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).packages.find(p=>p.name==="switchboard").version))')
pkg=switchboard
work=$(mktemp -d /tmp/switchboard-pkgcheck.XXXXXX)
app_pid=""
xvfb_pid=""
home="$work/home"
# The installed app, the D-Bus session and the key ring started for it all run with its own
# HOME (below): they are found by that, so nothing else on the machine is touched, and none of
# them outlives this script, however it ends.
session_pids() {
  local p
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" != "$$" ] || continue
    tr '\0' '\n' < "$p/environ" 2>/dev/null | grep -qxF "HOME=$home" && echo "${p#/proc/}"
  done
  return 0
}
# Processes running the installed app (by executable, so other copies of Switchboard running on
# the machine, e.g. from a cargo build, do not count).
installed_app_pids() {
  local exe
  for exe in /proc/[0-9]*/exe; do
    case "$(readlink "$exe" 2>/dev/null)" in /usr/bin/switchboard-desktop*) exe=${exe#/proc/}; echo "${exe%/exe}" ;; esac
  done
}
installed_app_running() { [ -n "$(installed_app_pids)" ]; }
cleanup() {
  local p
  for p in $(session_pids); do kill "$p" 2>/dev/null || true; done
  [ -n "$xvfb_pid" ] && kill "$xvfb_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "--- 1. the .deb: $deb"
[ "$(dpkg-deb -f "$deb" Package)" = "$pkg" ] || fail "package name is not $pkg"
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "package version $(dpkg-deb -f "$deb" Version) is not the workspace's $version"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
echo "Recommends: $(dpkg-deb -f "$deb" Recommends)"
echo "file list (dpkg -c):"
dpkg -c "$deb" | tee "$work/list.txt"
# path -> mode, for regular files and links (leading ./ dropped)
awk '$1 !~ /^d/ {p=$6; sub(/^\.\//,"",p); print "/" p, $1}' "$work/list.txt" | sort > "$work/files.txt"
has() { # path [mode]
  local line
  line=$(grep -E "^$(printf '%s' "$1" | sed 's/[][\.*^$]/\\&/g') " "$work/files.txt") || fail "the .deb lacks $1"
  [ -z "${2:-}" ] || [ "${line##* }" = "$2" ] || fail "$1 has mode ${line##* }, expected $2"
}
has /usr/bin/switchboard-desktop -rwxr-xr-x
has /usr/bin/switchboard -rwxr-xr-x
has /usr/share/applications/Switchboard.desktop -rw-r--r--
has /usr/share/metainfo/dev.switchboard.desktop.metainfo.xml -rw-r--r--
for s in 16 22 24 32 48 64 96 128 256 512; do
  has "/usr/share/icons/hicolor/${s}x${s}/apps/switchboard-desktop.png" -rw-r--r--
done
has /usr/share/icons/hicolor/scalable/apps/switchboard-desktop.svg -rw-r--r--
has /usr/share/bash-completion/completions/switchboard -rw-r--r--
has /usr/share/zsh/vendor-completions/_switchboard -rw-r--r--
has /usr/share/fish/vendor_completions.d/switchboard.fish -rw-r--r--
has /usr/share/doc/switchboard/copyright -rw-r--r--
# One man page per command and subcommand, as switchboard-gen-docs wrote them.
pages=0
for page in target/package/stage/docs/man/*.1; do
  has "/usr/share/man/man1/$(basename "$page").gz" -rw-r--r--
  pages=$((pages + 1))
done
[ "$pages" -ge 8 ] || fail "only $pages man pages were written (target/package/stage/docs/man)"
# Every page a page names (SEE ALSO, SUBCOMMANDS: `switchboard\-pair(1)`) is in the package.
for named in $(cat target/package/stage/docs/man/*.1 | grep -o 'switchboard[a-z\\-]*(1)' | sed -e 's/\\//g' -e 's/(1)$//' | sort -u); do
  [ -f "target/package/stage/docs/man/$named.1" ] || fail "a man page names $named(1), which is not written"
done
! grep -Eq '^/usr/bin/switchboard-phone |^/usr/bin/switchboard-gen-docs |switchboard-gen-docs' "$work/files.txt" ||
  fail "the .deb holds the phone simulator or the docs writer"
echo "ok: $(wc -l < "$work/files.txt") files, $pages man pages, icons at 10 sizes and scalable"

if [ -n "$rpm_file" ]; then
  echo "--- the .rpm: $rpm_file"
  rpm -qpl "$rpm_file" > "$work/rpm.txt"
  for f in /usr/bin/switchboard-desktop /usr/bin/switchboard /usr/share/applications/Switchboard.desktop \
    /usr/share/metainfo/dev.switchboard.desktop.metainfo.xml /usr/share/man/man1/switchboard.1.gz \
    /usr/share/bash-completion/completions/switchboard /usr/share/zsh/site-functions/_switchboard \
    /usr/share/fish/vendor_completions.d/switchboard.fish \
    /usr/share/icons/hicolor/scalable/apps/switchboard-desktop.svg; do
    grep -qx "$f" "$work/rpm.txt" || fail "the .rpm lacks $f"
  done
  ! grep -Eq '^/usr/bin/switchboard-phone$|switchboard-gen-docs' "$work/rpm.txt" || fail "the .rpm holds the phone simulator"
  [ "$(rpm -qp --qf '%{VERSION}' "$rpm_file")" = "$version" ] || fail "the .rpm's version is not $version"
  echo "rpm requires: $(rpm -qpR "$rpm_file" | grep -v '^rpmlib' | tr '\n' ' ')"
  echo "ok: $(wc -l < "$work/rpm.txt") files"
fi

echo "--- 2. what the programs load is declared"
dpkg-deb -x "$deb" "$work/x"
# shellcheck disable=SC2086
closure=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
  --no-replaces --no-enhances $(echo "$depends" | tr ',' '\n' | sed 's/(.*)//; s/|.*//; s/ //g') |
  grep -v '^ ' | tr -d '<>' | sort -u)
{
  for b in "$work"/x/usr/bin/*; do
    ldd "$b" | awk '$3 ~ /^\// {print $3}'
  done
  # dlopen()ed by the tray (libappindicator-sys), so ldd cannot see it
  echo /usr/lib/x86_64-linux-gnu/libayatana-appindicator3.so.1
} | sort -u > "$work/libs.txt"
missing=0
while read -r lib; do
  owner=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null || dpkg -S "$lib" 2>/dev/null) ||
    fail "no Debian package owns $lib"
  owner=${owner%%:*}
  if ! grep -qx "$owner" <<< "$closure"; then
    echo "not declared: $lib ($owner)" >&2
    missing=1
  fi
done < "$work/libs.txt"
[ "$missing" -eq 0 ] || fail "add the packages above to bundle.linux.deb.depends in tauri.conf.json"
echo "ok: $(wc -l < "$work/libs.txt") libraries, each from a package the Depends bring"

echo "--- 3. AppStream metainfo and desktop entry"
metainfo="$work/x/usr/share/metainfo/dev.switchboard.desktop.metainfo.xml"
appstreamcli validate --pedantic --no-net "$metainfo"
desktop-file-validate "$work/x/usr/share/applications/Switchboard.desktop"
echo "ok: desktop-file-validate found nothing"
# The screenshots are the repository's own (docs/img): each URL ends in a file that exists.
grep -o '<image>[^<]*</image>' "$metainfo" | sed 's#<image>.*/main/##; s#</image>##' > "$work/shots.txt"
[ -s "$work/shots.txt" ] || fail "the metainfo has no screenshots"
while read -r shot; do
  [ -f "$root/$shot" ] || fail "metainfo screenshot $shot is not in the repository"
done < "$work/shots.txt"
echo "ok: screenshots $(tr '\n' ' ' < "$work/shots.txt")"

echo "--- 4. apt-get install $deb"
if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
  echo "an earlier $pkg is installed (a run cut short?): purging it first"
  $SUDO apt-get purge -y -qq "$pkg" >/dev/null
fi
# The folders the package would create, to check after the purge that they are gone again.
awk '$1 ~ /^d/ {p=$6; sub(/^\.\//,"",p); sub(/\/$/,"",p); if (p != "" && p != ".") print "/" p}' "$work/list.txt" |
  while read -r d; do [ -e "$d" ] || echo "$d"; done > "$work/new-dirs.txt"
t0=$(date +%s)
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "$deb"
echo "installed in $(( $(date +%s) - t0 ))s"
dpkg-query -W -f='${Status} ${Version}\n' "$pkg"
while read -r f _; do
  [ -e "$f" ] || fail "$f is not on disk after the install"
done < "$work/files.txt"
[ "$(command -v switchboard)" = /usr/bin/switchboard ] || fail "switchboard is not on PATH as /usr/bin/switchboard"
[ "$(command -v switchboard-desktop)" = /usr/bin/switchboard-desktop ] || fail "switchboard-desktop is not on PATH"
! command -v switchboard-phone >/dev/null 2>&1 || [ "$(command -v switchboard-phone)" != /usr/bin/switchboard-phone ] ||
  fail "the phone simulator was installed"
echo "ok: every file in place"

echo "--- 5. start the installed app from its desktop entry"
entry=/usr/share/applications/Switchboard.desktop
exec_line=$(sed -n 's/^Exec=//p' "$entry" | head -n1)
[ -n "$exec_line" ] || fail "$entry has no Exec="
# Field codes (%f, %U, ...) expand to nothing here (no files given).
read -r -a exec_argv <<< "$(sed -E 's/ ?%[fFuUdDnNickvm]//g' <<< "$exec_line")"
echo "Exec=$exec_line -> ${exec_argv[*]} (resolved: $(command -v "${exec_argv[0]}"))"
wm_class=$(sed -n 's/^StartupWMClass=//p' "$entry")
mkdir -p "$home"
xvfb_log="$work/xvfb.log"
Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp -noreset 3> "$work/display" 2> "$xvfb_log" &
xvfb_pid=$!
for _ in $(seq 1 100); do [ -s "$work/display" ] && break; sleep 0.1; done
[ -s "$work/display" ] || fail "Xvfb gave no display (see $xvfb_log)"
display=":$(cat "$work/display")"
shot="$root/target/package/installed-app.png"
# The app runs as a person's session would: its own HOME (so its folders are the XDG ones under
# it), a D-Bus session and an unlocked gnome-keyring (the key store it needs for the link).
env -i PATH=/usr/bin:/bin HOME="$home" DISPLAY="$display" LANG=C.UTF-8 \
  dbus-run-session -- bash -c 'echo -n test | gnome-keyring-daemon --unlock --components=secrets >/dev/null
    exec "$@"' _ "${exec_argv[@]}" > "$work/app.log" 2>&1 &
app_pid=$!
window=""
for _ in $(seq 1 240); do
  window=$(DISPLAY="$display" xdotool search --onlyvisible --name '^Switchboard$' 2>/dev/null | head -n1) || true
  [ -n "$window" ] && break
  kill -0 "$app_pid" 2>/dev/null || { cat "$work/app.log" >&2; fail "the installed app exited before its window"; }
  sleep 0.25
done
[ -n "$window" ] || { cat "$work/app.log" >&2; fail "no Switchboard window within 60 s"; }
class=$(DISPLAY="$display" xprop -id "$window" WM_CLASS)
echo "first window: $window, $class"
grep -q "\"$wm_class\"" <<< "$class" || fail "the window's WM_CLASS ($class) does not match StartupWMClass=$wm_class"
colours=0
for _ in $(seq 1 30); do
  sleep 1
  DISPLAY="$display" import -window root "$shot" 2>/dev/null || continue
  colours=$(convert "$shot" -format '%k' info: 2>/dev/null || echo 0)
  [ "$colours" -gt 200 ] && break
done
[ "$colours" -gt 200 ] || fail "the window looks blank ($colours colours) in $shot"
echo "screenshot: $shot ($colours colours)"
# The app itself, not the dbus-run-session it runs under ($app_pid).
app=$(installed_app_pids | head -n1)
[ -n "$app" ] || fail "no /usr/bin/switchboard-desktop process while its window is up"
kill -TERM "$app"
for _ in $(seq 1 100); do [ -e "/proc/$app" ] || break; sleep 0.1; done
[ ! -e "/proc/$app" ] || fail "the app (pid $app) did not quit within 10 s of SIGTERM"
wait "$app_pid" 2>/dev/null || true
app_pid=""
# The key ring daemonises itself and outlives the session: stop what is left of it.
for p in $(session_pids); do kill "$p" 2>/dev/null || true; done
kill "$xvfb_pid" 2>/dev/null || true
wait "$xvfb_pid" 2>/dev/null || true
xvfb_pid=""
[ -d "$home/.config/dev.switchboard.desktop" ] || fail "the app kept no settings folder in \$HOME/.config (its XDG config folder)"
echo "ok: started from $entry, quit on SIGTERM"

echo "--- 6. the installed command line, its man page and completions"
out=$(switchboard --version)
echo "$ switchboard --version"
echo "$out"
[ "$out" = "switchboard $version" ] || fail "switchboard --version says '$out', expected 'switchboard $version'"
# (read whole first: `grep -q` in a pipe would close it early and fail the writer under pipefail)
info=$(switchboard info --json) || fail "switchboard info --json failed"
grep -q "\"version\": *\"$version\"" <<<"$info" || fail "switchboard info --json does not give version $version"
[ "$(switchboard-desktop --version)" = "switchboard-desktop $version" ] || fail "switchboard-desktop --version is not $version"
[ "$(man -w switchboard)" = /usr/share/man/man1/switchboard.1.gz ] || fail "man finds $(man -w switchboard), not the package's page"
echo "$ man switchboard"
MANWIDTH=100 man -P cat switchboard 2>"$work/man.err" | tee "$work/man.txt"
[ ! -s "$work/man.err" ] || { cat "$work/man.err" >&2; fail "man switchboard printed warnings"; }
for word in NAME SYNOPSIS DESCRIPTION SUBCOMMANDS explain-error "$version"; do
  grep -q -- "$word" "$work/man.txt" || fail "man switchboard lacks '$word'"
done
MANWIDTH=100 man -P cat switchboard-dials-check >"$work/man-check.txt" 2>&1 || fail "man switchboard-dials-check failed"
grep -q 'switchboard dials check' "$work/man-check.txt" || fail "man switchboard-dials-check does not render"
bash -c 'source /usr/share/bash-completion/completions/switchboard && complete -p switchboard' ||
  fail "the bash completion does not load"
echo "ok: version $version, man pages render, bash completion loads"

echo "--- 7. apt-get purge $pkg"
$SUDO apt-get purge -y "$pkg"
! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "installed" || fail "$pkg is still installed"
left=0
while read -r f _; do
  if [ -e "$f" ] || [ -L "$f" ]; then echo "left behind: $f" >&2; left=1; fi
done < "$work/files.txt"
while read -r d; do
  if [ -e "$d" ]; then echo "left behind: folder $d" >&2; left=1; fi
done < "$work/new-dirs.txt"
! installed_app_running || { echo "left behind: a switchboard-desktop process" >&2; left=1; }
[ "$left" -eq 0 ] || fail "the purge left things behind (above)"
echo "ok: no file, folder or process left ($(wc -l < "$work/files.txt") files and $(wc -l < "$work/new-dirs.txt") folders checked)"
