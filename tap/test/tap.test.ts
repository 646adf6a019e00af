// Unit tests of switchboard-tap against a fake `spindle` that behaves as
// ../shared/specs/upstream-behaviour.md and lumiverse-host.md say the host does (its storage a
// real temp folder, its enclave in memory). The link itself is tested against the real desktop
// in tests/network/tap_node.rs.

import { test } from "node:test";
import assert from "node:assert/strict";
import { createTap, introPinnedText, helloPinnedText, answerPinnedText, normalizeFingerprint, pairCommitment, parsePairingLink, redactError, shapeOf, verificationCode, STATE_PATH, SEED_KEY, type TapNotice } from "../src/index.js";
import { freshIdentity, loadState, saveKey, saveState, type TapState } from "../src/store.js";
import { b64url, deviceIdFor, Ed25519 } from "../src/wire.js";
import { dialAs, FakeHost, LUMIREALM_MANIFEST, lumirealmHandler } from "./fake-host.js";

const sha = async (s: string) => (await import("node:crypto")).createHash("sha256").update(s).digest("hex");
const bytes = (from: number) => Buffer.from(Array.from({ length: 32 }, (_, i) => from + i));
const refused = () => {
  throw new Error("connect ECONNREFUSED 127.0.0.1:9");
};

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

/** Stores a paired state for `ext` in the fake host (as a pairing would leave it). */
async function storePaired(host: FakeHost, ext: string, user = "user_owner"): Promise<TapState> {
  const { state, key } = freshIdentity("LumiRealm");
  state.desktop = { host: "127.0.0.1", port: 9, cert_fp: "0".repeat(64), cert_pem: "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n", public_key: "A".repeat(43), device_id: "dev_0000000000000000", binding: "pinned" };
  state.enclave_user = user;
  const e = host.ext(ext);
  await saveKey(e.enclave, key, user);
  await saveState(e.storage, state);
  return state;
}

/** A tap whose desktop is away (every connection refused), so everything stays in its outbox. */
async function awayTap(opts: { maxQueued?: number; shapesOnly?: boolean; hostTimeoutMs?: number } = {}, host = new FakeHost(), store = true) {
  if (store) await storePaired(host, "lumirealm");
  host.grant("lumirealm", "characters", "chats");
  host.grant("lumiagent", "characters", "chats");
  const spindle = host.spindleFor("lumirealm");
  const notices: string[] = [];
  const events: TapNotice[] = [];
  const tap = createTap({
    line: { identifier: "lumirealm", name: "LumiRealm", permissions: ["characters", "chats"] },
    spindle,
    backoffMs: { initial: 60_000, max: 60_000 },
    log: (l) => notices.push(l),
    onNotice: (n) => events.push(n),
    socketFactory: refused,
    ...opts,
  });
  await tap.ready;
  return { tap, host, spindle, notices, events };
}

async function outbox(tap: { flush(): Promise<void> }, host: FakeHost): Promise<any[]> {
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  await tap.flush();
  const st = (await loadState(host.ext("lumirealm").storage)) as TapState;
  return st.outbox.map((t) => JSON.parse(t));
}

test("wrap: results and errors unchanged; each call one dial with the request the handler read", async () => {
  const { tap, host, spindle } = await awayTap();
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
  // A synchronous throw becomes a rejection of the very object (it would stop the host's
  // extension process if it escaped), and a plain value a resolved promise.
  const boom = new TypeError("boom");
  const sync = tap.wrap((_r: unknown) => {
    throw boom;
  });
  let result: unknown;
  assert.doesNotThrow(() => {
    result = sync({ requesterExtensionId: "lumiagent" });
  });
  await assert.rejects(result as Promise<unknown>, (e) => e === boom);
  assert.equal(await tap.wrap((_r: unknown, x: number) => x * 2)({}, 21), 42, "a plain value stays the value");

  const sent = await outbox(tap, host);
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
  const { tap, host, spindle } = await awayTap();
  spindle.rpcPool.handle("lumirealm.phoneline", tap.wrap(lumirealmHandler(spindle)));
  await dialAs(host, "lumiagent", "lumirealm", { op: "describe" });
  const sent = await outbox(tap, host);
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
  const { tap, host } = await awayTap();
  const text = 'Shared RPC endpoint "lumiagent.phoneline_probe" requires requester "lumirealm" permissions: characters';
  tap.reportBridgeStatus({ source: "probe", caller: "lumirealm", endpoint: "lumiagent.phoneline_probe", outcome: "error", error: text });
  assert.throws(() => tap.reportBridgeStatus({ source: "probe", caller: "lumirealm", endpoint: "x.y", outcome: "error" }), /needs its error text/);
  assert.throws(() => tap.reportBridgeStatus({ source: "guess" as "probe", caller: "a", endpoint: "x.y", outcome: "ok" }), /source/);
  const sent = await outbox(tap, host);
  await tap.stop();
  assert.equal(sent.length, 1);
  assert.equal(sent[0].type, "event.bridge.status");
  assert.deepEqual(
    { ...sent[0].payload, seq: undefined, dedup: undefined },
    { seq: undefined, dedup: undefined, source: "probe", caller: "lumirealm", endpoint: "lumiagent.phoneline_probe", outcome: "error", error: text },
  );
});

