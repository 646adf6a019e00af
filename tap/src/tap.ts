// The tap: wraps a phone-line handler so each call becomes an `event.phoneline.dial`, keeps an
// outbox in the host's storage until the desktop acknowledges it, and keeps one link to the
// paired desktop (pinned hello, replay, keepalive, reconnect with backoff). Runs inside the
// Lumiverse host's extension process and uses only what its install scanner allows
// (../shared/specs/lumiverse-host.md). docs/protocol.md, "Phone-line events",
// "Acknowledgement and replay", "Session", "Hello bindings", "Keepalive".

import { AsyncLocalStorage } from "node:async_hooks";
import { performance } from "node:perf_hooks";
import { Conn, globalSocketFactory, LinkError, MAX_FRAME_BYTES, type Frame, type SocketFactory } from "./conn.js";
import { pairWithLink } from "./pair.js";
import { freshIdentity, loadKey, loadState, saveKey, saveState, type DesktopRecord, type EnclaveLike, type StorageLike, type TapState } from "./store.js";
import { answerPinnedText, BINDING, Ed25519, helloPinnedText, introPinnedText, randomId, rfc3339, verifyB64 } from "./wire.js";

/** The request context the host passes a handler (`{endpoint, requesterExtensionId,
 * effectivePermissions}`, the host's shared-rpc-pool docs, "handle"). */
export interface RpcContext {
  endpoint?: string;
  requesterExtensionId?: string;
  [k: string]: unknown;
}

/** A phone-line handler: `spindle.rpcPool.handle("<extId>.phoneline", handler)`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type PhoneLineHandler = (rctx: any, ...rest: any[]) => unknown;

/** The part of the extension's `spindle` the tap uses. `storage` and `enclave` hold its state;
 * `rpcPool.read`/`sync` are wrapped (to see the request each call reads, and to record the
 * extension's own calls the host refuses); `onFrontendMessage`/`sendToFrontend` carry the
 * pairing piece's messages; `permissions.onChanged` tells it when grants change; `log` is
 * where it speaks. */
export interface SpindleLike {
  rpcPool: {
    read: (endpoint: string, ...rest: any[]) => Promise<any>;
    sync?: (endpoint: string, value: unknown, ...rest: any[]) => any;
    [k: string]: any;
  };
  storage: StorageLike;
  enclave: EnclaveLike;
  onFrontendMessage?: (handler: (payload: unknown, userId: string) => void) => unknown;
  sendToFrontend?: (payload: unknown, userId?: string) => void;
  permissions?: { onChanged?: (handler: (detail: { permission?: string; granted?: boolean; allGranted?: string[] }) => void) => unknown };
  log?: { info?: (m: string) => void; warn?: (m: string) => void; error?: (m: string) => void };
}

/** The phone line the tap reports for. */
export interface LineInfo {
  /** The extension id (`identifier` of spindle.json), e.g. `weatherline`. */
  identifier: string;
  /** The name its `spindle.json` declares (and its describe answers); also the name the
   * desktop shows for the tap. */
  name?: string;
  /** The permissions its `spindle.json` declares; omit when unknown. */
  permissions?: string[];
}

/** Retention label of the dials (docs/protocol.md, envelope `labels.retention`). */
export type Retention = "transient" | "standard" | "extended" | "permanent";

/** Something the tap wants the author to know (also written to `log`). */
export type TapNotice =
  | { kind: "connected"; desktop: string; replayed: number }
  | { kind: "disconnected"; reason: string; retryInMs: number }
  | { kind: "dropped"; count: number }
  | { kind: "refused"; parent?: string; errorClass: string; detail?: string }
  | { kind: "unpaired" }
  | { kind: "paired"; desktop: string; code: string }
  | { kind: "ignored"; type: string; why: string }
  | { kind: "not_paired" }
  | { kind: "no_network"; reason: string }
  | { kind: "late"; callId?: string; op: string; outcome: "ok" | "tool_error" | "error"; afterMs: number }
  | { kind: "storage"; error: string };

/** Options of [`createTap`]. */
export interface TapOptions {
  /** The line the handler answers for. */
  line: LineInfo;
  /** The extension's `spindle` (state, pairing messages, the requests each call reads). */
  spindle: SpindleLike;
  /** Send shapes only: request and response values replaced by their types (keys kept); error
   * texts kept only when they are a host or LumiRealm template, else redacted. Default false. */
  shapesOnly?: boolean;
  /** Most messages kept while the desktop is away; beyond it the oldest are dropped (in slices
   * of 1/64 of the bound) and the count reported when the link is back. Default 10 000. */
  maxQueued?: number;
  /** Retention label for dials. Default `standard`. */
  retention?: Retention;
  /** Where the tap's words go. Default `spindle.log.warn` (the host's log), prefixed. */
  log?: (line: string) => void;
  onNotice?: (n: TapNotice) => void;
  /** Start connecting at once. Default true. */
  autoStart?: boolean;
  /** First reconnect delay and its ceiling, ms. Defaults 500 and 30 000. */
  backoffMs?: { initial: number; max: number };
  /** Ping after this long without sending; the desktop counts as gone after `deadMs` without
   * hearing from it. Defaults 15 000 and 45 000 (the desktop's own intervals). */
  keepaliveMs?: number;
  deadMs?: number;
  /** How long the outbox may wait in memory before it is written to storage, ms. Default 200.
   * A crash loses at most the calls of this window. */
  persistEveryMs?: number;
  /** The host's shared-RPC timeout, ms (Lumiverse: 10 000, worker-host.ts). A handler still
   * running then is recorded `timed_out` at that moment. */
  hostTimeoutMs?: number;
  /** Answer the pairing piece's messages (`spindle.onFrontendMessage`). Default true. */
  pairingUi?: boolean;
  /** The WebSocket to use (tests); default the host's global one. */
  socketFactory?: SocketFactory;
}

/** A bridge result of the line's own (docs/protocol.md, `event.bridge.status`). */
export interface BridgeStatus {
  source: "probe" | "permission_change";
  caller: string;
  endpoint: string;
  outcome: "ok" | "error";
  error?: string;
}

