// Pairing from a pairing link: pair.request → pair.grant → pair.complete → pair.reveal →
// (both people compare the verification code) → pair.confirm → pair.done
// (docs/protocol.md, "Pairing").

import { randomBytes } from "node:crypto";
import { Conn, LinkError, type Frame } from "./conn.js";
import { freshState, loadState, saveStateSync, type TapState } from "./state.js";
import {
  b64url,
  Ed25519,
  fromB64url,
  pairCommitment,
  parsePairingLink,
  randomId,
  rfc3339,
  verificationCode,
  verifyB64,
} from "./wire.js";

/** Options of [`pair`]. */
export interface PairOptions {
  /** The state file to keep the identity and the desktop in (created 0600 when absent). */
  stateFile: string;
  /** Asked with the verification code (`"046 002"`) once both sides can compute it; answer
   * whether the desktop shows the same code. Show it to the person and let them decide. */
  confirm: (code: string) => Promise<boolean> | boolean;
  /** The label the desktop shows for this tap. Default "switchboard-tap". */
  label?: string;
  /** How long to wait for each answer, and for the person on the desktop (ms). Default 130 000
   * (the desktop discards a pending pairing after 120 s). */
  timeoutMs?: number;
}

/** What [`pair`] returns once both screens confirmed. */
export interface PairResult {
  deviceId: string;
  desktopDeviceId: string;
  verificationCode: string;
}

/** Pairs with the desktop of `link` (`switchboard://pair?addr=…&port=…&code=…&fp=…`). The
 * certificate is pinned to the link's `fp`; nothing else is sent before `pair.done`. On success
 * the desktop is written to the state file; on any refusal or mismatch it throws a
 * [`LinkError`] saying why, and the state file keeps no desktop. */
export async function pair(link: string, opts: PairOptions): Promise<PairResult> {
  const l = parsePairingLink(link);
  const timeout = opts.timeoutMs ?? 130_000;
  const state: TapState = loadState(opts.stateFile) ?? freshState(opts.label ?? "switchboard-tap");
  if (opts.label) state.label = opts.label;
  const key = new Ed25519(fromB64url(state.seed, "seed", 32));
  const env = (type: string, payload: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    ifp: "1",
    id: randomId("msg_", 20),
    ts: rfc3339(Date.now()),
    type,
    entity: state.entity,
    device: state.device_id,
    ...extra,
    payload,
  });
  const conn = await Conn.open(l.host, l.port, l.fp, Math.min(timeout, 15_000));
  try {
    const req = env("pair.request", {
      pairing_code: l.code,
      public_key: key.publicB64(),
      capabilities: [],
      label: state.label,
    });
    conn.send(req);
    const grant = await conn.expect("pair.grant", timeout, state.entity, state.device_id);
    const gp = grant.payload ?? {};
    const desktopKey = str(gp.public_key, "pair.grant payload.public_key");
    const challenge = str(gp.challenge, "pair.grant payload.challenge");
    const commitment = str(gp.commitment, "pair.grant payload.commitment");
    const myId = str(gp.device_id, "pair.grant payload.device_id");
    const desktopDevice = str(grant.device, "pair.grant device");
    if (myId !== state.device_id) {
      throw new LinkError("protocol", `pair.grant names device ${myId}, not this tap's ${state.device_id}`);
    }
    // The desktop's first hello, checked with the key it just presented.
    const fh = conn.firstHello.payload ?? {};
    if (!verifyB64(desktopKey, `ifp1-hello-desktop|${conn.nonce}|${l.fp}|${conn.exporter}`, String(fh.proof))) {
      throw new LinkError("protocol", "the desktop's hello proof does not verify under the key of its pair.grant: not pairing");
    }
    const phoneNonce = randomBytes(32);
    const nonceB64 = b64url(phoneNonce);
    conn.send(
      env("pair.complete", {
        device_id: myId,
        nonce: nonceB64,
        signature: key.signB64(`ifp1-pair|${challenge}|${l.fp}|${myId}|${nonceB64}`),
      }),
    );
    const reveal = await conn.expect("pair.reveal", timeout, state.entity, state.device_id);
    const desktopNonce = fromB64url(str(reveal.payload?.nonce, "pair.reveal payload.nonce"), "pair.reveal nonce", 32);
    if (pairCommitment(desktopNonce, l.fp, key.publicRaw) !== commitment) {
      throw new LinkError("protocol", "the desktop's revealed nonce does not match its commitment: someone may be in the middle; not pairing");
    }
    const code = verificationCode(desktopNonce, phoneNonce, l.fp, key.publicRaw);
    const same = await opts.confirm(code);
    conn.send(env("pair.confirm", { codes_match: same === true }));
    if (same !== true) {
      throw new LinkError("refused", `the verification code ${code} was not confirmed: not paired`);
    }
    await conn.expect("pair.done", timeout, state.entity, state.device_id);
    state.desktop = {
      host: l.host,
      port: l.port,
      cert_fp: l.fp,
      public_key: desktopKey,
      device_id: desktopDevice,
    };
    saveStateSync(opts.stateFile, state);
    return { deviceId: state.device_id, desktopDeviceId: desktopDevice, verificationCode: code };
  } finally {
    conn.close();
  }
}

function str(v: unknown, what: string): string {
  if (typeof v !== "string" || v.length === 0) throw new LinkError("protocol", `${what}: missing or not a string`);
  return v;
}

export type { Frame };