test("shapes only: keys and types, values redacted; host error texts kept, others redacted", async () => {
  const { tap, host, spindle } = await awayTap({ shapesOnly: true });
  spindle.rpcPool.handle("lumirealm.phoneline", tap.wrap(lumirealmHandler(spindle)));
  await dialAs(host, "lumiagent", "lumirealm", { op: "read_item", userId: "alice", surfaceId: "module_envelope", itemId: "mod_aria_lore" });
  await dialAs(host, "lumiagent", "lumirealm", { op: "read_item", userId: "alice", surfaceId: "module_envelope", itemId: "secret diary" }).catch(() => {});
  host.revoke("lumirealm", "characters");
  await dialAs(host, "lumiagent", "lumirealm", { op: "list_items", userId: "alice", surfaceId: "module_envelope" }).catch(() => {});
  const sent = await outbox(tap, host);
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
  const { tap, host, spindle } = await awayTap({ maxQueued: 5 });
  spindle.rpcPool.handle("lumirealm.phoneline", tap.wrap(lumirealmHandler(spindle)));
  for (let i = 0; i < 8; i++) {
    await dialAs(host, "lumiagent", "lumirealm", { op: "grep_items", userId: "u", surfaceId: "module_envelope", pattern: "x", callId: `c${i}` });
  }
  const sent = await outbox(tap, host);
  await tap.stop();
  assert.deepEqual(sent.map((f) => f.payload.call_id), ["c3", "c4", "c5", "c6", "c7"], "the oldest dropped");
  const st = (await loadState(host.ext("lumirealm").storage)) as TapState;
  assert.equal(st.dropped, 3, "counted, to be reported when the link is back");
  assert.equal(tap.connected, false);
});

test("nothing is sent before pairing: an unpaired tap only queues in memory, and needs no configuration", async () => {
  const host = new FakeHost();
  host.grant("lumirealm", "characters");
  host.grant("lumiagent", "characters");
  const spindle = host.spindleFor("lumirealm");
  const logs: string[] = [];
  let dialled = 0;
  const tap = createTap({
    line: { identifier: "lumirealm" },
    spindle,
    log: (l) => logs.push(l),
    socketFactory: () => {
      dialled++;
      return refused();
    },
  });
  spindle.rpcPool.handle("lumirealm.phoneline", tap.wrap(lumirealmHandler(spindle)));
  await dialAs(host, "lumiagent", "lumirealm", { op: "describe" });
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(tap.paired, false);
  assert.equal(tap.queued, 2);
  await tap.stop();
  assert.equal(dialled, 0, "no connection without a pairing");
  assert.equal(await host.ext("lumirealm").storage.exists(STATE_PATH), false, "an unpaired tap writes nothing");
  assert.ok(logs.some((l) => l.includes("not paired")), logs.join("\n"));
});

test("stored state that is not the tap's is refused naming the file and the field", async () => {
  const host = new FakeHost();
  const st = host.ext("lumirealm").storage;
  await st.write(STATE_PATH, "{not json");
  await assert.rejects(loadState(st), /switchboard-tap\/state\.json \(extension storage\): not JSON/);
  await st.write(STATE_PATH, JSON.stringify({ version: 2 }));
  await assert.rejects(loadState(st), /device_id is missing/);
});