/** What the pairing piece shows (sent as `{switchboardTap: "status", ...}`). */
export interface PairingStatus {
  deviceId: string;
  /** The tap's name on the desktop. */
  label: string;
  paired: boolean;
  /** "Switchboard (dev_…) at 192.0.2.20:47470" when paired. */
  desktop: string | null;
  connected: boolean;
  queued: number;
  lastError: string | null;
  /** A pairing under way: its step, and the verification code once there is one. */
  pairing: { step: "certificate" | "request" | "code" | "waiting_desktop"; code?: string } | null;
}

interface CallCtx {
  request?: unknown;
  read: boolean;
  /** The handler tried to read its request (so a failure before it is the read's own). */
  readTried: boolean;
  settled: boolean;
  timedOut: boolean;
}

type Outcome = "ok" | "tool_error" | "error" | "timed_out";

/** Host texts refusing a call before any handler ran (or a handler that never answered):
 * permission forms, missing endpoint, timeout, a stopped worker, a bad endpoint name
 * (upstream-behaviour.md, "The host's error texts"; lumiverse-host.md, section 4). */
const HOST_REFUSAL = /^(Shared RPC endpoint "[^"]*" (requires |is not registered|timed out)|Extension worker stopped$|Invalid shared RPC endpoint )/;
const HOST_TIMEOUT = /^Shared RPC endpoint "[^"]*" timed out$/;
const HOST_PERMISSION = /^Shared RPC endpoint "[^"]*" requires /;

/** Creates a tap. `tap.wrap(handler)` is the one line; see README. */
export function createTap(opts: TapOptions): Tap {
  return new Tap(opts);
}

/** A tap on one phone line. */
export class Tap {
  private readonly opts: TapOptions;
  private readonly spindle: SpindleLike;
  private state: TapState;
  private key: Ed25519;
  private outboxIds: string[];
  private loaded = false;
  private readonly early: Array<() => void> = [];
  /** Resolves once the stored state is read (or found missing or unreadable). */
  readonly ready: Promise<void>;
  private conn: Conn | null = null;
  private live = false;
  private stopped = false;
  private running: Promise<void> | null = null;
  private persistTimer: ReturnType<typeof setTimeout> | null = null;
  private persistChain: Promise<void> = Promise.resolve();
  private dirty = false;
  private readonly als = new AsyncLocalStorage<CallCtx>();
  private readonly ids = new IdMaker();
  private describe: Record<string, unknown> | null = null;
  private wake: (() => void) | null = null;
  private readonly max: number;
  private readonly log: (line: string) => void;
  private readonly factory: SocketFactory;
  private lastError: string | null = null;
  private noNetwork = false;
  private pairingNow: PairingStatus["pairing"] = null;
  private confirmWaiter: ((same: boolean) => void) | null = null;
  private readonly watchers = new Set<string | undefined>();
  private statusTimer: ReturnType<typeof setTimeout> | null = null;
  /** The last bridge result reported per path (`caller>endpoint`), so a repeat is not resent. */
  private readonly paths = new Map<string, string>();
  /** Probe endpoints read by the extension, re-read after a permission change. */
  private readonly probes = new Set<string>();
  /** Requesters whose last dial failed with a host permission text (re-checked after a
   * permission change). */
  private readonly blockedRequesters = new Set<string>();
  private lastGranted: string | null = null;
  private permTimer: ReturnType<typeof setTimeout> | null = null;
  /** The last request this extension published at `<self>.phoneline_request` (its own dials). */
  private lastOwnRequest: unknown = undefined;
  private origRead: ((endpoint: string, ...rest: any[]) => Promise<any>) | null = null;
  /** Messages the desktop acknowledged, this run. */
  acknowledged = 0;
  /** The desktop's last `applied` figure. */
  desktopApplied = 0;
  /** The pairing piece's backend side: `tap.pairing.handle(payload, userId)` answers one
   * frontend message and says whether it was the tap's (see README, "Pairing"). */
  readonly pairing: { handle: (payload: unknown, userId?: string) => boolean; status: () => PairingStatus };

  constructor(opts: TapOptions) {
    if (!opts.line?.identifier) throw new Error("switchboard-tap: line.identifier is required");
    if (!opts.spindle?.storage || !opts.spindle?.enclave || !opts.spindle?.rpcPool) {
      throw new Error("switchboard-tap: pass your extension's spindle (createTap({line, spindle})): the tap keeps its state in spindle.storage and its key in spindle.enclave");
    }
    this.opts = opts;
    this.spindle = opts.spindle;
    this.max = Math.max(1, opts.maxQueued ?? 10_000);
    const hostLog = opts.spindle.log;
    this.log = opts.log ?? ((l) => (hostLog?.warn ?? hostLog?.info ?? console.warn)(`[switchboard-tap] ${l}`));
    this.factory = opts.socketFactory ?? globalSocketFactory();
    const fresh = freshIdentity(this.lineName());
    this.state = fresh.state;
    this.key = fresh.key;
    this.outboxIds = [];
    this.pairing = { handle: (p, u) => this.handleFrontend(p, u), status: () => this.status() };
    this.instrument(opts.spindle);
    if (opts.pairingUi !== false && typeof opts.spindle.onFrontendMessage === "function") {
      opts.spindle.onFrontendMessage((payload, userId) => {
        this.handleFrontend(payload, userId);
      });
    }
    if (typeof opts.spindle.permissions?.onChanged === "function") {
      opts.spindle.permissions.onChanged((d) => this.onPermissionChanged(d?.allGranted));
    }
    this.ready = this.load();
    if (opts.autoStart !== false) this.start();
  }

  private lineName(): string {
    return this.opts.line.name ?? this.opts.line.identifier;
  }

  private async load(): Promise<void> {
    try {
      const st = await loadState(this.spindle.storage);
      if (st) {
        if (st.desktop) {
          try {
            this.key = await loadKey(this.spindle.enclave, st);
          } catch (e) {
            this.lastError = (e as Error).message;
            this.log(`${this.lastError}; keeping nothing of the old pairing`);
            st.desktop = null;
            st.outbox = [];
          }
        }
        if (st.desktop) {
          this.state = st;
          this.outboxIds = st.outbox.map(idOf);
        }
      }
    } catch (e) {
      this.lastError = `could not read the tap's state: ${(e as Error).message}`;
      this.notice({ kind: "storage", error: this.lastError }, this.lastError);
    } finally {
      this.loaded = true;
      for (const f of this.early.splice(0)) f();
      this.pushStatus();
    }
  }

