// The tap's side of tests/network/tap_node.rs, under Bun (the host's runtime): a fake host whose
// extension storage is a real folder, the tap pairs from a pairing link as the pairing piece
// does (printing the verification code, the test confirming on the desktop), then streams
// wrapped LumiRealm calls through the fake host, some failing with the host's permission
// errors, pausing halfway for the test to cut the link.
//
// bun dist/test/drive-link.js <pairing link> <storage folder> <calls>
// stdout lines: CODE <ddd ddd> | PAIRED <device id> | HALF <n> | NOTICE <json> | DONE <json>
// stdin: one line "go" after HALF.

import { createInterface } from "node:readline";
import { createTap, type TapNotice } from "../src/index.js";
import { dialAs, FakeHost, lumirealmHandler } from "./fake-host.js";
import { callPlan } from "./plan.js";

const [link, storageRoot, countText] = process.argv.slice(2);
if (!link || !storageRoot || !countText) {
  console.error("usage: drive-link.js <pairing link> <storage folder> <calls>");
  process.exitCode = 2;
  throw new Error("usage");
}
const count = Number(countText);
const lines = createInterface({ input: process.stdin });
const stdinLines: string[] = [];
let lineWaiter: ((l: string) => void) | null = null;
lines.on("line", (l) => {
  if (lineWaiter) {
    const w = lineWaiter;
    lineWaiter = null;
    w(l);
  } else stdinLines.push(l);
});
const nextLine = () => new Promise<string>((r) => (stdinLines.length ? r(stdinLines.shift()!) : (lineWaiter = r)));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const host = new FakeHost();
  host.storageRoot = storageRoot!;
  host.grant("lumirealm", "characters", "chats");
  host.grant("lumiagent", "characters", "chats", "push_notification");
  host.grant("lumiweather", "characters", "chats");
  const spindle = host.spindleFor("lumirealm");
  let replayed = 0;
  const tap = createTap({
    line: { identifier: "lumirealm", name: "LumiRealm", permissions: ["characters", "chats"] },
    spindle,
    backoffMs: { initial: 100, max: 1000 },
    log: () => {},
    onNotice: (n: TapNotice) => {
      if (n.kind === "connected") replayed += n.replayed;
      console.log(`NOTICE ${JSON.stringify(n)}`);
    },
  });
  // The one line.
  spindle.rpcPool.handle("lumirealm.phoneline", tap.wrap(lumirealmHandler(spindle)));
  // Pairing, as the settings piece drives it (the person confirms on both screens).
  const paired = await tap.pairWith(
    link!,
    async (code) => {
      console.log(`CODE ${code}`);
      return true;
    },
    "user_owner",
  );
  console.log(`PAIRED ${paired.deviceId}`);
  const stored = JSON.parse(await host.ext("lumirealm").storage.read("switchboard-tap/state.json"));
  console.log(`STORED ${JSON.stringify({ binding: stored.desktop?.binding, seedInStorage: JSON.stringify(stored).includes(String(await host.ext("lumirealm").enclave.get("switchboard-tap.seed", "user_owner"))) })}`);

  const results = { ok: 0, thrown: 0 };
  for (let i = 0; i < count; i++) {
    const p = callPlan(i, count);
    if (p.revoked) host.revoke("lumirealm", "characters");
    else host.grant("lumirealm", "characters");
    try {
      await dialAs(host, p.caller, "lumirealm", p.request);
      results.ok++;
    } catch {
      results.thrown++;
    }
    if (i === Math.floor(count / 2)) {
      await sleep(30); // the recorded dials go out
      console.log(`HALF ${i + 1}`);
      const l = await nextLine();
      if (l.trim() !== "go") throw new Error(`expected "go", got ${JSON.stringify(l)}`);
    } else if (i % 10 === 9) {
      await sleep(5);
    }
  }
  const drained = await tap.drained(60_000);
  await tap.stop();
  console.log(`DONE ${JSON.stringify({ drained, queued: tap.queued, acknowledged: tap.acknowledged, applied: tap.desktopApplied, replayed, ...results })}`);
  lines.close();
  process.exit(drained ? 0 : 1);
}

main().catch((e: Error) => {
  console.error(`drive-link: ${e.stack ?? e.message}`);
  process.exit(1);
  lines.close();
});
