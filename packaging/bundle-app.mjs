// Writes the folder the Tauri bundler runs in (scripts/package.sh points TAURI_APP_PATH at it).
//
// The bundler packages every [[bin]] of the Cargo manifest beside tauri.conf.json. Ours is at
// the repository root, beside the root package `switchboard`, whose bins include the phone
// simulator (switchboard-phone) and the docs writer, which must stay out of the packages. So
// the bundler gets a folder of its own: a copy of tauri.conf.json with every relative path made
// absolute (they resolve against the config's folder), and a manifest naming only the app's
// binary, with the workspace's version and the app's description.
//
// Usage: node packaging/bundle-app.mjs ROOT OUT_DIR VERSION
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";

const [root, out, version] = process.argv.slice(2);
if (!root || !out || !version) {
  console.error("usage: node packaging/bundle-app.mjs ROOT OUT_DIR VERSION");
  process.exit(2);
}
const abs = (p) => (isAbsolute(p) ? p : resolve(root, p));
const config = JSON.parse(readFileSync(join(root, "tauri.conf.json"), "utf8"));
if (config.version !== version) {
  console.error(`tauri.conf.json has version ${config.version}, the workspace ${version}: make them one`);
  process.exit(1);
}
config.build.frontendDist = abs(config.build.frontendDist);
config.bundle.icon = config.bundle.icon.map(abs);
for (const kind of ["deb", "rpm"]) {
  const files = config.bundle.linux?.[kind]?.files ?? {};
  for (const [dest, src] of Object.entries(files)) files[dest] = abs(src);
}
mkdirSync(out, { recursive: true });
writeFileSync(join(out, "tauri.conf.json"), JSON.stringify(config, null, 2));
writeFileSync(join(out, "main.rs"), "fn main() {}\n");
writeFileSync(
  join(out, "Cargo.toml"),
  `# Written by packaging/bundle-app.mjs for the Tauri bundler only; never built.
[workspace]

[package]
name = "switchboard-desktop"
version = "${version}"
edition = "2021"
license = "MIT OR Apache-2.0"
description = ${JSON.stringify(config.bundle.shortDescription)}
authors = [${JSON.stringify(config.bundle.publisher)}]

[[bin]]
name = "${config.mainBinaryName}"
path = "main.rs"
`,
);