  /** This tap's device id (what the desktop's Phones view shows). */
  get deviceId(): string {
    return this.state.device_id;
  }

  /** Whether a desktop is paired. */
  get paired(): boolean {
    return this.state.desktop !== null;
  }

  /** Messages waiting for the desktop's acknowledgement. */
  get queued(): number {
    return this.state.outbox.length;
  }

  /** Whether the link is up (hello done). */
  get connected(): boolean {
    return this.live;
  }

  /** Wraps `handler`: its result and its errors reach the host unchanged, and each call is
   * recorded as one dial. The wrapped handler always returns a promise, so a synchronous throw
   * becomes a rejection (recorded `error`) instead of escaping into the host's message loop,
   * which stops the extension's process. A handler still running when the host's shared-RPC
   * timeout fires is recorded `timed_out` then (the host has already answered the caller);
   * its late end is logged and noticed, not sent as a second dial. */
  wrap<H extends PhoneLineHandler>(handler: H): (...args: Parameters<H>) => Promise<Awaited<ReturnType<H>>> {
    const tap = this;
    const timeoutMs = this.opts.hostTimeoutMs ?? 10_000;
    return function (this: unknown, rctx: RpcContext, ...rest: unknown[]) {
      const ctx: CallCtx = { read: false, readTried: false, settled: false, timedOut: false };
      const startedAt = Date.now();
      const t0 = performance.now();
      let p: Promise<unknown>;
      try {
        p = Promise.resolve(tap.als.run(ctx, () => handler.call(this, rctx, ...rest)));
      } catch (e) {
        p = Promise.reject(e);
      }
      const timer = setTimeout(() => {
        if (ctx.settled) return;
        ctx.timedOut = true;
        const endpoint = `${tap.opts.line.identifier}.phoneline`;
        tap.later(rctx, ctx, startedAt, timeoutMs, "timed_out", `Shared RPC endpoint "${endpoint}" timed out`);
      }, timeoutMs);
      return p.then(
        (v) => {
          ctx.settled = true;
          clearTimeout(timer);
          tap.ended(rctx, ctx, startedAt, t0, true, v);
          return v;
        },
        async (e) => {
          ctx.settled = true;
          clearTimeout(timer);
          if (!ctx.read && !ctx.readTried && !ctx.timedOut) await tap.peekRequest(rctx, ctx);
          tap.ended(rctx, ctx, startedAt, t0, false, e);
          throw e;
        },
      );
    } as (...args: Parameters<H>) => Promise<Awaited<ReturnType<H>>>;
  }

  /** Forwards a bridge result of the line's own (a probe read, a permission change) as
   * `event.bridge.status`. Throws when the shape is wrong (before anything is queued). */
  reportBridgeStatus(s: BridgeStatus): void {
    if (s.source !== "probe" && s.source !== "permission_change") throw new Error(`reportBridgeStatus: source must be "probe" or "permission_change", got ${JSON.stringify(s.source)}`);
    if (typeof s.caller !== "string" || !s.caller) throw new Error("reportBridgeStatus: caller must be a non-empty string");
    if (typeof s.endpoint !== "string" || !s.endpoint) throw new Error("reportBridgeStatus: endpoint must be a non-empty string");
    if (s.outcome !== "ok" && s.outcome !== "error") throw new Error(`reportBridgeStatus: outcome must be "ok" or "error", got ${JSON.stringify(s.outcome)}`);
    if (s.outcome === "error" && (typeof s.error !== "string" || !s.error)) throw new Error("reportBridgeStatus: an error outcome needs its error text");
    const payload: Record<string, unknown> = { source: s.source, caller: s.caller, endpoint: s.endpoint, outcome: s.outcome };
    if (s.outcome === "error") payload.error = this.opts.shapesOnly ? redactError(String(s.error)) : s.error;
    this.paths.set(`${s.caller}>${s.endpoint}`, s.outcome === "ok" ? "ok" : String(s.error));
    this.enqueue("event.bridge.status", payload, null);
  }

  /** Starts the link loop (no-op when running). */
  start(): void {
    if (this.running) return;
    this.stopped = false;
    this.running = this.loop().catch((e) => this.log(`link loop ended: ${(e as Error).message}`));
  }

  /** Stops the link and writes the outbox to storage. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    this.conn?.close();
    this.confirmWaiter?.(false);
    await this.running;
    this.running = null;
    if (this.statusTimer) clearTimeout(this.statusTimer);
    if (this.permTimer) clearTimeout(this.permTimer);
    await this.flush();
  }

  /** Writes the state (outbox included) now. */
  async flush(): Promise<void> {
    await this.ready;
    if (this.persistTimer) {
      clearTimeout(this.persistTimer);
      this.persistTimer = null;
    }
    this.dirty = true;
    await this.persist();
  }

  /** Waits until the outbox is empty (everything acknowledged) or `timeoutMs` passes; returns
   * whether it emptied. */
  async drained(timeoutMs: number): Promise<boolean> {
    const end = Date.now() + timeoutMs;
    while (Date.now() < end) {
      if (this.state.outbox.length === 0) return true;
      await sleep(20);
    }
    return this.state.outbox.length === 0;
  }

  // ---- pairing (the settings piece's backend side) ---------------------------------------

