// The Weather Line's phone-line handler (phone-line.md, "Operations"): what any extension's
// handler looks like; nothing in it knows about the tap.

/** The describe manifest. */
export const MANIFEST = {
  extension: { id: "weatherline", name: "Weather Line", version: "0.1.0" },
  surfaces: [{ id: "forecasts", label: "Forecasts", description: "Per-character weather notes.", scope: "per_character" }],
  excludeFromSearch: [],
};

const FORECASTS: Record<string, string> = { fc_north: "Snow in the northern keep", fc_coast: "Fog on the coast road" };

interface Request {
  op: string;
  itemId?: string;
  ms?: number;
}

/** The handler, given how to read the caller's published request and who may call. */
export function weatherHandler(read: (endpoint: string) => Promise<unknown>, allowed: ReadonlySet<string>) {
  // The caller check is synchronous, as many handlers' are: a refused caller gets a throw before
  // any promise exists. The host calls handlers inside `Promise.resolve(handler(...))`, so an
  // unwrapped handler that throws here stops the extension's process; `tap.wrap` turns the throw
  // into a rejected promise (the caller still gets "not authorised").
  const answer = async (rctx: { requesterExtensionId: string }) => {
    let req: Request;
    try {
      req = (await read(`${rctx.requesterExtensionId}.phoneline_request`)) as Request;
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
      case "slow":
        // A handler that outlives the host's 10 s shared-RPC timeout (for trying the tap).
        await new Promise((r) => setTimeout(r, Math.min(60_000, Number(req.ms ?? 12_000))));
        return { value: "late" };
      default:
        throw new Error(`unknown op: ${req.op}`);
    }
  };
  return (rctx: { requesterExtensionId?: string }) => {
    if (!rctx.requesterExtensionId || !allowed.has(rctx.requesterExtensionId)) throw new Error("not authorised");
    return answer({ requesterExtensionId: rctx.requesterExtensionId });
  };
}