test("the pinned hello binding gives docs/protocol.md's test vectors", async () => {
  const phone = new Ed25519(bytes(96));
  const desktop = new Ed25519(bytes(128));
  const nonce = b64url(bytes(0));
  const fp = await sha("worked example certificate");
  assert.equal(phone.publicB64(), "F0VTtFbd38aQjsqxwQH-arIeK6oGF3lbfUOmNIKZP9U");
  assert.equal(desktop.publicB64(), "zRSzf5VulTGU_3-3Oz2B3MVh1hp1OAlLfD4aZD7l86o");
  const dev = deviceIdFor(phone.publicRaw);
  assert.equal(dev, "dev_68894d58f18f2c34");
  assert.equal(desktop.signB64(introPinnedText(nonce, fp)), "EC2jh8kahz66CNzBU79F_KVurmox2txlhHugEQMGPFhaQuhsiDa7rRYg0RSGoCbyqEyTQT78YbWHU_KPbPlhDg");
  assert.equal(phone.signB64(helloPinnedText(nonce, dev, fp)), "CCZZH9AsUW0grk-RXRaivIdqzImqeNQMkXrJTSe69tWMEN_9h0eLt5h_kDARDjaHMq7lrYP5i_APbjpPHRYiDg");
  assert.equal(desktop.signB64(answerPinnedText(nonce, dev, fp)), "MHx-Owry9M-c1UWBwxZSwc7_iZI9GTAWjHtnPlaAs0NK_mRHPnQBN8sMAYxx9h3Kc9MJqLw3rQ9q0aVSNHh9Cw");
  assert.equal(normalizeFingerprint("BA:A6:94:D9"), "baa694d9", "Bun's fingerprint256 form");
});

test("state round trip: a restarted tap on the same storage has its identity, desktop and outbox back; the key only in the enclave", async () => {
  const host = new FakeHost();
  const first = await awayTap({}, host);
  first.spindle.rpcPool.handle("lumirealm.phoneline", first.tap.wrap(lumirealmHandler(first.spindle)));
  for (let i = 0; i < 3; i++) await dialAs(host, "lumiagent", "lumirealm", { op: "grep_items", userId: "u", surfaceId: "module_envelope", pattern: "x", callId: `r${i}` });
  const before = await outbox(first.tap, host);
  const device = first.tap.deviceId;
  await first.tap.stop();
  // Atomic: every write went to a new file that was then moved over the state.
  const calls = host.ext("lumirealm").storage.calls.filter((c) => !c.startsWith("read"));
  assert.ok(calls.length >= 2);
  for (let i = 0; i < calls.length; i += 2) {
    assert.equal(calls[i], "write switchboard-tap/state.json.new");
    assert.equal(calls[i + 1], "move switchboard-tap/state.json.new switchboard-tap/state.json");
  }
  const stored = await host.ext("lumirealm").storage.read(STATE_PATH);
  const seed = await host.ext("lumirealm").enclave.get(SEED_KEY, "user_owner");
  assert.ok(seed && !stored.includes(seed), "the seed is in the enclave, never in storage");

  // "Restart": a new tap, same storage and enclave.
  const second = await awayTap({}, new FakeHostSharing(host), false);
  assert.equal(second.tap.deviceId, device, "same identity");
  assert.equal(second.tap.paired, true, "same desktop");
  assert.equal(second.tap.queued, before.length, "the unacknowledged outbox is back");
  second.spindle.rpcPool.handle("lumirealm.phoneline", second.tap.wrap(lumirealmHandler(second.spindle)));
  await dialAs(second.host, "lumiagent", "lumirealm", { op: "grep_items", userId: "u", surfaceId: "module_envelope", pattern: "x", callId: "r3" });
  const after = await outbox(second.tap, host);
  await second.tap.stop();
  assert.deepEqual(after.slice(0, before.length), before, "the same messages, same ids, in order");
  assert.equal(after.at(-1).payload.call_id, "r3");
  const seqs = after.map((f) => f.payload.seq);
  assert.deepEqual(seqs, [...new Set(seqs)].sort((a, b) => a - b), "seq goes on in the same session");
  assert.ok(after.every((f) => f.session === before[0].session));
});

