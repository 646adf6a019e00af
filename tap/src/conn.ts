// One connection to the desktop over the host's global `WebSocket` (Bun), with the desktop's
// certificate as the only trust anchor and its SHA-256 compared with the pinned `fp`
// (docs/protocol.md, "Transport", "Connection opening", "Hello bindings"), and a queue of
// received frames.
//
// Bun 1.4.5's WebSocket (measured with a self-signed wss server on loopback, README "Transport"):
// `tls.ca` = the certificate PEM makes the chain verify; `checkServerIdentity` is then called
// with the peer certificate (`raw`, `fingerprint256`) and returning an Error aborts; the
// desktop's certificate names no address, so the default host-name check must be replaced by
// ours. Without `ca` a self-signed certificate is refused before `checkServerIdentity`; with
// `rejectUnauthorized: false` `checkServerIdentity` is never called (no pinning at all): that
// is used in exactly one place, `fetchDesktopCertificate`, which sends nothing.

import { createHash } from "node:crypto";
import { derToPem, fromB64url, normalizeFingerprint, randomId } from "./wire.js";

/** Frames over this many bytes are refused by the desktop (1 MiB). */
export const MAX_FRAME_BYTES = 1_048_576;

/** A received ifp/1 envelope (only the fields the tap reads are typed). */
export interface Frame {
  ifp?: string;
  id?: string;
  type?: string;
  parent?: string;
  device?: string;
  entity?: string;
  payload?: Record<string, unknown>;
  ext?: Record<string, unknown>;
  [k: string]: unknown;
}

/** A desktop that refused something, or a link that broke: `kind` says which. `no_network`:
 * the runtime may not open network connections at all (macOS sandbox runtime). */
export class LinkError extends Error {
  constructor(
    readonly kind: "certificate" | "closed" | "timeout" | "refused" | "protocol" | "no_network",
    message: string,
    readonly errorClass?: string,
  ) {
    super(message);
    this.name = "LinkError";
  }
}

/** The part of a WebSocket the tap uses (Bun's global one, or a test's). */
export interface SocketLike {
  readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  onclose: ((ev: { code?: number; reason?: string }) => void) | null;
}

/** Bun's WebSocket constructor with its `tls` option. */
export type SocketFactory = (url: string, options: { tls: Record<string, unknown> }) => SocketLike;

/** The global `WebSocket` (the host's Bun), or an error saying there is none. */
export function globalSocketFactory(): SocketFactory {
  const WS = (globalThis as { WebSocket?: new (url: string, opts: unknown) => SocketLike }).WebSocket;
  return (url, options) => {
    if (!WS) throw new LinkError("no_network", "this runtime has no global WebSocket (switchboard-tap runs inside Lumiverse, i.e. Bun)");
    return new WS(url, options);
  };
}

const OPEN = 1;

/** Texts of a runtime that may not open connections at all (macOS `sandbox` runtime's
 * `(deny network*)`, seen as EPERM / "Operation not permitted"). */
const NO_NETWORK = /\b(EPERM|EACCES)\b|operation not permitted|permission denied/i;

/** Whether `text` says the runtime may not use the network at all. */
export function isNoNetwork(text: string): boolean {
  return NO_NETWORK.test(text);
}

function wsUrl(host: string, port: number): string {
  return `wss://${host.includes(":") ? `[${host}]` : host}:${port}/ifp`;
}

/** SHA-256 (lowercase hex) of the certificate Bun hands `checkServerIdentity`. */
function peerFingerprint(cert: { raw?: Uint8Array; fingerprint256?: string } | undefined): string {
  if (cert?.raw && cert.raw.length > 0) return createHash("sha256").update(cert.raw).digest("hex");
  if (typeof cert?.fingerprint256 === "string") return normalizeFingerprint(cert.fingerprint256);
  return "(none)";
}

/** An open connection after the desktop's first `control.hello`. */
export class Conn {
  private queue: Frame[] = [];
  private waiters: Array<(f: Frame | LinkError) => void> = [];
  private ended: LinkError | null = null;
  /** Called for every frame when set (the session loop); otherwise frames queue for `next`. */
  onFrame: ((f: Frame) => void) | null = null;
  onEnd: ((e: LinkError) => void) | null = null;
  /** Epoch ms of the last frame received (any frame is a sign of life). */
  lastHeard = Date.now();
  /** This connection's nonce (`x-ifp-nonce` of the desktop's first hello). */
  nonce = "";
  /** The desktop's first `control.hello`. */
  firstHello: Frame = {};

