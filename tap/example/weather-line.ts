// A small phone line, as a Lumiverse extension's backend would register it, with the tap on.
// In your extension: `import { createTap } from "switchboard-tap";` (here the repository's
// source is imported so the example builds with the package).

import { createTap, type SpindleLike } from "../src/index.js";

const MANIFEST = {
  extension: { id: "weatherline", name: "Weather Line", version: "0.1.0" },
  surfaces: [{ id: "forecasts", label: "Forecasts", description: "Per-character weather notes.", scope: "per_character" }],
  excludeFromSearch: [],
};

const ALLOWED_CALLERS = new Set(["lumiagent"]);
const FORECASTS: Record<string, string> = { fc_north: "Snow in the northern keep", fc_coast: "Fog on the coast road" };

/** Registers the Weather Line's handler on `spindle`, wrapped by the tap (the one line). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function registerWeatherLine(spindle: SpindleLike & { rpcPool: { handle: (e: string, h: any) => void } }, stateFile: string) {
  const tap = createTap({
    stateFile,
    line: { identifier: "weatherline", name: "Weather Line", permissions: ["characters"] },
    spindle,
  });
  spindle.rpcPool.handle(
    "weatherline.phoneline",
    tap.wrap(async (rctx: { requesterExtensionId?: string }) => {
      if (!rctx.requesterExtensionId || !ALLOWED_CALLERS.has(rctx.requesterExtensionId)) throw new Error("not authorised");
      let req: { op: string; itemId?: string; userId?: string; field?: string };
      try {
        req = await spindle.rpcPool.read(`${rctx.requesterExtensionId}.phoneline_request`);
      } catch (err) {
        throw new Error(`could not read pending request from ${rctx.requesterExtensionId}: ${(err as Error).message}`);
      }
      switch (req.op) {
        case "describe":
          return MANIFEST;
        case "list_items":
          return { items: Object.entries(FORECASTS).map(([id, label]) => ({ id, label })), total: Object.keys(FORECASTS).length };
        case "read_item": {
          const v = req.itemId ? FORECASTS[req.itemId] : undefined;
          if (v === undefined) throw new Error(`forecast ${String(req.itemId)} not found`);
          return { value: v };
        }
        case "write_field":
          return { ok: false, error: "[REFUSED_BY_EXTENSION] forecasts are read-only" };
        default:
          throw new Error(`unknown op: ${req.op}`);
      }
    }),
  );
  return tap;
}
