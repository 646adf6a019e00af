// One connection to the desktop: TLS 1.3 with the pinned certificate fingerprint, the TLS
// exporter the hello proofs are bound to, the WebSocket on top and a queue of received frames
// (docs/protocol.md, "Transport", "Connection opening").

import { connect as tlsConnect, type TLSSocket } from "node:tls";
import { createHash } from "node:crypto";
import WebSocket from "ws";
import { b64url, randomId } from "./wire.js";

/** Label of the TLS exporter every hello proof signs (docs/protocol.md, "Session"). */
export const HELLO_EXPORTER_LABEL = "EXPORTER-ifp1-hello";
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

/** A desktop that refused something, or a link that broke: `kind` says which. */
export class LinkError extends Error {
  constructor(
    readonly kind: "certificate" | "closed" | "timeout" | "refused" | "protocol",
    message: string,
    readonly errorClass?: string,
  ) {
    super(message);
    this.name = "LinkError";
  }
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

  private constructor(
    readonly ws: WebSocket,
    /** This connection's nonce (`x-ifp-nonce` of the desktop's first hello). */
    public nonce: string,
    /** This TLS session's exporter value, unpadded base64url of 32 bytes. */
    readonly exporter: string,
    /** The desktop's first `control.hello`. */
    public firstHello: Frame,
  ) {}

  /** Opens TLS to `host:port`, refusing any certificate whose SHA-256 is not `fp`, then the
   * WebSocket, then reads the desktop's first `control.hello`. `timeoutMs` bounds it all. */
  static async open(host: string, port: number, fp: string, timeoutMs = 10_000): Promise<Conn> {
    const socket = await pinnedTls(host, port, fp, timeoutMs);
    // No context (RFC 8446 §7.5: in TLS 1.3 the same as an empty one).
    const exporter = b64url((socket.exportKeyingMaterial as (n: number, l: string) => Buffer).call(socket, 32, HELLO_EXPORTER_LABEL));
    const hostPart = host.includes(":") ? `[${host}]` : host;
    const ws = new WebSocket(`wss://${hostPart}:${port}/ifp`, {
      createConnection: () => socket,
      maxPayload: MAX_FRAME_BYTES,
      handshakeTimeout: timeoutMs,
      perMessageDeflate: false,
    });
    const conn = new Conn(ws, "", exporter, {});
    ws.on("message", (data, isBinary) => {
      conn.lastHeard = Date.now();
      if (isBinary) return;
      let f: Frame;
      try {
        f = JSON.parse(data.toString()) as Frame;
      } catch {
        return;
      }
      if (typeof f !== "object" || f === null) return;
      conn.push(f);
    });
    ws.on("close", (code, reason) => conn.end(new LinkError("closed", `connection closed (${code}${reason.length ? " " + reason.toString() : ""})`)));
    ws.on("error", (e) => conn.end(new LinkError("closed", `connection failed: ${e.message}`)));
    const hello = await conn.next(timeoutMs).catch((e) => {
      conn.close();
      throw e;
    });
    const nonce = hello.ext?.["x-ifp-nonce"];
    if (hello.type !== "control.hello" || typeof nonce !== "string") {
      conn.close();
      throw new LinkError("protocol", `the desktop's first frame was ${hello.type ?? "untyped"}, not control.hello with x-ifp-nonce`);
    }
    conn.nonce = nonce;
    conn.firstHello = hello;
    return conn;
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
    if (this.ended || this.ws.readyState !== WebSocket.OPEN) {
      throw new LinkError("closed", "connection is not open");
    }
    this.ws.send(text);
  }

  /** Closes the connection (no-op when closed). */
  close(): void {
    try {
      this.ws.terminate();
    } catch {
      // already gone
    }
    this.end(new LinkError("closed", "closed by the tap"));
  }
}

/** TLS 1.3 to `host:port`, resolving once the certificate's SHA-256 equals `fp`. The pinning is
 * the trust anchor: no CA and no host name are checked (docs/protocol.md, "Transport"). */
function pinnedTls(host: string, port: number, fp: string, timeoutMs: number): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({
      host,
      port,
      minVersion: "TLSv1.3",
      maxVersion: "TLSv1.3",
      rejectUnauthorized: false,
    });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new LinkError("timeout", `TLS to ${host}:${port}: no handshake within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once("secureConnect", () => {
      clearTimeout(timer);
      const cert = socket.getPeerCertificate();
      const got = cert?.raw ? createHash("sha256").update(cert.raw).digest("hex") : "(none)";
      if (got !== fp) {
        socket.destroy();
        reject(new LinkError("certificate", `the desktop at ${host}:${port} presented certificate ${got}, not the pinned ${fp}: not connecting`));
        return;
      }
      resolve(socket);
    });
    socket.once("error", (e) => {
      clearTimeout(timer);
      reject(new LinkError("closed", `TLS to ${host}:${port}: ${e.message}`));
    });
  });
}