  /** Answers one message of the pairing piece (`{switchboardTap: "status" | "pair" |
   * "confirm" | "cancel", ...}`); returns false for any other message. */
  private handleFrontend(payload: unknown, userId?: string): boolean {
    if (!payload || typeof payload !== "object" || typeof (payload as { switchboardTap?: unknown }).switchboardTap !== "string") return false;
    const m = payload as { switchboardTap: string; link?: unknown; codesMatch?: unknown };
    this.watchers.add(userId);
    switch (m.switchboardTap) {
      case "status":
        break;
      case "pair":
        if (typeof m.link !== "string") {
          this.lastError = "pairing: paste the pairing link the desktop shows (switchboard://pair?...)";
        } else if (this.pairingNow) {
          this.lastError = "a pairing is already under way: finish or cancel it first";
        } else {
          void this.pairFromLink(m.link, userId);
        }
        break;
      case "confirm":
        this.confirmWaiter?.(m.codesMatch === true);
        break;
      case "cancel":
        this.confirmWaiter?.(false);
        break;
      default:
        this.lastError = `unknown pairing message ${JSON.stringify(m.switchboardTap)}`;
    }
    this.pushStatus(true);
    return true;
  }

  /** Pairs from a pairing link, as the pairing piece does; `confirm` is asked with the
   * verification code. Resolves once paired (the desktop is stored), rejects saying why. */
  async pairWith(link: string, confirm: (code: string) => Promise<boolean>, userId?: string): Promise<{ deviceId: string; desktopDeviceId: string; verificationCode: string }> {
    await this.ready;
    const st = this.state;
    const r = await pairWithLink(
      link,
      { key: this.key, deviceId: st.device_id, entity: st.entity, label: this.lineName() },
      {
        confirm,
        progress: (step) => {
          this.pairingNow = { step };
          this.pushStatus();
        },
        socketFactory: this.factory,
      },
    );
    // The key first: a state naming a desktop whose key is not stored would be unusable.
    await saveKey(this.spindle.enclave, this.key, userId ?? null);
    st.enclave_user = userId ?? null;
    st.label = this.lineName();
    st.desktop = r.desktop;
    await saveState(this.spindle.storage, st);
    this.lastError = null;
    this.noNetwork = false;
    this.notice({ kind: "paired", desktop: r.desktop.device_id, code: r.code }, `paired with ${r.desktop.device_id} at ${r.desktop.host}:${r.desktop.port} (code ${r.code})`);
    this.conn?.close();
    this.wake?.();
    return { deviceId: st.device_id, desktopDeviceId: r.desktop.device_id, verificationCode: r.code };
  }

  private async pairFromLink(link: string, userId?: string): Promise<void> {
    this.pairingNow = { step: "certificate" };
    this.lastError = null;
    this.pushStatus();
    try {
      await this.pairWith(
        link,
        (code) =>
          new Promise<boolean>((resolve) => {
            this.pairingNow = { step: "code", code };
            this.confirmWaiter = (same) => {
              this.confirmWaiter = null;
              resolve(same);
            };
            this.pushStatus();
          }),
        userId,
      );
    } catch (e) {
      this.lastError = `pairing failed: ${(e as Error).message}`;
      this.log(this.lastError);
    } finally {
      this.confirmWaiter = null;
      this.pairingNow = null;
      this.pushStatus(true);
    }
  }

  private status(): PairingStatus {
    const d = this.state.desktop;
    return {
      deviceId: this.state.device_id,
      label: this.lineName(),
      paired: d !== null,
      desktop: d ? `${d.label ?? "Switchboard"} (${d.device_id}) at ${d.host}:${d.port}` : null,
      connected: this.live,
      queued: this.state.outbox.length,
      lastError: this.lastError,
      pairing: this.pairingNow,
    };
  }

  /** Sends the status to every frontend that talked to the tap (at once, or at most every
   * 500 ms for changes of the queue). */
  private pushStatus(now = false) {
    if (!this.spindle.sendToFrontend || this.watchers.size === 0) return;
    if (!now && this.statusTimer) return;
    const send = () => {
      this.statusTimer = null;
      const s = { switchboardTap: "status", ...this.status() };
      for (const u of this.watchers) {
        try {
          this.spindle.sendToFrontend!(s, u);
        } catch (e) {
          this.log(`could not send the pairing status: ${(e as Error).message}`);
        }
      }
    };
    if (now) {
      if (this.statusTimer) clearTimeout(this.statusTimer);
      send();
      return;
    }
    this.statusTimer = setTimeout(send, 500);
  }

  // ---- recording -------------------------------------------------------------------------

  private instrument(spindle: SpindleLike) {
    const pool = spindle.rpcPool;
    if ((pool.read as { __switchboardTap?: boolean }).__switchboardTap) return;
    const orig = pool.read;
    this.origRead = (endpoint, ...rest) => orig.call(pool, endpoint, ...rest);
    const tap = this;
    const read = function (this: unknown, endpoint: string, ...rest: unknown[]) {
      const ctx = tap.als.getStore();
      const own = ctx !== undefined && typeof endpoint === "string" && endpoint.endsWith(".phoneline_request");
      if (own) ctx.readTried = true;
      const t0 = performance.now();
      const startedAt = Date.now();
      let p: Promise<unknown>;
      try {
        p = Promise.resolve(orig.call(this ?? pool, endpoint, ...rest));
      } catch (e) {
        p = Promise.reject(e);
      }
      return p.then(
        (v) => {
          if (own) {
            ctx.request = v;
            ctx.read = true;
          } else tap.ownRead(endpoint, startedAt, t0, true, v);
          return v;
        },
        (e) => {
          if (!own) tap.ownRead(endpoint, startedAt, t0, false, e);
          throw e;
        },
      );
    };
    (read as { __switchboardTap?: boolean }).__switchboardTap = true;
    pool.read = read;
    if (typeof pool.sync === "function") {
      const origSync = pool.sync;
      pool.sync = function (this: unknown, endpoint: string, value: unknown, ...rest: unknown[]) {
        try {
          const r = origSync.call(this ?? pool, endpoint, value, ...rest);
          if (typeof endpoint === "string" && /(^|\.)phoneline_request$/.test(endpoint)) tap.lastOwnRequest = value;
          return r;
        } catch (e) {
          const text = errorText(e);
          if (HOST_REFUSAL.test(text)) {
            const ep = typeof endpoint === "string" && endpoint.includes(".") ? endpoint : `${tap.opts.line.identifier}.${String(endpoint)}`;
            tap.bridge("probe", tap.opts.line.identifier, ep, false, text);
          }
          throw e;
        }
      };
    }
  }

