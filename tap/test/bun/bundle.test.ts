// The install scanner's rules on the real thing: the example extension is bundled exactly as
// the Lumiverse host bundles an extension (`bun build src/backend.ts --target bun`, with
// switchboard-tap resolved from node_modules as `bun install` leaves it) and the bundle is
// checked with test/scan.ts. A regression (a node:fs import, process.env, …) fails here with the
// host's label and the offending text. Runs under `bun test` (npm run test:bun).

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { scanBundle, type Finding } from "../scan.js";

const tapDir = join(fileURLToPath(new URL(".", import.meta.url)), "../../..");
const BunGlobal = (globalThis as { Bun?: { Transpiler: new (o: { loader: string }) => { transformSync(s: string): string } } }).Bun;

function bun(): string {
  if (!BunGlobal) throw new Error("this test runs under bun test (npm run test:bun): the host bundles with Bun");
  return process.execPath;
}

/** An extension folder with `files`, switchboard-tap linked in its node_modules. */
function extensionDir(files: Record<string, string>, withExample = false): string {
  const dir = mkdtempSync(join(tmpdir(), "tap-bundle-"));
  if (withExample) {
    for (const f of ["spindle.json", "package.json", "src"]) cpSync(join(tapDir, "example", f), join(dir, f), { recursive: true });
  }
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(join(dir, p, ".."), { recursive: true });
    writeFileSync(join(dir, p), text);
  }
  mkdirSync(join(dir, "node_modules"), { recursive: true });
  symlinkSync(tapDir, join(dir, "node_modules/switchboard-tap"), "dir");
  return dir;
}

/** `bun build <entry> --outfile dist/<out> --target <target>` in `dir`, as the host runs it. */
function build(dir: string, entry: string, out: string, target: "bun" | "browser"): string {
  const r = spawnSync(bun(), ["build", entry, "--outfile", `dist/${out}`, "--target", target], { cwd: dir, encoding: "utf8", timeout: 60_000 });
  assert.equal(r.status, 0, `bun build ${entry} failed:\n${r.stdout}${r.stderr}`);
  return readFileSync(join(dir, "dist", out), "utf8");
}

function scan(text: string): Finding[] {
  return scanBundle(text, new BunGlobal!.Transpiler({ loader: "js" }).transformSync(text));
}

const say = (fs: Finding[]) => fs.map((f) => `${f.label}: …${f.text}…`).join("\n");

test("the example extension's backend, bundled as the host does, uses nothing the host blocks", () => {
  const dir = extensionDir({}, true);
  const bundle = build(dir, "src/backend.ts", "backend.js", "bun");
  assert.ok(bundle.includes("x-ifp-pinned-proof") && bundle.includes("switchboard-tap/state.json"), "the tap itself is in the bundle (not left external, where the scan would not see it)");
  const findings = scan(bundle);
  assert.deepEqual(findings, [], `the host would refuse the example:\n${say(findings)}`);
  // The frontend piece bundles for the browser too (the host builds src/frontend.ts --target browser).
  const fe = build(dir, "src/frontend.ts", "frontend.js", "browser");
  assert.match(fe, /Verification code/);
  assert.doesNotMatch(fe, /node:crypto/, "nothing of the backend in the frontend bundle");
});

test("the checker catches what the host blocks, with its label and the text, and skips strings and comments", () => {
  const dir = extensionDir({
    "src/backend.ts": `import { readFileSync } from "node:fs";\nimport { createTap } from "switchboard-tap";\nexport const x = [readFileSync, createTap];\n`,
  });
  const findings = scan(build(dir, "src/backend.ts", "backend.js", "bun"));
  assert.deepEqual([...new Set(findings.map((f) => f.label))], ["filesystem module access"], say(findings));
  assert.ok(findings.every((f) => /from "(node:)?fs"/.test(f.text)), say(findings));

  const cases: Array<[string, string[]]> = [
    [`const k = process.env.HOME;`, ["dangerous process API usage"]],
    [`const p = process; p.exit(1);`, ["dangerous process API usage"]],
    [`const { spawn } = Bun;`, ["dangerous Bun system API usage"]],
    [`Bun["file"]("x");`, ["dangerous Bun system API usage"]],
    [`const m = "fs"; await import(m);`, ["dynamic module access"]],
    [`require("node:" + "tls");`, ["direct socket module access"]],
    [`eval("1");`, ["dynamic code execution"]],
    [`new Function("")`, []],
    [`Buffer.from(s, "base64");`, ["base64 decoding"]],
    [`Buffer.from(s, "base64url");`, []],
    [`const t = "process.env and Bun.file and import(x)"; // eval(1) require(y)\n/* node:fs */ const r = /process\\.env/;`, []],
    ["const t = `text process.env ${ 1 + 1 } Bun.spawn`;", []],
    ["const t = `${ process.env.X }`;", ["dangerous process API usage"]],
  ];
  for (const [src, want] of cases) {
    assert.deepEqual([...new Set(scan(src).map((f) => f.label))], want, src);
  }
});
