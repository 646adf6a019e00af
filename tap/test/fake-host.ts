// A fake Lumiverse host for tests: the shared RPC pool with the permission checks and the error
// texts of ../shared/specs/upstream-behaviour.md ("The host's error texts"), a per-extension
// `spindle`, LumiAgent's dial (publish the request to `lumiagent.phoneline_request`, then read
// the line's endpoint), and LumiRealm's handler with its errors in their order.

/** What an extension's handler receives. */
export interface Rctx {
  requesterExtensionId: string;
}

type Handler = (rctx: Rctx) => unknown;

interface Endpoint {
  owner: string;
  requires?: string[];
  handler?: Handler;
  value?: unknown;
  synced: boolean;
}

const ENDPOINT_RE = /^([a-z0-9_-]+)\.([a-z0-9_-]+)$/;

/** The host: extensions with granted permissions and the shared RPC pool. */
export class FakeHost {
  readonly grants = new Map<string, Set<string>>();
  private readonly endpoints = new Map<string, Endpoint>();
  /** How long the host waits for an on-request handler (ms); the real host's is 10 s. */
  timeoutMs = 10_000;

  grant(ext: string, ...perms: string[]) {
    const s = this.grants.get(ext) ?? new Set<string>();
    for (const p of perms) s.add(p);
    this.grants.set(ext, s);
  }

  revoke(ext: string, ...perms: string[]) {
    const s = this.grants.get(ext);
    if (s) for (const p of perms) s.delete(p);
  }

  /** The `spindle` an extension sees. */
  spindleFor(ext: string) {
    const host = this;
    return {
      rpcPool: {
        handle(channelOrEndpoint: string, handler: Handler, opts?: { requires?: string[] }) {
          const endpoint = channelOrEndpoint.includes(".") ? channelOrEndpoint : `${ext}.${channelOrEndpoint}`;
          host.endpoints.set(endpoint, { owner: ext, requires: opts?.requires, handler, synced: false });
        },
        sync(channel: string, value: unknown, opts?: { requires?: string[] }) {
          const endpoint = `${ext}.${channel}`;
          const prev = host.endpoints.get(endpoint);
          host.endpoints.set(endpoint, { owner: ext, requires: opts?.requires ?? prev?.requires, handler: prev?.handler, value, synced: true });
        },
        read: (endpoint: string) => host.read(ext, endpoint),
      },
    };
  }

  /** A read of `endpoint` by `requester`, as the host does it. */
  async read(requester: string, endpoint: string): Promise<unknown> {
    if (endpoint === "") throw new Error("Shared RPC endpoint cannot be empty");
    const m = ENDPOINT_RE.exec(endpoint);
    if (!m) {
      throw new Error(`Invalid shared RPC endpoint "${endpoint}". Expected "<extension_id>.<channel>" using lowercase letters, numbers, "_", and "-".`);
    }
    const e = this.endpoints.get(endpoint);
    if (!e) throw new Error(`Shared RPC endpoint "${endpoint}" is not registered`);
    const have = (x: string) => this.grants.get(x) ?? new Set<string>();
    const missing = (need: Iterable<string>, x: string) => [...new Set(need)].filter((p) => !have(x).has(p)).sort();
    if (e.requires !== undefined) {
      if (e.requires.length > 0) {
        const o = missing(e.requires, e.owner);
        if (o.length) throw new Error(`Shared RPC endpoint "${endpoint}" requires owner "${e.owner}" permissions: ${o.join(", ")}`);
        const r = missing(e.requires, requester);
        if (r.length) throw new Error(`Shared RPC endpoint "${endpoint}" requires requester "${requester}" permissions: ${r.join(", ")}`);
      }
    } else {
      const r = missing(have(e.owner), requester);
      if (r.length) throw new Error(`Shared RPC endpoint "${endpoint}" requires requester "${requester}" to inherit owner "${e.owner}" permissions: ${r.join(", ")}`);
    }
    if (e.handler) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`Shared RPC endpoint "${endpoint}" timed out`)), this.timeoutMs);
      });
      try {
        return await Promise.race([Promise.resolve().then(() => e.handler!({ requesterExtensionId: requester })), timeout]);
      } finally {
        clearTimeout(timer);
      }
    }
    if (e.synced) return e.value;
    throw new Error(`Shared RPC endpoint "${endpoint}" is not registered for on-request reads`);
  }
}

/** LumiAgent's side of a dial: publish `request` to its request channel, read the line. */
export async function dialAs(host: FakeHost, caller: string, line: string, request: Record<string, unknown>): Promise<unknown> {
  host.spindleFor(caller).rpcPool.sync("phoneline_request", request, { requires: ["characters"] });
  return host.read(caller, `${line}.phoneline`);
}

/** LumiRealm's manifest (phone-line.md, "Manifest"). */
export const LUMIREALM_MANIFEST = {
  extension: { id: "lumirealm", name: "LumiRealm", version: "0.1.0" },
  surfaces: [{ id: "module_envelope", label: "Risu modules", description: "Pre-translate Risu module envelopes.", scope: "per_character" }],
  excludeFromSearch: ["lumirealm.source"],
};

/** A LumiRealm-like handler, its errors in upstream-behaviour.md's order. */
export function lumirealmHandler(spindle: ReturnType<FakeHost["spindleFor"]>) {
  const ALLOWED = new Set(["lumiagent"]);
  return async (rctx: Rctx) => {
    if (!rctx.requesterExtensionId) throw new Error("requester extension id missing");
    if (!ALLOWED.has(rctx.requesterExtensionId)) throw new Error("not authorised");
    let req: Record<string, unknown>;
    try {
      req = (await spindle.rpcPool.read(`${rctx.requesterExtensionId}.phoneline_request`)) as Record<string, unknown>;
    } catch (err) {
      throw new Error(`could not read pending request from ${rctx.requesterExtensionId}: ${(err as Error).message}`);
    }
    if (!req || typeof req !== "object" || typeof req.op !== "string") throw new Error("malformed request");
    if (req.op !== "describe" && typeof req.userId !== "string") throw new Error("request missing userId");
    switch (req.op) {
      case "describe":
        return LUMIREALM_MANIFEST;
      case "list_items":
        if (req.surfaceId !== "module_envelope") throw new Error(`unknown surface: ${String(req.surfaceId)}`);
        return { items: [{ id: "mod_aria_lore", label: "Aria lore" }], total: 1 };
      case "read_item":
        if (req.itemId !== "mod_aria_lore") throw new Error(`module ${String(req.itemId)} not found`);
        return { value: { lore: "Aria was born in the northern keep." } };
      case "write_field":
        if (String(req.field).startsWith("source")) return { ok: false, error: "[REFUSED_BY_EXTENSION] source is a frozen snapshot; edit lore instead" };
        return { ok: true };
      case "grep_items":
        return { hits: [], truncated: false };
      default:
        throw new Error(`unknown op: ${req.op}`);
    }
  };
}