  /** A read the extension made itself (not its handler's read of its request): a dial of
   * another phone line (`<x>.phoneline`) the host refused is recorded as a dial on the
   * caller's side; a read of another phone-line channel (a probe) as a bridge result, sent
   * only when it differs from the path's last one. */
  private ownRead(endpoint: string, startedAt: number, t0: number, ok: boolean, v: unknown) {
    if (typeof endpoint !== "string") return;
    const me = this.opts.line.identifier;
    const m = /^([a-z0-9_-]+)\.([a-z0-9_-]+)$/.exec(endpoint);
    const text = ok ? "" : errorText(v);
    if (m && m[2] === "phoneline") {
      if (ok || !HOST_REFUSAL.test(text)) return; // answered by the callee's handler: its own tap records it
      const durationMs = Math.max(0, Math.round(performance.now() - t0));
      const req = this.lastOwnRequest;
      const outcome: Outcome = HOST_TIMEOUT.test(text) ? "timed_out" : "error";
      this.whenLoaded(() => this.recordOne({ caller: me, callee: m[1]!, endpoint, req, read: req !== undefined, startedAt, durationMs, outcome, error: text }));
      return;
    }
    if (!/^phoneline/.test(m?.[2] ?? endpoint)) return;
    if (!ok && !HOST_REFUSAL.test(text)) return;
    this.probes.add(endpoint);
    this.bridge("probe", me, endpoint, ok, text);
  }

  /** One bridge result for the path `caller` → `endpoint`, unless it repeats the last one. */
  private bridge(source: BridgeStatus["source"], caller: string, endpoint: string, ok: boolean, text: string) {
    const key = `${caller}>${endpoint}`;
    const now = ok ? "ok" : text;
    if (this.paths.get(key) === now) return;
    if (this.paths.get(key) === undefined && ok && source === "probe") {
      this.paths.set(key, now); // a first ok clears nothing: nothing to say
      return;
    }
    this.whenLoaded(() => this.reportBridgeStatus(ok ? { source, caller, endpoint, outcome: "ok" } : { source, caller, endpoint, outcome: "error", error: text }));
  }

  /** A failure before the handler read its request: reads the requester's published request
   * itself (a read of a synced value changes nothing) so the dial still carries its call id
   * and op. Bounded to 2 s; nothing when it cannot. */
  private async peekRequest(rctx: RpcContext, ctx: CallCtx): Promise<void> {
    const who = rctx?.requesterExtensionId;
    if (typeof who !== "string" || !/^[a-z0-9_-]+$/.test(who) || !this.origRead) return;
    try {
      const v = await Promise.race([this.origRead(`${who}.phoneline_request`), sleep(2000).then(() => undefined)]);
      if (v !== undefined) {
        ctx.request = v;
        ctx.read = true;
      }
    } catch {
      // the request is not readable either: the dial goes without it
    }
  }

  private ended(rctx: RpcContext, ctx: CallCtx, startedAt: number, t0: number, ok: boolean, v: unknown) {
    const duration = Math.max(0, Math.round(performance.now() - t0));
    if (ctx.timedOut) {
      const op = opOf(ctx.read ? ctx.request : undefined);
      const callId = callIdOf(ctx.read ? ctx.request : undefined);
      const outcome = ok ? (isToolError(v) ? "tool_error" : "ok") : "error";
      this.notice(
        { kind: "late", callId, op, outcome, afterMs: duration },
        `a ${op} call${callId ? ` (${callId})` : ""} ended ${outcome} after ${duration} ms, past the host's ${this.opts.hostTimeoutMs ?? 10_000} ms timeout: the caller had already got "timed out" (recorded so)`,
      );
      return;
    }
    this.later(rctx, ctx, startedAt, duration, ok ? "ok" : "error", v);
  }

  private later(rctx: RpcContext, ctx: CallCtx, startedAt: number, durationMs: number, how: "ok" | "error" | "timed_out", v: unknown) {
    setImmediate(() =>
      this.whenLoaded(() => {
        try {
          this.recordDial(rctx, ctx, startedAt, durationMs, how, v);
        } catch (e) {
          this.log(`could not record a dial: ${(e as Error).message}`);
        }
      }),
    );
  }

  private whenLoaded(f: () => void) {
    if (this.loaded) f();
    else this.early.push(f);
  }

  private recordDial(rctx: RpcContext, ctx: CallCtx, startedAt: number, durationMs: number, how: "ok" | "error" | "timed_out", v: unknown) {
    const line = this.opts.line;
    const caller = typeof rctx?.requesterExtensionId === "string" && rctx.requesterExtensionId ? rctx.requesterExtensionId : "unknown";
    let outcome: Outcome;
    let error: string | undefined;
    if (how === "ok") outcome = isToolError(v) ? "tool_error" : "ok";
    else {
      outcome = how;
      error = how === "timed_out" ? String(v) : errorText(v);
      const inner = error.replace(/^could not read pending request from [a-z0-9_-]+: /, "");
      if (HOST_PERMISSION.test(inner)) this.blockedRequesters.add(caller);
    }
    if (how === "ok") this.blockedRequesters.delete(caller);
    const op = this.recordOne({
      caller,
      callee: line.identifier,
      endpoint: `${line.identifier}.phoneline`,
      req: ctx.read ? ctx.request : undefined,
      read: ctx.read,
      startedAt,
      durationMs,
      outcome,
      error,
      response: how === "ok" ? v : undefined,
    });
    if (op === "describe" && how !== "timed_out") {
      this.describe =
        how === "ok"
          ? { at: rfc3339(startedAt + durationMs), status: "answered", manifest: toJson(v) }
          : { at: rfc3339(startedAt + durationMs), status: "failed", error: this.opts.shapesOnly ? redactError(String(error)) : error };
      this.sendSettings();
    }
  }