  private constructor(private readonly ws: SocketLike) {}

  /** Opens `wss://host:port/ifp` trusting only `certPem`, refusing any certificate whose
   * SHA-256 is not `fp`, then reads the desktop's first `control.hello`. `timeoutMs` bounds
   * it all. */
  static async open(host: string, port: number, fp: string, certPem: string, timeoutMs = 10_000, factory: SocketFactory = globalSocketFactory()): Promise<Conn> {
    const want = normalizeFingerprint(fp);
    let mismatch: string | null = null;
    const tls = {
      ca: certPem,
      // Replaces Bun's host-name check (the certificate names no address): the pin is the check.
      checkServerIdentity: (_host: string, cert: { raw?: Uint8Array; fingerprint256?: string }) => {
        const got = peerFingerprint(cert);
        if (got === want) return undefined;
        mismatch = got;
        return new Error(`certificate ${got} is not the pinned ${want}`);
      },
    };
    const conn = await Conn.connect(wsUrl(host, port), tls, timeoutMs, factory, () =>
      mismatch ? new LinkError("certificate", `the desktop at ${host}:${port} presented certificate ${mismatch}, not the pinned ${want}: not connecting`) : null,
    );
    try {
      const hello = await conn.next(timeoutMs);
      const nonce = hello.ext?.["x-ifp-nonce"];
      if (hello.type !== "control.hello" || typeof nonce !== "string") {
        throw new LinkError("protocol", `the desktop's first frame was ${hello.type ?? "untyped"}, not control.hello with x-ifp-nonce`);
      }
      conn.nonce = nonce;
      conn.firstHello = hello;
      return conn;
    } catch (e) {
      conn.close();
      throw e;
    }
  }

  private static connect(url: string, tls: Record<string, unknown>, timeoutMs: number, factory: SocketFactory, why: () => LinkError | null): Promise<Conn> {
    return new Promise((resolve, reject) => {
      let ws: SocketLike;
      try {
        ws = factory(url, { tls });
      } catch (e) {
        const text = (e as Error).message;
        reject(e instanceof LinkError ? e : new LinkError(isNoNetwork(text) ? "no_network" : "closed", `cannot open ${url}: ${text}`));
        return;
      }
      const conn = new Conn(ws);
      let opened = false;
      const timer = setTimeout(() => {
        if (opened) return;
        try {
          ws.close();
        } catch {
          // not open yet
        }
        reject(new LinkError("timeout", `${url}: not connected within ${timeoutMs} ms`));
      }, timeoutMs);
      ws.onopen = () => {
        opened = true;
        clearTimeout(timer);
        resolve(conn);
      };
      ws.onmessage = (ev) => {
        conn.lastHeard = Date.now();
        if (typeof ev.data !== "string") return;
        let f: Frame;
        try {
          f = JSON.parse(ev.data) as Frame;
        } catch {
          return;
        }
        if (typeof f !== "object" || f === null) return;
        conn.push(f);
      };
      ws.onerror = (ev) => {
        const text = (ev as { message?: string })?.message ?? "connection failed";
        const e = why() ?? new LinkError(isNoNetwork(text) ? "no_network" : "closed", `${url}: ${text}`);
        if (!opened) {
          clearTimeout(timer);
          reject(e);
        }
        conn.end(e);
      };
      ws.onclose = (ev) => {
        const e = why() ?? new LinkError("closed", `connection closed (${ev?.code ?? "?"}${ev?.reason ? " " + ev.reason : ""})`);
        if (!opened) {
          clearTimeout(timer);
          reject(e);
        }
        conn.end(e);
      };
    });
  }

  private push(f: Frame) {
    if (this.onFrame) {
      this.onFrame(f);
      return;
    }
    const w = this.waiters.shift();
    if (w) w(f);
    else this.queue.push(f);
  }

  /** Puts frames taken by an `onFrame` back in front of the queue, in order. */
  requeue(frames: Frame[]): void {
    for (const f of frames) this.push(f);
  }

  private end(e: LinkError) {
    if (this.ended) return;
    this.ended = e;
    for (const w of this.waiters.splice(0)) w(e);
    this.onEnd?.(e);
  }

  /** Whether the connection has ended. */
  get closed(): boolean {
    return this.ended !== null;
  }

