// The tap: wraps a phone-line handler so each call becomes an `event.phoneline.dial`, keeps an
// outbox until the desktop acknowledges it, and keeps one link to the paired desktop (hello
// with proof, replay, keepalive, reconnect with backoff). docs/protocol.md, "Phone-line events",
// "Acknowledgement and replay", "Session", "Keepalive".

import { AsyncLocalStorage } from "node:async_hooks";
import { performance } from "node:perf_hooks";
import { Conn, LinkError, MAX_FRAME_BYTES, type Frame } from "./conn.js";
import { freshState, loadState, saveState, saveStateSync, type TapState } from "./state.js";
import { Ed25519, fromB64url, randomId, rfc3339, verifyB64 } from "./wire.js";

/** The request context the host passes a handler (`phone-line.md`, "How it works"). */
export interface RpcContext {
  requesterExtensionId?: string;
  [k: string]: unknown;
}

/** A phone-line handler: `spindle.rpcPool.handle("<extId>.phoneline", handler)`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type PhoneLineHandler = (rctx: any, ...rest: any[]) => unknown;

/** The part of `spindle` the tap uses: `rpcPool.read`, to see the request the handler reads
 * from `<requester>.phoneline_request` (the tap wraps it; reads elsewhere pass through). */
export interface SpindleLike {
  rpcPool: {
    read: (endpoint: string, ...rest: any[]) => Promise<any>;
    [k: string]: any;
  };
}

/** The phone line the tap reports for. */
export interface LineInfo {
  /** The extension id (host-attested namespace), e.g. `lumirealm`. */
  identifier: string;
  /** The name its `spindle.json` declares (and its describe answers). */
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
  | { kind: "ignored"; type: string; why: string }
  | { kind: "not_paired"; stateFile: string };

/** Options of [`createTap`]. */
export interface TapOptions {
  /** The state file (identity, desktop, outbox): 0600, written atomically. Required. */
  stateFile: string;
  /** The line the handler answers for. */
  line: LineInfo;
  /** The extension's `spindle`, so the tap sees the request each call reads. */
  spindle?: SpindleLike;
  /** Send shapes only: request and response values replaced by their types (keys kept); error
   * texts kept only when they are a host or LumiRealm template, else redacted. Default false. */
  shapesOnly?: boolean;
  /** Most messages kept while the desktop is away; beyond it the oldest are dropped (in slices
   * of 1/64 of the bound) and the count reported when the link is back. Default 10 000. */
  maxQueued?: number;
  /** Retention label for dials. Default `standard`. */
  retention?: Retention;
  /** Where the tap's words go. Default `console.warn` with a `[switchboard-tap]` prefix. */
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
  /** How long the outbox may wait in memory before it is written to the state file, ms.
   * Default 200. A crash loses at most the calls of this window. */
  persistEveryMs?: number;
}

/** A bridge result of the line's own (docs/protocol.md, `event.bridge.status`). */
export interface BridgeStatus {
  source: "probe" | "permission_change";
  caller: string;
  endpoint: string;
  outcome: "ok" | "error";
  error?: string;
}

interface CallCtx {
  request?: unknown;
  read: boolean;
}

type Outcome = "ok" | "tool_error" | "error" | "timed_out";

/** Creates a tap. `tap.wrap(handler)` is the one line; see README. */
export function createTap(opts: TapOptions): Tap {
  return new Tap(opts);
}

/** A tap on one phone line. */
export class Tap {
  private readonly opts: TapOptions;
  private state: TapState;
  private outboxIds: string[];
  private key: Ed25519;
  private conn: Conn | null = null;
  private live = false;
  private stopped = false;
  private running: Promise<void> | null = null;
  private persistTimer: NodeJS.Timeout | null = null;
  private persistChain: Promise<void> = Promise.resolve();
  private dirty = false;
  private readonly als = new AsyncLocalStorage<CallCtx>();
  private readonly ids = new IdMaker();
  private describe: Record<string, unknown> | null = null;
  private wake: (() => void) | null = null;
  private readonly max: number;
  private readonly log: (line: string) => void;
  /** Messages the desktop acknowledged, this run. */
  acknowledged = 0;
  /** The desktop's last `applied` figure. */
  desktopApplied = 0;