  /** Queues one `event.phoneline.dial`; returns its op. */
  private recordOne(d: { caller: string; callee: string; endpoint: string; req: unknown; read: boolean; startedAt: number; durationMs: number; outcome: Outcome; error?: string; response?: unknown }): string {
    const req = d.read ? d.req : undefined;
    const op = opOf(req);
    const callId = callIdOf(req);
    const shapes = this.opts.shapesOnly === true;
    const payload: Record<string, unknown> = {};
    if (callId) payload.call_id = callId;
    payload.caller = d.caller;
    payload.callee = d.callee;
    payload.endpoint = d.endpoint;
    payload.op = op;
    payload.request = req === undefined ? null : shapes ? shapeOf(req) : req;
    payload.started_at = rfc3339(d.startedAt);
    payload.duration_ms = d.durationMs;
    if (d.outcome === "ok" || d.outcome === "tool_error") {
      // The describe manifest is the line's own metadata, never user data: kept in shapes mode.
      payload.response = d.response === undefined ? null : shapes && op !== "describe" ? shapeOf(d.response) : d.response;
    } else {
      payload.error = shapes ? redactError(String(d.error)) : d.error;
    }
    payload.outcome = d.outcome;
    this.enqueue("event.phoneline.dial", payload, this.ids.next("dial_", 16));
    return op;
  }

  private onPermissionChanged(allGranted: string[] | undefined) {
    // The host posts one permission_changed per permission of a grant or revoke request
    // (spindle.routes.ts), each with the whole granted set: wait for the burst to end, then
    // look once, and only if the set really changed.
    if (this.permTimer) clearTimeout(this.permTimer);
    this.permTimer = setTimeout(() => {
      this.permTimer = null;
      const now = Array.isArray(allGranted) ? [...allGranted].sort().join(",") : null;
      if (now !== null && now === this.lastGranted) return;
      this.lastGranted = now;
      void this.recheckAfterPermissionChange();
    }, 300);
  }

  private async recheckAfterPermissionChange() {
    const me = this.opts.line.identifier;
    const read = this.origRead;
    if (!read) return;
    for (const endpoint of this.probes) {
      try {
        await read(endpoint);
        this.bridge("permission_change", me, endpoint, true, "");
      } catch (e) {
        const t = errorText(e);
        if (HOST_REFUSAL.test(t)) this.bridge("permission_change", me, endpoint, false, t);
      }
    }
    // The path requester → this line failed on a permission: reading the requester's published
    // request is exactly what failed; it says whether the path works now.
    for (const who of [...this.blockedRequesters]) {
      try {
        await read(`${who}.phoneline_request`);
        this.blockedRequesters.delete(who);
        this.bridge("permission_change", who, `${me}.phoneline`, true, "");
      } catch (e) {
        const t = errorText(e);
        if (HOST_PERMISSION.test(t)) this.bridge("permission_change", who, `${me}.phoneline`, false, t);
      }
    }
  }

  private settingsPayload(): Record<string, unknown> {
    const l = this.opts.line;
    const line: Record<string, unknown> = { identifier: l.identifier };
    if (l.name) line.name = l.name;
    if (l.permissions) line.permissions = l.permissions;
    if (this.describe) line.describe = this.describe;
    return {
      registry: { version: 1, phoneLines: [{ identifier: l.identifier, name: l.name ?? l.identifier }] },
      pairings: null,
      lines: [line],
    };
  }

  private sendSettings() {
    this.enqueue("event.phoneline.settings", this.settingsPayload(), null);
  }

  private enqueue(type: string, body: Record<string, unknown>, dedup: string | null) {
    if (!this.loaded) {
      this.early.push(() => this.enqueue(type, body, dedup));
      return;
    }
    const st = this.state;
    const seq = st.next_seq++;
    const ts = rfc3339(Date.now());
    const id = this.ids.next("msg_", 20);
    const frame = {
      ifp: "1",
      id,
      ts,
      type,
      entity: st.entity,
      session: st.session,
      device: st.device_id,
      generation: st.generation,
      provenance: { sensor: `${st.device_id}:phoneline`, captured_at: ts },
      labels: { consent: "product_operation", retention: this.opts.retention ?? "standard" },
      payload: { seq, dedup: dedup ?? `${st.device_id}:${st.session}:${seq}`, ...body },
    };
    let text: string;
    try {
      text = JSON.stringify(frame);
    } catch {
      // Not JSON (a cycle, a BigInt): its shape still tells what went through.
      const p = frame.payload as Record<string, unknown>;
      if ("request" in p) p.request = shapeOf(p.request);
      if ("response" in p) p.response = shapeOf(p.response);
      p["x-tap-note"] = "values left out: not JSON";
      text = JSON.stringify(frame);
    }
    if (text.length > (MAX_FRAME_BYTES - 1024) / 3 && utf8Length(text) > MAX_FRAME_BYTES - 1024) {
      // Too big for one frame: keep the shapes so the dial still counts (and says so).
      const p = frame.payload as Record<string, unknown>;
      if ("request" in p) p.request = shapeOf(p.request);
      if ("response" in p) p.response = shapeOf(p.response);
      p["x-tap-note"] = "values left out: the frame would exceed 1 MiB";
      text = JSON.stringify(frame);
      if (utf8Length(text) > MAX_FRAME_BYTES - 1024) {
        p.request = null;
        if ("response" in p) p.response = null;
        text = JSON.stringify(frame);
      }
    }
    st.outbox.push(text);
    this.outboxIds.push(id);
    if (st.outbox.length > this.max) {
      // Drop the oldest in slices of 1/64 of the bound, so a full outbox costs O(1) per call.
      const n = Math.min(st.outbox.length, st.outbox.length - this.max + Math.floor(this.max / 64));
      st.outbox.splice(0, n);
      this.outboxIds.splice(0, n);
      st.dropped += n;
    }
    if (this.live && this.conn) {
      try {
        this.conn.sendText(text);
      } catch {
        // the connection just ended; the replay sends it
      }
    }
    this.schedulePersist();
    this.pushStatus();
  }

  // ---- persistence -----------------------------------------------------------------------

  private schedulePersist() {
    this.dirty = true;
    if (this.persistTimer || !this.state.desktop) return;
    this.persistTimer = setTimeout(() => {
      this.persistTimer = null;
      void this.persist();
    }, this.opts.persistEveryMs ?? 200);
  }

