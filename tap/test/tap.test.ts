// Unit tests of switchboard-tap against a fake `spindle` that behaves as
// ../shared/specs/upstream-behaviour.md says the host does. The link itself is tested against
// the real desktop in tests/tap_node.rs.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTap, loadState, pairCommitment, parsePairingLink, redactError, shapeOf, verificationCode, type TapState } from "../src/index.js";
import { freshState, saveStateSync } from "../src/state.js";
import { dialAs, FakeHost, LUMIREALM_MANIFEST, lumirealmHandler } from "./fake-host.js";

const sha = async (s: string) => (await import("node:crypto")).createHash("sha256").update(s).digest("hex");
const bytes = (from: number) => Buffer.from(Array.from({ length: 32 }, (_, i) => from + i));

test("the pairing computations give docs/protocol.md's worked example", async () => {
  const fp = await sha("worked example certificate");
  assert.equal(fp, "3957933bf273ca69ee2601cdb7f87b731b126b0a241b2bbc2baba71a98680885");
  const desktopNonce = bytes(0);
  const phoneKey = bytes(64);
  assert.equal(pairCommitment(desktopNonce, fp, phoneKey), "L-tTDmi8NQErcMEnUUYJWpu-kbWlL9EMugmTa-AdjCo");
  assert.equal(verificationCode(desktopNonce, bytes(32), fp, phoneKey), "296 980");
  const second = bytes(32);
  second[0] = 0x25;
  assert.equal(verificationCode(desktopNonce, second, fp, phoneKey), "046 002", "six digits with leading zeros");
});

test("pairing links are parsed, and bad ones refused naming the part", () => {
  const fp = "a".repeat(64);
  assert.deepEqual(parsePairingLink(`switchboard://pair?addr=192.0.2.20&port=47470&code=123-456&fp=${fp}`), { host: "192.0.2.20", port: 47470, code: "123456", fp });
  assert.equal(parsePairingLink(`switchboard://pair?addr=fe80%3A%3A1&port=47470&code=123456&fp=${fp}`).host, "fe80::1");
  assert.throws(() => parsePairingLink(`https://pair?addr=x&port=1&code=123456&fp=${fp}`), /start with switchboard:\/\/pair\?/);
  assert.throws(() => parsePairingLink(`switchboard://pair?addr=x&port=99999&code=123456&fp=${fp}`), /bad port/);
  assert.throws(() => parsePairingLink(`switchboard://pair?addr=x&port=1&code=12345&fp=${fp}`), /code/);
  assert.throws(() => parsePairingLink(`switchboard://pair?addr=x&port=1&code=123456&fp=abc`), /fp/);
});

test("the fake host gives the three permission forms, sorted, as the real one does", async () => {
  const host = new FakeHost();
  host.grant("lumirealm", "push_notification", "characters");
  host.spindleFor("lumirealm").rpcPool.handle("lumirealm.phoneline", () => "hi");
  await assert.rejects(host.read("lumiagent", "lumirealm.phoneline"), {
    message: 'Shared RPC endpoint "lumirealm.phoneline" requires requester "lumiagent" to inherit owner "lumirealm" permissions: characters, push_notification',
  });
  host.spindleFor("lumiagent").rpcPool.sync("phoneline_request", { op: "describe" }, { requires: ["characters"] });
  await assert.rejects(host.read("lumirealm", "lumiagent.phoneline_request"), {
    message: 'Shared RPC endpoint "lumiagent.phoneline_request" requires owner "lumiagent" permissions: characters',
  });
  host.grant("lumiagent", "characters");
  host.revoke("lumirealm", "characters");
  await assert.rejects(host.read("lumirealm", "lumiagent.phoneline_request"), {
    message: 'Shared RPC endpoint "lumiagent.phoneline_request" requires requester "lumirealm" permissions: characters',
  });
  await assert.rejects(host.read("lumirealm", "nobody.phoneline"), { message: 'Shared RPC endpoint "nobody.phoneline" is not registered' });
});

