#!/usr/bin/env bash
# Builds Switchboard's Linux packages, a .deb and an .rpm, from this checkout: the front end, a
# release build of the app (switchboard-desktop) and of the `switchboard` command line, the CLI's
# man pages and bash/zsh/fish completions (written by the switchboard-gen-docs bin, never
# committed), then the Tauri bundler (the npm package @tauri-apps/cli, a dev dependency of ui/)
# with what tauri.conf.json's bundle.linux section lists.
#
# Usage: bash scripts/package.sh [--profile PROFILE] [--bundles deb,rpm] [--front-end-built]
#   --profile  the cargo profile (default: release; the test command packages `dev`: the build
#              `cargo test --workspace` makes, so after cargo test nothing is compiled again)
#   --bundles  which packages (default: deb,rpm)
#   --front-end-built  ui/dist is this checkout's build already (scripts/test.sh built it): not
#              built again, so the app built from it stays up to date and the Windows check
#              running beside it never sees ui/dist half written
# Output: target/package/*.deb and *.rpm (their paths are printed last, one a line). On macOS
# and Windows (Git Bash), --bundles dmg / msi makes those instead (not tested by CI).
#
# AppImage is not built here: the bundler downloads its tools (linuxdeploy, appimagetool) from
# the internet; README.md says how to build one where that is allowed. macOS (.dmg) and
# Windows (.msi) are configured in tauri.conf.json and built on those systems (README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

profile=release
bundles=deb,rpm
front_end=1
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile="${2:?--profile needs a value}"; shift 2 ;;
    --bundles) bundles="${2:?--bundles needs a value}"; shift 2 ;;
    --front-end-built) front_end=0; shift ;;
    *) echo "package.sh: unknown argument $1 (usage: bash scripts/package.sh [--profile P] [--bundles deb,rpm] [--front-end-built])" >&2; exit 2 ;;
  esac
done
case "$profile" in dev) profile_dir=debug ;; *) profile_dir="$profile" ;; esac
exe=""
case "$(uname -s)" in MINGW* | MSYS* | CYGWIN*) exe=".exe" ;; esac

bash scripts/install-deps.sh

# Where cargo puts its output (CARGO_TARGET_DIR, .cargo/config.toml or ./target), and the
# workspace's version (one version for everything: CHANGELOG.md).
meta() {
  cargo metadata --format-version 1 --no-deps --offline --locked |
    node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const m=JSON.parse(s);console.log('"$1"')})'
}
target_dir=$(meta 'm.target_directory')
version=$(meta 'm.packages.find(p=>p.name==="switchboard-desktop").version')
out="$root/target/package"
stage="$out/stage"
rm -rf "$out"
mkdir -p "$stage/bin" "$stage/man1" "$stage/completions"

if [ "$front_end" = 1 ]; then
  echo "==> front end (ui/dist, embedded in the app)"
  (cd ui && npm run build --silent)
else
  [ -f ui/dist/index.html ] || { echo "package.sh: --front-end-built, but ui/dist/index.html is missing" >&2; exit 1; }
fi

t0=$(date +%s)
if [ "$profile" = dev ]; then
  # The dev build is the one `cargo test --workspace` makes (its bins, with the features the
  # tests' dependencies add): after cargo test, as in scripts/test.sh, nothing is compiled again.
  # A build of these bins alone would resolve other features and compile ~600 crates anew.
  echo "==> cargo test --workspace --no-run (the dev build: the app, the CLI, the docs writer)"
  cargo test --workspace --locked --no-run
else
  echo "==> cargo build --profile $profile (the app, the CLI, the docs writer)"
  cargo build --locked --profile "$profile" -p switchboard-desktop -p switchboard \
    --bin switchboard-desktop --bin switchboard --bin switchboard-gen-docs
fi
echo "    built in $(( $(date +%s) - t0 ))s"
bin="$target_dir/$profile_dir"

echo "==> man pages and shell completions"
"$bin/switchboard-gen-docs$exe" "$stage/docs"
for page in "$stage"/docs/man/*.1; do
  gzip -9n -c "$page" > "$stage/man1/$(basename "$page").gz"
done
cp "$stage"/docs/completions/* "$stage/completions/"
install -m 0755 "$bin/switchboard$exe" "$stage/bin/switchboard$exe"

echo "==> Tauri bundler: $bundles"
# The bundler runs in a folder of its own (packaging/bundle-app.mjs says why) and takes the app
# from <cargo target>/release/<mainBinaryName>: give it a target folder holding this build's
# app, so any profile can be packaged and the bundler's change to the binary (it records the
# package type in it) never touches cargo's copy.
node packaging/bundle-app.mjs "$root" "$out/app" "$version"
bundle_target="$out/cargo-target"
mkdir -p "$bundle_target/release"
install -m 0755 "$bin/switchboard-desktop$exe" "$bundle_target/release/switchboard-desktop$exe"
TAURI_APP_PATH="$out/app" TAURI_FRONTEND_PATH="$root/ui" CARGO_TARGET_DIR="$bundle_target" \
  ui/node_modules/.bin/tauri bundle --ci --bundles "$bundles"

shopt -s nullglob
made=("$bundle_target"/release/bundle/deb/*.deb "$bundle_target"/release/bundle/rpm/*.rpm
  "$bundle_target"/release/bundle/dmg/*.dmg "$bundle_target"/release/bundle/msi/*.msi)
if [ ${#made[@]} -eq 0 ]; then
  echo "package.sh: the bundler made no package (see its output above)" >&2
  exit 1
fi
for f in "${made[@]}"; do
  cp "$f" "$out/"
done
echo "==> packages"
for f in "${made[@]}"; do
  echo "$out/$(basename "$f")"
done