  constructor(opts: TapOptions) {
    if (!opts.stateFile) throw new Error("switchboard-tap: stateFile is required");
    if (!opts.line?.identifier) throw new Error("switchboard-tap: line.identifier is required");
    this.opts = opts;
    this.max = Math.max(1, opts.maxQueued ?? 10_000);
    this.log = opts.log ?? ((l) => console.warn(`[switchboard-tap] ${l}`));
    let st = loadState(opts.stateFile);
    if (!st) {
      st = freshState(`${opts.line.name ?? opts.line.identifier} (switchboard-tap)`);
      saveStateSync(opts.stateFile, st);
    }
    this.state = st;
    this.outboxIds = st.outbox.map(idOf);
    this.key = new Ed25519(fromB64url(st.seed, `${opts.stateFile}: seed`, 32));
    if (opts.spindle) this.instrument(opts.spindle);
    if (opts.autoStart !== false) this.start();
  }

  /** This tap's device id (what the desktop's Phones view shows). */
  get deviceId(): string {
    return this.state.device_id;
  }

  /** Whether a desktop is paired (in the state file). */
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

  /** Wraps `handler`: the result, errors and behaviour are unchanged; each call is recorded as
   * one dial after it ends. */
  wrap<H extends PhoneLineHandler>(handler: H): H {
    const tap = this;
    const wrapped = function (this: unknown, rctx: RpcContext, ...rest: unknown[]) {
      const ctx: CallCtx = { read: false };
      const startedAt = Date.now();
      const t0 = performance.now();
      let out: unknown;
      try {
        out = tap.als.run(ctx, () => handler.call(this, rctx, ...rest));
      } catch (e) {
        tap.later(rctx, ctx, startedAt, t0, false, e);
        throw e;
      }
      if (out && typeof (out as Promise<unknown>).then === "function") {
        return (out as Promise<unknown>).then(
          (v) => {
            tap.later(rctx, ctx, startedAt, t0, true, v);
            return v;
          },
          (e) => {
            tap.later(rctx, ctx, startedAt, t0, false, e);
            throw e;
          },
        );
      }
      tap.later(rctx, ctx, startedAt, t0, true, out);
      return out;
    };
    return wrapped as unknown as H;
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
    this.enqueue("event.bridge.status", payload, null);
  }

  /** Starts the link loop (no-op when running). */
  start(): void {
    if (this.running) return;
    this.stopped = false;
    this.running = this.loop().catch((e) => this.log(`link loop ended: ${(e as Error).message}`));
  }