  private persist(): Promise<void> {
    this.persistChain = this.persistChain.then(async () => {
      if (!this.dirty || !this.state.desktop) return;
      this.dirty = false;
      try {
        await saveState(this.spindle.storage, this.state);
      } catch (e) {
        this.dirty = true;
        this.log(`could not write the tap's state to the extension's storage: ${(e as Error).message}`);
      }
    });
    return this.persistChain;
  }

  // ---- the link --------------------------------------------------------------------------

  private notice(n: TapNotice, words: string) {
    this.log(words);
    try {
      this.opts.onNotice?.(n);
    } catch (e) {
      this.log(`onNotice threw: ${(e as Error).message}`);
    }
  }

  private async loop() {
    await this.ready;
    const initial = this.opts.backoffMs?.initial ?? 500;
    const maxDelay = this.opts.backoffMs?.max ?? 30_000;
    let delay = initial;
    let warnedUnpaired = false;
    for (let round = 0; !this.stopped; round++) {
      if (!this.state.desktop) {
        if (!warnedUnpaired) {
          warnedUnpaired = true;
          this.notice({ kind: "not_paired" }, `not paired: paste the desktop's pairing link in the extension's settings (Switchboard section); calls are kept in memory (at most ${this.max}) and nothing is sent until then`);
        }
        await this.pause(60_000);
        continue;
      }
      let reason: string;
      try {
        await this.session();
        delay = initial;
        reason = "the connection ended";
        this.noNetwork = false;
      } catch (e) {
        reason = (e as Error).message;
        if (e instanceof LinkError && e.kind === "refused") delay = Math.max(delay, 5000);
        if (e instanceof LinkError && e.kind === "no_network") {
          // A runtime without network (macOS sandbox): say it once, then try rarely and quietly.
          if (!this.noNetwork) {
            this.noNetwork = true;
            this.lastError = `no network in this runtime (${reason}): the tap cannot reach the desktop; calls are kept (at most ${this.max}). Run the extension in the "process" runtime to link it.`;
            this.notice({ kind: "no_network", reason }, this.lastError);
            this.pushStatus();
          }
          await this.pause(10 * 60_000);
          continue;
        }
      }
      if (this.stopped) break;
      this.lastError = reason;
      const wait = Math.min(maxDelay, delay) * (0.75 + Math.random() * 0.5);
      this.notice({ kind: "disconnected", reason, retryInMs: Math.round(wait) }, `desktop away (${reason}); retrying in ${Math.round(wait)} ms`);
      this.pushStatus();
      delay = Math.min(maxDelay, delay * 2);
      await this.pause(wait);
    }
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.wake = null;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(t);
        this.wake = null;
        resolve();
      };
    });
  }

  /** One connection: pinned hello, replay, settings, then live until it ends. */
  private async session(): Promise<void> {
    const d: DesktopRecord = this.state.desktop!;
    const st = this.state;
    const conn = await Conn.open(d.host, d.port, d.cert_fp, d.cert_pem, 10_000, this.factory);
    this.conn = conn;
    try {
      const intro = conn.firstHello.ext?.["x-ifp-pinned-proof"];
      if (typeof intro !== "string" || !verifyB64(d.public_key, introPinnedText(conn.nonce, d.cert_fp), intro)) {
        throw new LinkError("protocol", "the desktop's first hello has no x-ifp-pinned-proof that verifies with the key learned at pairing: not talking to it");
      }
      const hello = {
        ifp: "1",
        id: randomId("msg_", 20),
        ts: rfc3339(Date.now()),
        type: "control.hello",
        entity: st.entity,
        device: st.device_id,
        payload: {
          device_id: st.device_id,
          proof: this.key.signB64(helloPinnedText(conn.nonce, st.device_id, d.cert_fp)),
          capabilities: [],
          protocol: { min: 1, max: 1 },
        },
        ext: { "x-ifp-public-key": this.key.publicB64(), "x-ifp-binding": BINDING },
      };
      conn.send(hello);
      const reply = await conn.expect("control.hello", 15_000, st.entity, st.device_id);
      if (!verifyB64(d.public_key, answerPinnedText(conn.nonce, st.device_id, d.cert_fp), String(reply.payload?.proof))) {
        throw new LinkError("protocol", "the desktop's hello answer does not verify with the key learned at pairing");
      }
      const ended = new Promise<LinkError>((resolve) => {
        conn.onEnd = resolve;
      });
      conn.onFrame = (f) => this.onFrame(conn, f);
      // Replay the whole outbox in order, with the same ids, then the settings snapshot.
      const replayed = st.outbox.length;
      for (const text of st.outbox) conn.sendText(text);
      this.live = true;
      this.lastError = null;
      this.notice({ kind: "connected", desktop: d.device_id, replayed }, `linked to ${d.device_id} at ${d.host}:${d.port}; replayed ${replayed}`);
      this.pushStatus(true);
      if (st.dropped > 0) {
        const n = st.dropped;
        st.dropped = 0;
        this.schedulePersist();
        this.notice({ kind: "dropped", count: n }, `${n} call(s) were dropped while the desktop was away (the outbox holds at most ${this.max})`);
      }
      this.sendSettings();
      const keepalive = this.opts.keepaliveMs ?? 15_000;
      const dead = this.opts.deadMs ?? 45_000;
      const timer = setInterval(() => {
        if (Date.now() - conn.lastHeard > dead) {
          this.log(`nothing from the desktop for ${dead} ms: reconnecting`);
          conn.close();
          return;
        }
        try {
          conn.send({ ifp: "1", id: randomId("msg_", 20), ts: rfc3339(Date.now()), type: "control.ping", entity: st.entity, device: st.device_id, payload: {} });
        } catch {
          // ended
        }
      }, keepalive);
      const why = await Promise.race([ended, this.stoppedPromise()]);
      clearInterval(timer);
      if (why instanceof LinkError) throw why;
    } finally {
      this.live = false;
      this.conn = null;
      conn.close();
      this.pushStatus();
    }
  }

  private stoppedPromise(): Promise<void> {
    return new Promise((resolve) => {
      const t = setInterval(() => {
        if (this.stopped) {
          clearInterval(t);
          resolve();
        }
      }, 50);
    });
  }

  private onFrame(conn: Conn, f: Frame) {
    const st = this.state;
    switch (f.type) {
      case "control.ack": {
        const last = f.payload?.last_id;
        const applied = f.payload?.applied;
        if (typeof applied === "number") this.desktopApplied = applied;
        if (typeof last !== "string") return;
        const i = this.outboxIds.indexOf(last);
        if (i < 0) return; // an id no longer held: ignored
        st.outbox.splice(0, i + 1);
        this.outboxIds.splice(0, i + 1);
        this.acknowledged += i + 1;
        this.schedulePersist();
        this.pushStatus();
        return;
      }
      case "control.ping":
        try {
          conn.send({ ifp: "1", id: randomId("msg_", 20), ts: rfc3339(Date.now()), type: "control.pong", entity: st.entity, device: st.device_id, parent: f.id, payload: {} });
        } catch {
          // ended
        }
        return;
      case "control.pong":
        return;
      case "error": {
        const p = f.payload ?? {};
        this.notice(
          { kind: "refused", parent: f.parent, errorClass: String(p.class), detail: p.detail === undefined ? undefined : String(p.detail) },
          `the desktop refused ${f.parent ?? "a frame"}: ${String(p.class)}${p.detail ? ": " + String(p.detail) : ""}`,
        );
        return;
      }
      case "desktop.request": {
        const kind = f.payload?.kind;
        if (kind === "request_settings_snapshot") {
          this.sendSettings();
        } else if (kind === "unpair") {
          st.desktop = null;
          void saveState(this.spindle.storage, st).catch((e) => this.log(`could not write the unpairing: ${(e as Error).message}`));
          this.notice({ kind: "unpaired" }, "the desktop unpaired this tap: forgot it; pair again to send dials");
          conn.close();
        } else if (kind === "revoke_phone_line") {
          // The tap holds no pairing records (those are LumiAgent's); nothing to revoke here.
          this.notice({ kind: "ignored", type: "desktop.request revoke_phone_line", why: "a tap holds no pairing records" }, "the desktop asked to revoke a phone line: a tap holds no pairing records (LumiAgent does); ignored");
        } else {
          this.notice({ kind: "ignored", type: `desktop.request ${String(kind)}`, why: "unknown request" }, `refused an unknown desktop request ${JSON.stringify(kind)}`);
        }
        return;
      }
      default:
        // action.* and anything else: a desktop never decides anything for the line.
        this.notice({ kind: "ignored", type: String(f.type), why: "not something a desktop may send" }, `refused ${String(f.type)} from the desktop`);
    }
  }
}

