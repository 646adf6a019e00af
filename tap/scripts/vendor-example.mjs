// Copies the built package into example/vendor/switchboard-tap, the `file:` dependency of the
// example extension: the host's import-local moves the extension's folder, so its dependency
// must live inside it (`bun install --ignore-scripts` then copies it into node_modules).
import { cpSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const tap = join(dirname(fileURLToPath(import.meta.url)), "..");
const to = join(tap, "example/vendor/switchboard-tap");
rmSync(to, { recursive: true, force: true });
mkdirSync(join(to, "dist"), { recursive: true });
for (const f of ["package.json", "README.md"]) cpSync(join(tap, f), join(to, f));
cpSync(join(tap, "dist/src"), join(to, "dist/src"), { recursive: true });
console.log(`vendored switchboard-tap into ${to}`);