/** A host sharing another's extensions (the same storage and enclave after a restart). */
class FakeHostSharing extends FakeHost {
  constructor(readonly base: FakeHost) {
    super();
  }
  override ext(ext: string) {
    return this.base.ext(ext);
  }
}

test("a handler past the host's timeout is recorded timed_out then, with the host's text; its late end only noticed", async () => {
  const { tap, host, spindle, events, notices } = await awayTap({ hostTimeoutMs: 150 });
  host.timeoutMs = 150;
  let release!: () => void;
  spindle.rpcPool.handle(
    "lumirealm.phoneline",
    tap.wrap(async (rctx: { requesterExtensionId: string }) => {
      const req = await spindle.rpcPool.read(`${rctx.requesterExtensionId}.phoneline_request`);
      await new Promise<void>((r) => (release = r));
      return { value: req };
    }),
  );
  const t0 = Date.now();
  await assert.rejects(dialAs(host, "lumiagent", "lumirealm", { op: "read_item", userId: "u", surfaceId: "s", itemId: "i", callId: "slow1" }), {
    message: 'Shared RPC endpoint "lumirealm.phoneline" timed out',
  });
  await new Promise((r) => setTimeout(r, 30)); // the tap's own 150 ms timer, started a moment later
  const sent = await outbox(tap, host);
  assert.equal(sent.length, 1, "recorded at the timeout, before the handler ended");
  const d = sent[0].payload;
  assert.equal(d.outcome, "timed_out");
  assert.equal(d.error, 'Shared RPC endpoint "lumirealm.phoneline" timed out');
  assert.equal(d.duration_ms, 150);
  assert.equal(d.call_id, "slow1");
  assert.ok(Date.now() - t0 < 2000);
  release();
  await new Promise((r) => setTimeout(r, 20));
  const later = await outbox(tap, host);
  await tap.stop();
  assert.equal(later.length, 1, "the late end is not a second dial");
  const late = events.find((n) => n.kind === "late");
  assert.deepEqual(late && { ...late, afterMs: 0 }, { kind: "late", callId: "slow1", op: "read_item", outcome: "ok", afterMs: 0 });
  assert.ok(notices.some((l) => l.includes("past the host's 150 ms timeout")), notices.join("\n"));
});

test("a handler that fails before reading its request: the tap reads it itself, so the dial has its call id", async () => {
  const { tap, host, spindle } = await awayTap();
  host.grant("lumiweather", "characters", "chats");
  spindle.rpcPool.handle("lumirealm.phoneline", tap.wrap(lumirealmHandler(spindle)));
  await assert.rejects(dialAs(host, "lumiweather", "lumirealm", { op: "describe", callId: "pl_w1" }), { message: "not authorised" });
  const [d] = (await outbox(tap, host)).map((f) => f.payload);
  await tap.stop();
  assert.equal(d.error, "not authorised");
  assert.equal(d.call_id, "pl_w1");
  assert.equal(d.op, "describe");
  assert.equal(d.caller, "lumiweather");
});

test("the extension's own calls the host refuses are recorded on the caller's side with the host's text", async () => {
  const { tap, host, spindle } = await awayTap();
  host.spindleFor("lumiagent").rpcPool.handle("lumiagent.phoneline", () => "hi");
  // A dial of another line: published request, then the read the host refuses.
  spindle.rpcPool.sync!("phoneline_request", { op: "describe", callId: "out1" }, { requires: ["characters"] });
  await assert.rejects(spindle.rpcPool.read("nobody.phoneline"), { message: 'Shared RPC endpoint "nobody.phoneline" is not registered' });
  await assert.rejects(spindle.rpcPool.read("Bad..name"), /^Error: Invalid shared RPC endpoint "Bad..name"/);
  // A probe: refused, refused again (no repeat), then fine after a grant.
  host.spindleFor("lumiagent").rpcPool.sync("phoneline_probe", { ok: true }, { requires: ["push_notification"] });
  await assert.rejects(spindle.rpcPool.read("lumiagent.phoneline_probe"));
  await assert.rejects(spindle.rpcPool.read("lumiagent.phoneline_probe"));
  const sent = (await outbox(tap, host)).map((f) => ({ type: f.type, ...f.payload }));
  await tap.stop();
  assert.equal(sent.length, 2, JSON.stringify(sent, null, 1));
  const [dial, probe] = sent;
  assert.equal(dial.type, "event.phoneline.dial");
  assert.deepEqual(
    { caller: dial.caller, callee: dial.callee, endpoint: dial.endpoint, op: dial.op, call_id: dial.call_id, outcome: dial.outcome, error: dial.error },
    { caller: "lumirealm", callee: "nobody", endpoint: "nobody.phoneline", op: "describe", call_id: "out1", outcome: "error", error: 'Shared RPC endpoint "nobody.phoneline" is not registered' },
  );
  assert.equal(probe.type, "event.bridge.status");
  assert.deepEqual(
    { source: probe.source, caller: probe.caller, endpoint: probe.endpoint, outcome: probe.outcome, error: probe.error },
    { source: "probe", caller: "lumirealm", endpoint: "lumiagent.phoneline_probe", outcome: "error", error: 'Shared RPC endpoint "lumiagent.phoneline_probe" requires owner "lumiagent" permissions: push_notification' },
  );
});

