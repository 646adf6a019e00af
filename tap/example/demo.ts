// Runs the Weather Line under a fake Lumiverse host (test/fake-host.ts) and dials it as
// LumiAgent would, once every `--every` ms, so a paired desktop's Live dials has real traffic:
//   node dist/src/cli.js pair '<link>' --state /tmp/weather-tap.json
//   node dist/example/demo.js /tmp/weather-tap.json [calls] [every ms]
// Every 7th dial runs while the host has taken `characters` from the Weather Line, so its read
// of the request fails with the host's permission error (a bridge banner on the desktop).

import { dialAs, FakeHost } from "../test/fake-host.js";
import { registerWeatherLine } from "./weather-line.js";

const [stateFile, callsText = "60", everyText = "500"] = process.argv.slice(2);
if (!stateFile) {
  console.error("usage: demo.js <state file> [calls] [every ms]");
  process.exit(2);
}
const host = new FakeHost();
host.grant("weatherline", "characters");
host.grant("lumiagent", "characters", "chats");
const tap = registerWeatherLine(host.spindleFor("weatherline"), stateFile);
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
