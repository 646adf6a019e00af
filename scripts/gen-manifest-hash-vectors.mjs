// Generates tests/data/manifest-hash-vectors.json: for each describe manifest given as JSON text,
// what JavaScript computes for JSON.stringify(JSON.parse(text)) and the lowercase hex
// SHA-256 of its UTF-8 bytes. Run from the repository root:
//   node scripts/gen-manifest-hash-vectors.mjs
// The Rust test tests/manifest_hash_vectors.rs checks switchboard::js_json::stringify and
// sha256_hex against every vector.
//
// These are JSON.stringify vectors of answers as received; the manifestHash LumiAgent stores is
// of the normalised answer: see scripts/gen-normalised-manifest-hashes.mjs.
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const corpus = join(root, "..", "shared", "corpus", "lumiverse", "lumirealm.describe.json");

const cases = [
  ["lumirealm describe (corpus)", readFileSync(corpus, "utf8")],
  [
    "minimal",
    '{"extension":{"id":"x","name":"X","version":"1.0.0"},"surfaces":[],"excludeFromSearch":[]}',
  ],
  [
    "cjk and emoji",
    '{"extension":{"id":"cjk","name":"漢字かなカナ한글","version":"0.1.0"},"surfaces":[{"id":"s","label":"😀 ˶ˆ꒳ˆ˵ 👩‍👩‍👧","scope":"global","description":"𠀋 supplementary plane, ｆｕｌｌｗｉｄｔｈ"}]}',
  ],
  [
    "escapes",
    '{"extension":{"id":"esc","name":"q\\"uote b\\\\ack \\/slash","version":"1"},"surfaces":[{"id":"c","label":"\\u0000\\u0001\\b\\f\\n\\r\\t\\u001f\\u007f","scope":"global","description":"line sep \\u2028 para sep \\u2029 escaped \\u00e9 é"}]}',
  ],
  [
    "nested objects and unknown fields",
    '{"extension":{"id":"n","name":"N","version":"2","extra":{"deep":{"deeper":{"deepest":[1,[2,[3,{"k":null}]]]}}}},"surfaces":[{"id":"a","label":"A","scope":{"kind":"per_character"},"x-meta":{"b":true,"a":false}}],"excludeFromSearch":["n.a","n.b[0]"],"future":{"list":[],"obj":{}}}',
  ],
  [
    "key orders",
    '{"surfaces":[],"zeta":1,"extension":{"version":"1","name":"K","id":"k"},"alpha":2,"2":"two","1":"one","10":"ten","01":"leading zero","4294967294":"max index","4294967295":"not an index","-1":"negative","1.5":"fraction","b":{"z":1,"y":2,"0":3},"dup":1,"dup":2}',
  ],
  [
    "numbers",
    '{"extension":{"id":"num","name":"Num","version":"1"},"surfaces":[],"n":[1.0,1e21,1e20,1e-7,1e-6,0.000001,0.1,0.30000000000000004,1.5e300,-1.5e-300,123456789012345678901234567890,12345678901234567890,9007199254740993,9007199254740992,-9007199254740993,-0,-0.0,0,100,1E2,2.5E-3,5e-324,1.7976931348623157e308,123.456,-42]}',
  ],
];

const vectors = cases.map(([name, text]) => {
  const stringify = JSON.stringify(JSON.parse(text));
  const sha256 = createHash("sha256").update(stringify, "utf8").digest("hex");
  return { name, manifest_text: text, stringify, sha256 };
});

const out = join(root, "tests", "data", "manifest-hash-vectors.json");
writeFileSync(out, JSON.stringify({ generator: "scripts/gen-manifest-hash-vectors.mjs", node: process.version, vectors }, null, 2) + "\n");
console.log(`wrote ${vectors.length} vectors to ${out}`);

