// Runs the Weather Line (example/src) under a fake Lumiverse host whose extension storage is a
// real folder, pairs it from a pairing link when given one (printing the verification code and
// answering "codes match" for the person, as a script would), then dials it as LumiAgent
// would, once every `every` ms, so a paired desktop's Live dials has real traffic:
//   bun dist/example/demo.js <storage folder> <pairing link | -> [calls] [every ms]
// Every 7th dial runs while the host has taken `characters` from the Weather Line, so its read
// of the request fails with the host's permission error (a bridge banner on the desktop).

import { createTap } from "switchboard-tap";
import { dialAs, FakeHost } from "../test/fake-host.js";
import { weatherHandler } from "./src/weather.js";

const [storageRoot, link, callsText = "60", everyText = "500"] = process.argv.slice(2);
if (!storageRoot || !link) {
  console.error("usage: demo.js <storage folder> <pairing link | -> [calls] [every ms]");
  process.exit(2);
}
const host = new FakeHost();
host.storageRoot = storageRoot;
host.grant("weatherline", "characters");
host.grant("lumiagent", "characters", "chats");
const spindle = host.spindleFor("weatherline");
// The extension's two lines (example/src/backend.ts).
const tap = createTap({ line: { identifier: "weatherline", name: "Weather Line", permissions: ["characters"] }, spindle, log: (l) => console.log(`[switchboard-tap] ${l}`) });
spindle.rpcPool.handle("weatherline.phoneline", tap.wrap(weatherHandler((e) => spindle.rpcPool.read(e), new Set(["lumiagent"]))));
if (link !== "-") {
  const r = await tap.pairWith(
    link,
    async (code) => {
      console.log(`Verification code: ${code}`);
      console.log(`Does the desktop show ${code}? yes (scripted)`);
      return true;
    },
    "user_owner",
  );
  console.log(`paired as ${r.deviceId} with desktop ${r.desktopDeviceId}`);
}
const ops: Array<Record<string, unknown> & { op: string }> = [
  { op: "describe" },
  { op: "list_items", userId: "u1", surfaceId: "forecasts", characterId: "char_aria" },
  { op: "read_item", userId: "u1", surfaceId: "forecasts", itemId: "fc_north" },
  { op: "read_item", userId: "u1", surfaceId: "forecasts", itemId: "fc_south" },
  { op: "write_field", userId: "u1", surfaceId: "forecasts", itemId: "fc_north", field: "label", value: "Sun" },
];
for (let i = 0; i < Number(callsText); i++) {
  if (i % 7 === 6) host.revoke("weatherline", "characters");
  else host.grant("weatherline", "characters");
  const req = { ...ops[i % ops.length], callId: `pl_${Date.now().toString(36)}_${i}` };
  const r = await dialAs(host, "lumiagent", "weatherline", req).then(
    () => "ok",
    (e: Error) => e.message,
  );
  console.log(`${req.op}: ${r}`);
  await new Promise((res) => setTimeout(res, Number(everyText)));
}
console.log(tap.connected ? "linked" : "not linked", `${tap.queued} waiting`);
await tap.drained(10_000);
await tap.stop();
process.exit(0);
