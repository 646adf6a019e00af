// Pairing from a pairing link, in the pinned hello binding: fetch and check the certificate,
// then pair.request → pair.grant → pair.complete → pair.reveal → (both people compare the
// verification code) → pair.confirm → pair.done (docs/protocol.md, "Pairing", "Hello bindings").

import { randomBytes } from "node:crypto";
import { Conn, LinkError, type Frame, type SocketFactory } from "./conn.js";
import type { DesktopRecord } from "./store.js";
import {
  b64url,
  BINDING,
  Ed25519,
  fromB64url,
  introPinnedText,
  pairCommitment,
  parsePairingLink,
  randomId,
  rfc3339,
  verificationCode,
  verifyB64,
} from "./wire.js";

/** What a pairing needs to know about the tap. */
export interface PairIdentity {
  key: Ed25519;
  deviceId: string;
  entity: string;
  /** The name the desktop shows for this tap (pair.request `label`). */
  label: string;
}

/** Options of [`pairWithLink`]. */
export interface PairOptions {
  /** Asked with the verification code (`"046 002"`) once both sides can compute it; answer
   * whether the desktop shows the same code. Show it to the person and let them decide. */
  confirm: (code: string) => Promise<boolean>;
  /** Told where the pairing is, for a status line. */
  progress?: (step: "certificate" | "request" | "code" | "waiting_desktop") => void;
  /** How long to wait for each answer from the desktop (ms). Default 130 000 (the desktop
   * discards a pending pairing after 120 s). */
  timeoutMs?: number;
  /** The WebSocket to use (tests); default the host's global one. */
  socketFactory?: SocketFactory;
}

/** Pairs with the desktop of `link` (`switchboard://pair?addr=…&port=…&code=…&fp=…`). The
 * certificate is fetched once (nothing sent) and accepted only by the link's `fp`; every frame
 * of the pairing then goes over a connection pinned to it. Resolves with the desktop record once
 * both screens confirmed; throws a [`LinkError`] (or a link parse error) saying why otherwise. */
export async function pairWithLink(link: string, me: PairIdentity, opts: PairOptions): Promise<{ desktop: DesktopRecord; code: string }> {
  const l = parsePairingLink(link);
  const timeout = opts.timeoutMs ?? 130_000;
  const connectTimeout = Math.min(timeout, 15_000);
  opts.progress?.("certificate");
  const certPem = await Conn.fetchDesktopCertificate(l.host, l.port, l.fp, connectTimeout, opts.socketFactory);
  const env = (type: string, payload: Record<string, unknown>, ext?: Record<string, unknown>) => ({
    ifp: "1",
    id: randomId("msg_", 20),
    ts: rfc3339(Date.now()),
    type,
    entity: me.entity,
    device: me.deviceId,
    payload,
    ...(ext ? { ext } : {}),
  });
  opts.progress?.("request");
  const conn = await Conn.open(l.host, l.port, l.fp, certPem, connectTimeout, opts.socketFactory);
  try {
    conn.send(
      env(
        "pair.request",
        { pairing_code: l.code, public_key: me.key.publicB64(), capabilities: [], label: me.label },
        { "x-ifp-binding": BINDING },
      ),
    );
    const grant = await conn.expect("pair.grant", timeout, me.entity, me.deviceId);
    const gp = grant.payload ?? {};
    const desktopKey = str(gp.public_key, "pair.grant payload.public_key");
    const challenge = str(gp.challenge, "pair.grant payload.challenge");
    const commitment = str(gp.commitment, "pair.grant payload.commitment");
    const myId = str(gp.device_id, "pair.grant payload.device_id");
    const desktopDevice = str(grant.device, "pair.grant device");
    if (myId !== me.deviceId) {
      throw new LinkError("protocol", `pair.grant names device ${myId}, not this tap's ${me.deviceId}`);
    }
    // The desktop's first hello, in the pinned binding, checked with the key it just presented.
    const intro = conn.firstHello.ext?.["x-ifp-pinned-proof"];
    if (typeof intro !== "string" || !verifyB64(desktopKey, introPinnedText(conn.nonce, l.fp), intro)) {
      throw new LinkError("protocol", "the desktop's first hello carries no x-ifp-pinned-proof that verifies under the key of its pair.grant: not pairing");
    }
    const phoneNonce = randomBytes(32);
    const nonceB64 = b64url(phoneNonce);
    conn.send(
      env("pair.complete", {
        device_id: myId,
        nonce: nonceB64,
        signature: me.key.signB64(`ifp1-pair|${challenge}|${l.fp}|${myId}|${nonceB64}`),
      }),
    );
    const reveal = await conn.expect("pair.reveal", timeout, me.entity, me.deviceId);
    const desktopNonce = fromB64url(str(reveal.payload?.nonce, "pair.reveal payload.nonce"), "pair.reveal nonce", 32);
    if (pairCommitment(desktopNonce, l.fp, me.key.publicRaw) !== commitment) {
      throw new LinkError("protocol", "the desktop's revealed nonce does not match its commitment: someone may be in the middle; not pairing");
    }
    const code = verificationCode(desktopNonce, phoneNonce, l.fp, me.key.publicRaw);
    opts.progress?.("code");
    // Pings and the desktop's answers keep arriving while the person decides: answer pings.
    const same = await whileAnsweringPings(conn, me, opts.confirm(code));
    conn.send(env("pair.confirm", { codes_match: same === true }));
    if (same !== true) {
      throw new LinkError("refused", `the verification code ${code} was not confirmed: not paired`);
    }
    opts.progress?.("waiting_desktop");
    await conn.expect("pair.done", timeout, me.entity, me.deviceId);
    const label = typeof gp.label === "string" ? gp.label : undefined;
    return {
      code,
      desktop: {
        host: l.host,
        port: l.port,
        cert_fp: l.fp,
        cert_pem: certPem,
        public_key: desktopKey,
        device_id: desktopDevice,
        binding: BINDING,
        ...(label ? { label } : {}),
      },
    };
  } finally {
    conn.close();
  }
}

async function whileAnsweringPings<T>(conn: Conn, me: PairIdentity, p: Promise<T>): Promise<T> {
  const held: Frame[] = [];
  conn.onFrame = (f) => {
    if (f.type === "control.ping") {
      try {
        conn.send({ ifp: "1", id: randomId("msg_", 20), ts: rfc3339(Date.now()), type: "control.pong", entity: me.entity, device: me.deviceId, parent: f.id, payload: {} });
      } catch {
        // ended: the next expect says so
      }
    } else held.push(f);
  };
  try {
    return await p;
  } finally {
    conn.onFrame = null;
    conn.requeue(held);
  }
}

function str(v: unknown, what: string): string {
  if (typeof v !== "string" || v.length === 0) throw new LinkError("protocol", `${what}: missing or not a string`);
  return v;
}