  /** The next frame, or a `LinkError` after `timeoutMs` or when the connection ends. */
  next(timeoutMs: number): Promise<Frame> {
    const f = this.queue.shift();
    if (f) return Promise.resolve(f);
    if (this.ended) return Promise.reject(this.ended);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const i = this.waiters.indexOf(w);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(new LinkError("timeout", `no answer from the desktop within ${timeoutMs} ms`));
      }, timeoutMs);
      const w = (x: Frame | LinkError) => {
        clearTimeout(timer);
        if (x instanceof LinkError) reject(x);
        else resolve(x);
      };
      this.waiters.push(w);
    });
  }

  /** The next frame that is not a ping (answered) nor an ack; an `error` becomes a refusal. */
  async expect(type: string, timeoutMs: number, entity: string, device: string): Promise<Frame> {
    const end = Date.now() + timeoutMs;
    for (let i = 0; i < 1000; i++) {
      const f = await this.next(Math.max(1, end - Date.now()));
      if (f.type === "control.ping") {
        this.send({ ifp: "1", id: randomId("msg_", 20), ts: new Date().toISOString(), type: "control.pong", entity, device, parent: f.id, payload: {} });
        continue;
      }
      if (f.type === "control.ack") continue;
      if (f.type === "error") {
        const p = f.payload ?? {};
        throw new LinkError("refused", `the desktop refused: ${String(p.class)}${p.detail ? ": " + String(p.detail) : ""}`, String(p.class));
      }
      if (f.type !== type) throw new LinkError("protocol", `expected ${type} from the desktop, got ${f.type}`);
      return f;
    }
    throw new LinkError("protocol", `no ${type} within 1000 frames`);
  }

  /** Sends one envelope as a text frame. */
  send(v: unknown): void {
    this.sendText(JSON.stringify(v));
  }

  /** Sends one already serialised envelope. */
  sendText(text: string): void {
    if (this.ended || this.ws.readyState !== OPEN) {
      throw new LinkError("closed", "connection is not open");
    }
    this.ws.send(text);
  }

  /** Closes the connection (no-op when closed). */
  close(): void {
    try {
      this.ws.close(1000);
    } catch {
      // already gone
    }
    this.end(new LinkError("closed", "closed by the tap"));
  }

  /** Fetches the desktop's certificate when only its fingerprint `fp` is known (a pairing
   * link): ONE connection that sends nothing at all, reads the desktop's first
   * `control.hello`, takes `ext["x-ifp-cert"]` (base64url DER) and accepts it only when its
   * SHA-256 is `fp`; then closes. Returns the certificate as PEM, for `tls.ca` of every later
   * connection.
   *
   * WHY `rejectUnauthorized: false` here, and only here: Bun refuses a self-signed chain it
   * was not given before any callback can see the certificate, and offers no other way to
   * read it. Skipping the chain check on this connection is harmless: nothing is sent on it
   * (no pairing code, no key, no dial), what is read is trusted only after its hash equals
   * the fingerprint the person brought from the desktop's screen, and the connection is
   * closed at once. Never use this for anything else (Bun then ignores `checkServerIdentity`:
   * no pinning at all). docs/protocol.md, "Hello bindings", "Getting the certificate". */
  static async fetchDesktopCertificate(host: string, port: number, fp: string, timeoutMs = 10_000, factory: SocketFactory = globalSocketFactory()): Promise<string> {
    const want = normalizeFingerprint(fp);
    const conn = await Conn.connect(wsUrl(host, port), { rejectUnauthorized: false }, timeoutMs, factory, () => null);
    try {
      const hello = await conn.next(timeoutMs);
      const b64 = hello.type === "control.hello" ? hello.ext?.["x-ifp-cert"] : undefined;
      if (typeof b64 !== "string") {
        throw new LinkError("protocol", `the desktop at ${host}:${port} did not send its certificate (ext.x-ifp-cert of its first control.hello): it is too old for switchboard-tap; update Switchboard`);
      }
      const der = fromB64url(b64, "ext.x-ifp-cert");
      const got = createHash("sha256").update(der).digest("hex");
      if (got !== want) {
        throw new LinkError("certificate", `the desktop at ${host}:${port} sent certificate ${got}, not the pairing link's ${want}: not pairing (is this the right desktop?)`);
      }
      return derToPem(der);
    } finally {
      conn.close();
    }
  }
}