function opOf(req: unknown): string {
  return req && typeof req === "object" && typeof (req as { op?: unknown }).op === "string" ? (req as { op: string }).op : "unknown";
}

function callIdOf(req: unknown): string | undefined {
  return req && typeof req === "object" && typeof (req as { callId?: unknown }).callId === "string" ? (req as { callId: string }).callId : undefined;
}

function isToolError(v: unknown): boolean {
  return v !== null && typeof v === "object" && (v as { ok?: unknown }).ok === false && typeof (v as { error?: unknown }).error === "string";
}

function utf8Length(text: string): number {
  return new TextEncoder().encode(text).length;
}

/** Message and dial ids without a random draw each: a random 8-hex prefix per tap, then a
 * counter (48 random bits per run of the tap). */
class IdMaker {
  private readonly prefix = randomId("", 12);
  private n = 0;
  next(kind: string, hexDigits: number): string {
    this.n++;
    return kind + this.prefix + this.n.toString(16).padStart(Math.max(4, hexDigits - 12), "0");
  }
}

function idOf(text: string): string {
  try {
    return String((JSON.parse(text) as { id?: unknown }).id);
  } catch {
    return "";
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** The error text exactly as thrown: an `Error`'s `message`, a string as is, anything else as
 * `String(x)`. */
export function errorText(e: unknown): string {
  if (e instanceof Error) return e.message;
  if (typeof e === "string") return e;
  if (e && typeof e === "object" && typeof (e as { message?: unknown }).message === "string") return (e as { message: string }).message;
  return String(e);
}

/** A JSON value of `v` (what `JSON.stringify` keeps; `undefined` becomes `null`). */
function toJson(v: unknown): unknown {
  if (v === undefined) return null;
  try {
    const t = JSON.stringify(v);
    return t === undefined ? null : (JSON.parse(t) as unknown);
  } catch {
    return shapeOf(v);
  }
}

/** The shape of a value: keys kept, values replaced by their type (`"<string>"`, `"<number>"`,
 * `"<boolean>"`, `null`); arrays keep their length as shapes of their items. */
export function shapeOf(v: unknown, depth = 0): unknown {
  if (v === null || v === undefined) return null;
  if (depth > 32) return "<deep>";
  switch (typeof v) {
    case "string":
      return "<string>";
    case "number":
    case "bigint":
      return "<number>";
    case "boolean":
      return "<boolean>";
    case "object":
      if (Array.isArray(v)) return v.map((x) => shapeOf(x, depth + 1));
      return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, shapeOf(x, depth + 1)]));
    default:
      return `<${typeof v}>`;
  }
}

// Texts that carry no user data: the host's (upstream-behaviour.md, "The host's error texts"),
// LumiRealm's wrapper around them, and LumiRealm's fixed handler errors.
const HOST_TEXT = /^(could not read pending request from [a-z0-9_-]+: )?(Shared RPC endpoint|Invalid shared RPC|Extension worker stopped$)/;
const FIXED_TEXTS = new Set(["requester extension id missing", "not authorised", "malformed request", "request missing userId"]);

/** In shapes-only mode an error text is kept when it is a host template (permission errors,
 * not registered, timed out, invalid endpoint), LumiRealm's wrapper of one, a fixed handler
 * text or `unknown op: <op>`; anything else is `"<redacted: N chars>"`. */
export function redactError(text: string): string {
  if (HOST_TEXT.test(text) || FIXED_TEXTS.has(text) || /^unknown op: [A-Za-z0-9_]+$/.test(text)) return text;
  return `<redacted: ${text.length} chars>`;
}