/** A tap whose desktop is away (a closed loopback port), so everything stays in its outbox. */
function awayTap(opts: { maxQueued?: number; shapesOnly?: boolean } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "tap-test-"));
  const stateFile = join(dir, "state.json");
  const st = freshState("test");
  st.desktop = { host: "127.0.0.1", port: 9, cert_fp: "0".repeat(64), public_key: "A".repeat(43), device_id: "dev_0000000000000000" };
  saveStateSync(stateFile, st);
  const host = new FakeHost();
  host.grant("lumirealm", "characters", "chats");
  host.grant("lumiagent", "characters", "chats");
  const spindle = host.spindleFor("lumirealm");
  const notices: string[] = [];
  const tap = createTap({
    stateFile,
    line: { identifier: "lumirealm", name: "LumiRealm", permissions: ["characters", "chats"] },
    spindle,
    backoffMs: { initial: 60_000, max: 60_000 },
    log: (l) => notices.push(l),
    ...opts,
  });
  return { tap, host, spindle, stateFile, notices };
}

async function outbox(tap: { flush(): Promise<void> }, stateFile: string): Promise<any[]> {
  await new Promise((r) => setImmediate(r));
  await tap.flush();
  const st = loadState(stateFile) as TapState;
  return st.outbox.map((t) => JSON.parse(t));
}

test("wrap: results and errors unchanged; each call one dial with the request the handler read", async () => {
  const { tap, host, spindle, stateFile } = awayTap();
  const handler = lumirealmHandler(spindle);
  spindle.rpcPool.handle("lumirealm.phoneline", tap.wrap(handler));
  const bare = new FakeHost();
  bare.grant("lumirealm", "characters", "chats");
  bare.grant("lumiagent", "characters", "chats");
  const bareSpindle = bare.spindleFor("lumirealm");
  bareSpindle.rpcPool.handle("lumirealm.phoneline", lumirealmHandler(bareSpindle));

  const req = { op: "read_item", userId: "u1", surfaceId: "module_envelope", itemId: "mod_aria_lore", callId: "pl_1_1" };
  assert.deepEqual(await dialAs(host, "lumiagent", "lumirealm", req), await dialAs(bare, "lumiagent", "lumirealm", req));
  const refused = { op: "write_field", userId: "u1", surfaceId: "module_envelope", itemId: "m", field: "source.x", value: 1, callId: "pl_1_2" };
  assert.deepEqual(await dialAs(host, "lumiagent", "lumirealm", refused), await dialAs(bare, "lumiagent", "lumirealm", refused));
  // Errors: the same text, thrown the same way.
  host.revoke("lumirealm", "characters");
  bare.revoke("lumirealm", "characters");
  const lr = { op: "list_items", userId: "u1", surfaceId: "module_envelope", callId: "pl_1_3" };
  const wrappedErr = await dialAs(host, "lumiagent", "lumirealm", lr).catch((e: Error) => e);
  const bareErr = await dialAs(bare, "lumiagent", "lumirealm", lr).catch((e: Error) => e);
  assert.ok(wrappedErr instanceof Error && bareErr instanceof Error);
  assert.equal(wrappedErr.message, bareErr.message);
  assert.equal(wrappedErr.message, 'could not read pending request from lumiagent: Shared RPC endpoint "lumiagent.phoneline_request" requires requester "lumirealm" permissions: characters');
  // A synchronous throw stays synchronous, and the very object is rethrown.
  const boom = new TypeError("boom");
  const sync = tap.wrap((_r: unknown) => {
    throw boom;
  });
  assert.throws(() => sync({ requesterExtensionId: "lumiagent" }), (e) => e === boom);
  assert.equal(tap.wrap((_r: unknown, x: number) => x * 2)({}, 21), 42, "a plain value stays a plain value");

  const sent = await outbox(tap, stateFile);
  await tap.stop();
  const dials = sent.filter((f) => f.type === "event.phoneline.dial").map((f) => f.payload);
  assert.equal(dials.length, 5);
  const [ok, tool, err, thrown] = dials;
  assert.equal(ok.outcome, "ok");
  assert.equal(ok.call_id, "pl_1_1");
  assert.equal(ok.caller, "lumiagent");
  assert.equal(ok.callee, "lumirealm");
  assert.equal(ok.endpoint, "lumirealm.phoneline");
  assert.equal(ok.op, "read_item");
  assert.deepEqual(ok.request, req);
  assert.deepEqual(ok.response, { value: { lore: "Aria was born in the northern keep." } });
  assert.ok(Number.isInteger(ok.duration_ms) && ok.duration_ms >= 0);
  assert.match(ok.started_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.equal(tool.outcome, "tool_error");
  assert.equal(tool.response.ok, false);
  assert.equal(err.outcome, "error");
  assert.equal(err.error, wrappedErr.message, "the error text exactly as thrown");
  assert.equal(err.op, "unknown", "the request could not be read");
  assert.equal(err.request, null);
  assert.equal("response" in err, false);
  assert.equal(thrown.error, "boom");
  // Envelopes as docs/protocol.md gives them: seq increasing, dedup per dial, generation 1.
  const seqs = sent.map((f) => f.payload.seq);
  assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b));
  for (const f of sent) {
    assert.match(f.id, /^[a-z]+_[A-Za-z0-9]{6,64}$/);
    assert.equal(f.generation, 1);
    assert.match(f.entity, /^ent_[A-Za-z0-9]{6,64}$/);
    assert.equal(f.labels.retention, "standard");
  }
  assert.equal(new Set(dials.map((d) => d.dedup)).size, dials.length);
});

