// A fake Lumiverse host for tests: the shared RPC pool with the permission checks and the error
// texts of ../shared/specs/upstream-behaviour.md ("The host's error texts"), a per-extension
// `spindle`, LumiAgent's dial (publish the request to `lumiagent.phoneline_request`, then read
// the line's endpoint), and LumiRealm's handler with its errors in their order.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";

/** What an extension's handler receives. */
export interface Rctx {
  endpoint?: string;
  requesterExtensionId: string;
}

/** `spindle.storage` over a real folder (test code: the host keeps it in
 * `DATA_DIR/extensions/<id>/storage`), with the host's path-traversal refusal. */
export class DirStorage {
  /** Every call, in order (`write <path>`, `move <from> <to>`, …). */
  readonly calls: string[] = [];
  constructor(readonly dir: string) {}
  private path(p: string): string {
    const full = resolve(this.dir, p);
    if (full !== this.dir && !full.startsWith(this.dir + sep)) throw new Error("Path traversal detected");
    return full;
  }
  async read(p: string): Promise<string> {
    this.calls.push(`read ${p}`);
    return readFile(this.path(p), "utf8");
  }
  async write(p: string, data: string): Promise<void> {
    this.calls.push(`write ${p}`);
    await mkdir(dirname(this.path(p)), { recursive: true });
    await writeFile(this.path(p), data);
  }
  async exists(p: string): Promise<boolean> {
    return stat(this.path(p)).then(
      () => true,
      () => false,
    );
  }
  async move(from: string, to: string): Promise<void> {
    this.calls.push(`move ${from} ${to}`);
    await mkdir(dirname(this.path(to)), { recursive: true });
    await rename(this.path(from), this.path(to));
  }
  async delete(p: string): Promise<void> {
    await rm(this.path(p));
  }
}

/** `spindle.enclave` in memory; `operatorScoped` refuses calls without a user as the host does. */
export class MemoryEnclave {
  readonly secrets = new Map<string, string>();
  constructor(readonly operatorScoped = true) {}
  private k(key: string, userId?: string): string {
    if (this.operatorScoped && !userId) throw new Error("userId is required for operator-scoped extensions");
    return `${userId ?? ""}|${key}`;
  }
  async get(key: string, userId?: string): Promise<string | null> {
    return this.secrets.get(this.k(key, userId)) ?? null;
  }
  async put(key: string, value: string, userId?: string): Promise<void> {
    this.secrets.set(this.k(key, userId), value);
  }
}

/** Where an extension's state lives in the fake host. */
export interface ExtState {
  storage: DirStorage;
  enclave: MemoryEnclave;
  frontend: Array<{ payload: unknown; userId?: string }>;
  onFrontend: Array<(payload: unknown, userId: string) => void>;
  onPermission: Array<(d: { permission: string; granted: boolean; allGranted: string[] }) => void>;
  logs: string[];
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

  private readonly exts = new Map<string, ExtState>();
  /** Where storage folders are made (a temp folder per host). */
  storageRoot: string | null = null;

  /** The extension's storage, enclave, frontend mailbox and listeners (made on first use). */
  ext(ext: string): ExtState {
    let e = this.exts.get(ext);
    if (!e) {
      if (!this.storageRoot) this.storageRoot = mkdtempSync(join(tmpdir(), "tap-host-"));
      e = { storage: new DirStorage(join(this.storageRoot, ext, "storage")), enclave: new MemoryEnclave(), frontend: [], onFrontend: [], onPermission: [], logs: [] };
      this.exts.set(ext, e);
    }
    return e;
  }

  /** Sends `payload` from the extension's frontend, as the host does. */
  fromFrontend(ext: string, payload: unknown, userId = "user_owner") {
    for (const h of this.ext(ext).onFrontend) h(payload, userId);
  }

  /** Grants or revokes as the host's permissions route does: one permission_changed per
   * permission, each with the whole granted set. */
  changePermissions(ext: string, grant: string[], revoke: string[] = []) {
    for (const p of grant) this.grant(ext, p);
    for (const p of revoke) this.revoke(ext, p);
    const all = [...(this.grants.get(ext) ?? [])];
    for (const p of grant) for (const h of this.ext(ext).onPermission) h({ permission: p, granted: true, allGranted: all });
    for (const p of revoke) for (const h of this.ext(ext).onPermission) h({ permission: p, granted: false, allGranted: all });
  }

  /** The `spindle` an extension sees. */
  spindleFor(ext: string) {
    const host = this;
    const st = this.ext(ext);
    return {
      storage: st.storage,
      enclave: st.enclave,
      onFrontendMessage(h: (payload: unknown, userId: string) => void) {
        st.onFrontend.push(h);
        return () => st.onFrontend.splice(st.onFrontend.indexOf(h), 1);
      },
      sendToFrontend(payload: unknown, userId?: string) {
        st.frontend.push({ payload, userId });
      },
      permissions: {
        onChanged(h: (d: { permission: string; granted: boolean; allGranted: string[] }) => void) {
          st.onPermission.push(h);
          return () => st.onPermission.splice(st.onPermission.indexOf(h), 1);
        },
      },
      log: { info: (m: string) => st.logs.push(m), warn: (m: string) => st.logs.push(m), error: (m: string) => st.logs.push(m) },
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
        // The owner calls the handler inside Promise.resolve(handler(...)) (worker-runtime.ts).
        return await Promise.race([Promise.resolve(e.handler({ endpoint, requesterExtensionId: requester })), timeout]);
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