  /** Stops the link and writes the outbox to the state file. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    this.conn?.close();
    await this.running;
    this.running = null;
    await this.flush();
  }

  /** Writes the state (outbox included) now. */
  async flush(): Promise<void> {
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

  // ---- recording -------------------------------------------------------------------------

  private instrument(spindle: SpindleLike) {
    const pool = spindle.rpcPool;
    if ((pool.read as { __switchboardTap?: boolean }).__switchboardTap) return;
    const orig = pool.read;
    const als = this.als;
    const read = function (this: unknown, endpoint: string, ...rest: unknown[]) {
      const ctx = als.getStore();
      const p = orig.call(this ?? pool, endpoint, ...rest);
      if (!ctx || typeof endpoint !== "string" || !endpoint.endsWith(".phoneline_request")) return p;
      return Promise.resolve(p).then((v) => {
        ctx.request = v;
        ctx.read = true;
        return v;
      });
    };
    (read as { __switchboardTap?: boolean }).__switchboardTap = true;
    pool.read = read;
  }

  private later(rctx: RpcContext, ctx: CallCtx, startedAt: number, t0: number, ok: boolean, v: unknown) {
    const duration = Math.max(0, Math.round(performance.now() - t0));
    setImmediate(() => {
      try {
        this.recordDial(rctx, ctx, startedAt, duration, ok, v);
      } catch (e) {
        this.log(`could not record a dial: ${(e as Error).message}`);
      }
    });
  }

  private recordDial(rctx: RpcContext, ctx: CallCtx, startedAt: number, durationMs: number, ok: boolean, v: unknown) {
    const line = this.opts.line;
    const req = ctx.read ? ctx.request : undefined;
    const op = req && typeof req === "object" && typeof (req as { op?: unknown }).op === "string" ? (req as { op: string }).op : "unknown";
    const callId = req && typeof req === "object" && typeof (req as { callId?: unknown }).callId === "string" ? (req as { callId: string }).callId : undefined;
    let outcome: Outcome;
    const payload: Record<string, unknown> = {};
    if (callId) payload.call_id = callId;
    payload.caller = typeof rctx?.requesterExtensionId === "string" && rctx.requesterExtensionId ? rctx.requesterExtensionId : "unknown";
    payload.callee = line.identifier;
    payload.endpoint = `${line.identifier}.phoneline`;
    payload.op = op;
    const shapes = this.opts.shapesOnly === true;
    payload.request = req === undefined ? null : shapes ? shapeOf(req) : req;
    payload.started_at = rfc3339(startedAt);
    payload.duration_ms = durationMs;
    if (ok) {
      const refused = v !== null && typeof v === "object" && (v as { ok?: unknown }).ok === false && typeof (v as { error?: unknown }).error === "string";
      outcome = refused ? "tool_error" : "ok";
      // The describe manifest is the line's own metadata, never user data: kept in shapes mode.
      payload.response = v === undefined ? null : shapes && op !== "describe" ? shapeOf(v) : v;
    } else {
      outcome = "error";
      const text = errorText(v);
      payload.error = shapes ? redactError(text) : text;
    }
    payload.outcome = outcome;
    const dedup = this.ids.next("dial_", 16);
    this.enqueue("event.phoneline.dial", payload, dedup);
    if (op === "describe") {
      this.describe = ok
        ? { at: rfc3339(startedAt + durationMs), status: "answered", manifest: toJson(v) }
        : { at: rfc3339(startedAt + durationMs), status: "failed", error: payload.error };
      this.sendSettings();
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
    if (text.length > (MAX_FRAME_BYTES - 1024) / 3 && Buffer.byteLength(text) > MAX_FRAME_BYTES - 1024) {
      // Too big for one frame: keep the shapes so the dial still counts (and says so).
      const p = frame.payload as Record<string, unknown>;
      if ("request" in p) p.request = shapeOf(p.request);
      if ("response" in p) p.response = shapeOf(p.response);
      p["x-tap-note"] = "values left out: the frame would exceed 1 MiB";
      text = JSON.stringify(frame);
      if (Buffer.byteLength(text) > MAX_FRAME_BYTES - 1024) {
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
  }

  // ---- persistence -----------------------------------------------------------------------

  private schedulePersist() {
    this.dirty = true;
    if (this.persistTimer || !this.state.desktop) return;
    this.persistTimer = setTimeout(() => {
      this.persistTimer = null;
      void this.persist();
    }, this.opts.persistEveryMs ?? 200);
    this.persistTimer.unref?.();
  }

  private persist(): Promise<void> {
    this.persistChain = this.persistChain.then(async () => {
      if (!this.dirty || !this.state.desktop) return;
      this.dirty = false;
      try {
        await saveState(this.opts.stateFile, this.state);
      } catch (e) {
        this.dirty = true;
        this.log(`could not write ${this.opts.stateFile}: ${(e as Error).message}`);
      }
    });
    return this.persistChain;
  }

  // ---- the link --------------------------------------------------------------------------

  private notice(n: TapNotice, words: string) {
    this.log(words);
    this.opts.onNotice?.(n);
  }

  private async loop() {
    const initial = this.opts.backoffMs?.initial ?? 500;
    const maxDelay = this.opts.backoffMs?.max ?? 30_000;
    let delay = initial;
    let warnedUnpaired = false;
    for (let round = 0; !this.stopped; round++) {
      if (!this.state.desktop) {
        // Not paired: nothing is sent. Pick up a pairing done by the CLI on the same file.
        const onDisk = safeLoad(this.opts.stateFile);
        if (onDisk?.desktop && onDisk.device_id === this.state.device_id) {
          this.state.desktop = onDisk.desktop;
          this.schedulePersist();
          continue;
        }
        if (!warnedUnpaired) {
          warnedUnpaired = true;
          this.notice({ kind: "not_paired", stateFile: this.opts.stateFile }, `not paired: run npx switchboard-tap pair '<link>' --state ${this.opts.stateFile}; calls are kept (at most ${this.max}) and nothing is sent until then`);
        }
        await this.pause(2000);
        continue;
      }
      let reason: string;
      try {
        await this.session();
        delay = initial;
        reason = "the connection ended";
      } catch (e) {
        reason = (e as Error).message;
        if (e instanceof LinkError && e.kind === "refused") delay = Math.max(delay, 5000);
      }
      if (this.stopped) break;
      const wait = Math.min(maxDelay, delay) * (0.75 + Math.random() * 0.5);
      this.notice({ kind: "disconnected", reason, retryInMs: Math.round(wait) }, `desktop away (${reason}); retrying in ${Math.round(wait)} ms`);
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

  /** One connection: hello, replay, settings, then live until it ends. */
  private async session(): Promise<void> {
    const d = this.state.desktop!;
    const st = this.state;
    const conn = await Conn.open(d.host, d.port, d.cert_fp);
    this.conn = conn;
    try {
      const fh = conn.firstHello.payload ?? {};
      if (!verifyB64(d.public_key, `ifp1-hello-desktop|${conn.nonce}|${d.cert_fp}|${conn.exporter}`, String(fh.proof))) {
        throw new LinkError("protocol", "the desktop's hello proof does not verify with the key learned at pairing: not talking to it");
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
          proof: this.key.signB64(`ifp1-hello|${conn.nonce}|${st.device_id}|${d.cert_fp}|${conn.exporter}`),
          capabilities: [],
          protocol: { min: 1, max: 1 },
        },
        ext: { "x-ifp-public-key": this.key.publicB64() },
      };
      conn.send(hello);
      const reply = await conn.expect("control.hello", 15_000, st.entity, st.device_id);
      if (!verifyB64(d.public_key, `ifp1-hello-desktop|${conn.nonce}|${st.device_id}|${d.cert_fp}|${conn.exporter}`, String(reply.payload?.proof))) {
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
      this.notice({ kind: "connected", desktop: d.device_id, replayed }, `linked to ${d.device_id} at ${d.host}:${d.port}; replayed ${replayed}`);
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
      timer.unref?.();
      const why = await Promise.race([ended, this.stoppedPromise()]);
      clearInterval(timer);
      if (why instanceof LinkError) throw why;
    } finally {
      this.live = false;
      this.conn = null;
      conn.close();
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
      t.unref?.();
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
          saveStateSync(this.opts.stateFile, st);
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

function safeLoad(path: string): TapState | null {
  try {
    return loadState(path);
  } catch {
    return null;
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
const HOST_TEXT = /^(could not read pending request from [a-z0-9_-]+: )?(Shared RPC endpoint|Invalid shared RPC)/;
const FIXED_TEXTS = new Set(["requester extension id missing", "not authorised", "malformed request", "request missing userId"]);

/** In shapes-only mode an error text is kept when it is a host template (permission errors,
 * not registered, timed out, invalid endpoint), LumiRealm's wrapper of one, a fixed handler
 * text or `unknown op: <op>`; anything else is `"<redacted: N chars>"`. */
export function redactError(text: string): string {
  if (HOST_TEXT.test(text) || FIXED_TEXTS.has(text) || /^unknown op: [A-Za-z0-9_]+$/.test(text)) return text;
  return `<redacted: ${text.length} chars>`;
}