test("describe goes out as the line's phone-line settings", async () => {
  const { tap, host, spindle, stateFile } = awayTap();
  spindle.rpcPool.handle("lumirealm.phoneline", tap.wrap(lumirealmHandler(spindle)));
  await dialAs(host, "lumiagent", "lumirealm", { op: "describe" });
  const sent = await outbox(tap, stateFile);
  await tap.stop();
  assert.deepEqual(sent.map((f) => f.type), ["event.phoneline.dial", "event.phoneline.settings"]);
  const s = sent[1].payload;
  assert.deepEqual(s.registry, { version: 1, phoneLines: [{ identifier: "lumirealm", name: "LumiRealm" }] });
  assert.equal(s.pairings, null);
  assert.equal(s.lines[0].identifier, "lumirealm");
  assert.deepEqual(s.lines[0].permissions, ["characters", "chats"]);
  assert.equal(s.lines[0].describe.status, "answered");
  assert.deepEqual(s.lines[0].describe.manifest, LUMIREALM_MANIFEST);
});

test("reportBridgeStatus forwards the line's own probe results and refuses bad shapes", async () => {
  const { tap, stateFile } = awayTap();
  const text = 'Shared RPC endpoint "lumiagent.phoneline_probe" requires requester "lumirealm" permissions: characters';
  tap.reportBridgeStatus({ source: "probe", caller: "lumirealm", endpoint: "lumiagent.phoneline_probe", outcome: "error", error: text });
  assert.throws(() => tap.reportBridgeStatus({ source: "probe", caller: "lumirealm", endpoint: "x.y", outcome: "error" }), /needs its error text/);
  assert.throws(() => tap.reportBridgeStatus({ source: "guess" as "probe", caller: "a", endpoint: "x.y", outcome: "ok" }), /source/);
  const sent = await outbox(tap, stateFile);
  await tap.stop();
  assert.equal(sent.length, 1);
  assert.equal(sent[0].type, "event.bridge.status");
  assert.deepEqual(
    { ...sent[0].payload, seq: undefined, dedup: undefined },
    { seq: undefined, dedup: undefined, source: "probe", caller: "lumirealm", endpoint: "lumiagent.phoneline_probe", outcome: "error", error: text },
  );
});

