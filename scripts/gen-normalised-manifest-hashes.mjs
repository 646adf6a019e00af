// Generates tests/data/normalised-manifest-hash-vectors.json: for describe answers LumiAgent
// accepts (the corpus LumiRealm answer and answers in the older and looser forms it still
// accepts), the manifestHash LumiAgent stores in phoneline-pairings.json. It follows
// ../shared/specs/upstream-behaviour.md ("LumiAgent's registry and pairing records") literally:
// normalise the answer, overwrite extension.id and extension.name with the registry's values,
// then the lowercase hex SHA-256 of JSON.stringify of that object. Run from the repository root:
//   node scripts/gen-normalised-manifest-hashes.mjs
// The Rust test tests/manifest_hash_vectors.rs checks switchboard's hash against every vector.
//
// It also writes tests/data/phoneline-pairings.sample.json: a pairings file as the host would
// write it with JSON.stringify(file, null, 2), with unknown fields at every level, whose
// lumirealm record carries the real LumiRealm answer's manifestHash (tests/phone_line_pairings.rs,
// tests/phone_line_corpus.rs), and tests/data/phoneline-pairings.lumiagent.json: the same record
// exactly as LumiAgent writes the file (compact JSON.stringify(file)).
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const corpus = join(root, "..", "shared", "corpus", "lumiverse", "lumirealm.describe.json");
const REGISTRY = { identifier: "lumirealm", name: "LumiRealm" };
const SCOPES = ["global", "per_character"];
const isObject = (v) => v !== null && typeof v === "object";

// A surface keeps exactly id, label, description ("" when absent or not a string) and scope, in
// that order; without string id/label or a known scope it is dropped; {kind} becomes the string.
function surface(s) {
  if (!isObject(s) || typeof s.id !== "string" || typeof s.label !== "string") return null;
  let scope;
  if (typeof s.scope === "string" && SCOPES.includes(s.scope)) scope = s.scope;
  else if (isObject(s.scope) && SCOPES.includes(s.scope.kind)) scope = s.scope.kind;
  else return null;
  return { id: s.id, label: s.label, description: typeof s.description === "string" ? s.description : "", scope };
}

// extension keeps id and name (strings, or the answer is dropped) and version only when a string;
// the manifest's keys are extension, surfaces (an array, or the answer is dropped), then
// excludeFromSearch (its string entries; left out when the answer has no array there).
function normalise(raw) {
  if (!isObject(raw) || !isObject(raw.extension)) return null;
  const e = raw.extension;
  if (typeof e.id !== "string" || typeof e.name !== "string" || !Array.isArray(raw.surfaces)) return null;
  const extension = { id: e.id, name: e.name };
  if (typeof e.version === "string") extension.version = e.version;
  const out = { extension, surfaces: raw.surfaces.map(surface).filter((s) => s !== null) };
  if (Array.isArray(raw.excludeFromSearch)) out.excludeFromSearch = raw.excludeFromSearch.filter((x) => typeof x === "string");
  return out;
}

const real = readFileSync(corpus, "utf8");
const legacy = JSON.parse(real);
legacy.surfaces[0].scope = { kind: "per_character" };
const legacyOld = JSON.parse(real);
legacyOld.surfaces = [
  { id: "module_envelope", label: "Risu modules", scope: { kind: "per_character" }, item_kind: "module", fields: [{ path: "lua", label: "Lua" }] },
  { id: "lore", label: "Lorebook", scope: { kind: "global" } },
];
const cases = [
  ["lumirealm describe (corpus)", real],
  ["legacy scope {kind} (corpus otherwise)", JSON.stringify(legacy, null, 2)],
  ["legacy surfaces with item_kind and fields[], no description", JSON.stringify(legacyOld)],
  [
    "loose answer: unknown fields, non-string version and description, unusable surfaces and exclusions",
    '{"surfaces":[{"scope":"global","label":"G","id":"g","description":7,"icon":"☎"},{"id":"x","scope":"global"},{"id":"y","label":"Y","scope":"weekly"},{"id":"z","label":"Z","scope":{"kind":"monthly"}},null,5,{"id":"p","label":"P","scope":{"kind":"per_character","extra":1},"description":"per ✓"}],"future":{"a":1},"extension":{"version":2,"name":"LumiRealm","id":"lumiagent","build":"x"},"excludeFromSearch":["lumirealm.a",3,null,"lumirealm.b[0]"]}',
  ],
  [
    "excludeFromSearch not an array, no version",
    '{"extension":{"id":"lumirealm","name":"LumiRealm"},"surfaces":[],"excludeFromSearch":"lumirealm.source"}',
  ],
];

const vectors = cases.map(([name, text]) => {
  const n = normalise(JSON.parse(text));
  if (n === null) throw new Error(`${name}: LumiAgent would drop this answer`);
  const trusted = { ...n, extension: { ...n.extension, id: REGISTRY.identifier, name: REGISTRY.name } };
  const stringify = JSON.stringify(trusted);
  const sha256 = createHash("sha256").update(stringify, "utf8").digest("hex");
  return { name, answer_text: text, normalised: stringify, sha256 };
});

const out = join(root, "tests", "data", "normalised-manifest-hash-vectors.json");
writeFileSync(
  out,
  JSON.stringify({ generator: "scripts/gen-normalised-manifest-hashes.mjs", node: process.version, registry: REGISTRY, vectors }, null, 2) + "\n",
);
console.log(`wrote ${vectors.length} vectors to ${out}`);

const record = {
  identifier: "lumirealm",
  displayName: "LumiRealm",
  allowed: true,
  manifestHash: vectors[0].sha256,
  decidedAt: 1726000000000,
};
const sample = {
  version: 1,
  hostNote: "written by scripts/gen-normalised-manifest-hashes.mjs",
  pairings: {
    lumirealm: { ...record, reviewedBy: { who: "🦊 ミミ", at: [1, 2.5, null] } },
    "risu-notes": {
      extraFirst: "unknown before the known fields",
      identifier: "risu-notes",
      displayName: "Risu \"Notes\"\n\u2028",
      allowed: false,
      manifestHash: vectors[4].sha256,
      decidedAt: 1726000123456,
    },
  },
  trailer: { empty: {}, list: [], n: 1e21 },
};
writeFileSync(join(root, "tests", "data", "phoneline-pairings.sample.json"), JSON.stringify(sample, null, 2));
writeFileSync(join(root, "tests", "data", "phoneline-pairings.lumiagent.json"), JSON.stringify({ version: 1, pairings: { lumirealm: record } }));
console.log("wrote tests/data/phoneline-pairings.sample.json and tests/data/phoneline-pairings.lumiagent.json");