test("one permission change (several permissions at once) gives one bridge-status update per path", async () => {
  const { tap, host, spindle } = await awayTap();
  spindle.rpcPool.handle("lumirealm.phoneline", tap.wrap(lumirealmHandler(spindle)));
  host.revoke("lumirealm", "characters");
  await dialAs(host, "lumiagent", "lumirealm", { op: "list_items", userId: "u", surfaceId: "module_envelope", callId: "p1" }).catch(() => {});
  // The host posts one permission_changed per permission of the request.
  host.changePermissions("lumirealm", ["characters", "chats", "push_notification"]);
  await new Promise((r) => setTimeout(r, 400));
  host.changePermissions("lumirealm", ["chats"]); // the same set again: nothing new
  await new Promise((r) => setTimeout(r, 400));
  const sent = (await outbox(tap, host)).map((f) => ({ type: f.type, ...f.payload }));
  await tap.stop();
  const status = sent.filter((f) => f.type === "event.bridge.status");
  assert.equal(status.length, 1, JSON.stringify(sent, null, 1));
  assert.deepEqual(
    { source: status[0].source, caller: status[0].caller, endpoint: status[0].endpoint, outcome: status[0].outcome },
    { source: "permission_change", caller: "lumiagent", endpoint: "lumirealm.phoneline", outcome: "ok" },
  );
});

test("a runtime without network: said once, no crash loop", async () => {
  const host = new FakeHost();
  await storePaired(host, "lumirealm");
  let tries = 0;
  const logs: string[] = [];
  const tap = createTap({
    line: { identifier: "lumirealm", name: "LumiRealm" },
    spindle: host.spindleFor("lumirealm"),
    backoffMs: { initial: 1, max: 5 },
    log: (l) => logs.push(l),
    socketFactory: () => {
      tries++;
      throw new Error("connect EPERM 127.0.0.1:9 - Operation not permitted");
    },
  });
  await new Promise((r) => setTimeout(r, 200));
  await tap.stop();
  assert.equal(tries, 1, "not retried in a loop");
  assert.equal(logs.filter((l) => l.includes("no network")).length, 1, logs.join("\n"));
});

test("the pairing piece's messages: status answered to the asking user; a bad link refused saying why", async () => {
  const { tap, host } = await awayTap();
  host.fromFrontend("lumirealm", { switchboardTap: "status" }, "user_a");
  host.fromFrontend("lumirealm", { somethingElse: 1 }, "user_a");
  host.fromFrontend("lumirealm", { switchboardTap: "pair", link: "https://nope" }, "user_a");
  await new Promise((r) => setTimeout(r, 50));
  await tap.stop();
  const sent = host.ext("lumirealm").frontend;
  assert.ok(sent.length >= 2);
  assert.ok(sent.every((m) => m.userId === "user_a"));
  const first = sent[0]!.payload as Record<string, unknown>;
  assert.equal(first.switchboardTap, "status");
  assert.equal(first.paired, true);
  assert.equal(first.label, "LumiRealm", "the phone's name is the extension's");
  const last = sent.at(-1)!.payload as Record<string, unknown>;
  assert.match(String(last.lastError), /pairing failed: pairing link: expected it to start with switchboard:\/\/pair\?/);
});