test("shapes only: keys and types, values redacted; host error texts kept, others redacted", async () => {
  const { tap, host, spindle, stateFile } = awayTap({ shapesOnly: true });
  spindle.rpcPool.handle("lumirealm.phoneline", tap.wrap(lumirealmHandler(spindle)));
  await dialAs(host, "lumiagent", "lumirealm", { op: "read_item", userId: "alice", surfaceId: "module_envelope", itemId: "mod_aria_lore" });
  await dialAs(host, "lumiagent", "lumirealm", { op: "read_item", userId: "alice", surfaceId: "module_envelope", itemId: "secret diary" }).catch(() => {});
  host.revoke("lumirealm", "characters");
  await dialAs(host, "lumiagent", "lumirealm", { op: "list_items", userId: "alice", surfaceId: "module_envelope" }).catch(() => {});
  const sent = await outbox(tap, stateFile);
  await tap.stop();
  const [a, b, c] = sent.map((f) => f.payload);
  assert.deepEqual(a.request, { op: "<string>", userId: "<string>", surfaceId: "<string>", itemId: "<string>" });
  assert.deepEqual(a.response, { value: { lore: "<string>" } });
  assert.equal(a.op, "read_item", "the op is kept");
  assert.equal(b.error, `<redacted: ${"module secret diary not found".length} chars>`, "user data in an error text, redacted");
  assert.equal(c.error, 'could not read pending request from lumiagent: Shared RPC endpoint "lumiagent.phoneline_request" requires requester "lumirealm" permissions: characters');
  assert.ok(!JSON.stringify(sent).includes("alice") && !JSON.stringify(sent).includes("Aria"));
  assert.deepEqual(shapeOf([1, "x", true, null, { k: [2] }]), ["<number>", "<string>", "<boolean>", null, { k: ["<number>"] }]);
  assert.equal(redactError("unknown op: frobnicate"), "unknown op: frobnicate");
  assert.equal(redactError("not authorised"), "not authorised");
});

test("while the desktop is away calls queue up to the bound, the oldest dropped and counted", async () => {
  const { tap, host, spindle, stateFile } = awayTap({ maxQueued: 5 });
  spindle.rpcPool.handle("lumirealm.phoneline", tap.wrap(lumirealmHandler(spindle)));
  for (let i = 0; i < 8; i++) {
    await dialAs(host, "lumiagent", "lumirealm", { op: "grep_items", userId: "u", surfaceId: "module_envelope", pattern: "x", callId: `c${i}` });
  }
  const sent = await outbox(tap, stateFile);
  await tap.stop();
  assert.deepEqual(sent.map((f) => f.payload.call_id), ["c3", "c4", "c5", "c6", "c7"], "the oldest dropped");
  const st = loadState(stateFile) as TapState;
  assert.equal(st.dropped, 3, "counted, to be reported when the link is back");
  assert.equal(statSync(stateFile).mode & 0o777, 0o600, "the state file is private");
  assert.equal(tap.connected, false);
});

test("nothing is sent before pairing: an unpaired tap only queues in memory", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tap-test-"));
  const stateFile = join(dir, "state.json");
  const host = new FakeHost();
  host.grant("lumirealm", "characters");
  host.grant("lumiagent", "characters");
  const spindle = host.spindleFor("lumirealm");
  const logs: string[] = [];
  const tap = createTap({ stateFile, line: { identifier: "lumirealm" }, spindle, log: (l) => logs.push(l) });
  spindle.rpcPool.handle("lumirealm.phoneline", tap.wrap(lumirealmHandler(spindle)));
  await dialAs(host, "lumiagent", "lumirealm", { op: "describe" });
  await new Promise((r) => setImmediate(r));
  assert.equal(tap.paired, false);
  assert.equal(tap.queued, 2);
  await tap.stop();
  const st = loadState(stateFile) as TapState;
  assert.equal(st.desktop, null);
  assert.deepEqual(st.outbox, [], "an unpaired tap writes no outbox");
  assert.ok(logs.some((l) => l.includes("not paired")), logs.join("\n"));
});

test("a state file that is not one is refused naming the file", () => {
  const dir = mkdtempSync(join(tmpdir(), "tap-test-"));
  const p = join(dir, "bad.json");
  writeFileSync(p, "{not json");
  assert.throws(() => loadState(p), new RegExp(`${p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: not JSON`));
  writeFileSync(p, JSON.stringify({ version: 1 }));
  assert.throws(() => loadState(p), /device_id is missing/);
});
