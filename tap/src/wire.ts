// ifp/1 wire helpers for the tap: keys, signatures, the pairing computations and envelopes,
// exactly as docs/protocol.md ("Link: pairing and sessions") gives them.

import {
  createHash,
  createPrivateKey,
  createPublicKey,
  randomBytes,
  sign as edSign,
  verify as edVerify,
  type KeyObject,
} from "node:crypto";

/** Unpadded base64url of `bytes`. */
export function b64url(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64url");
}

/** Bytes of an unpadded (or padded) base64url text; throws naming `what` when it is not. */
export function fromB64url(text: string, what: string, len?: number): Buffer {
  if (typeof text !== "string" || !/^[A-Za-z0-9_-]*={0,2}$/.test(text)) {
    throw new Error(`${what}: not base64url`);
  }
  const b = Buffer.from(text, "base64url");
  if (len !== undefined && b.length !== len) {
    throw new Error(`${what}: ${b.length} bytes, expected ${len}`);
  }
  return b;
}

/** Lowercase hex SHA-256 of `data`. */
export function sha256Hex(data: Uint8Array | string): string {
  return createHash("sha256").update(data).digest("hex");
}

/** `prefix` + `n` lowercase hex digits from the OS random source (`msg_…`, `dial_…`). */
export function randomId(prefix: string, hexDigits: number): string {
  return prefix + randomBytes(Math.ceil(hexDigits / 2)).toString("hex").slice(0, hexDigits);
}

// PKCS#8 DER prefix of an Ed25519 private key (RFC 8410); the 32-byte seed follows.
const PKCS8_ED25519 = Buffer.from("302e020100300506032b657004220420", "hex");
// SPKI DER prefix of an Ed25519 public key; the 32 raw key bytes follow.
const SPKI_ED25519 = Buffer.from("302a300506032b6570032100", "hex");

/** An Ed25519 key pair made from a 32-byte seed. */
export class Ed25519 {
  readonly seed: Buffer;
  private readonly key: KeyObject;
  /** The 32 raw public key bytes. */
  readonly publicRaw: Buffer;

  constructor(seed: Uint8Array) {
    if (seed.length !== 32) throw new Error(`Ed25519 seed: ${seed.length} bytes, expected 32`);
    this.seed = Buffer.from(seed);
    this.key = createPrivateKey({
      key: Buffer.concat([PKCS8_ED25519, this.seed]),
      format: "der",
      type: "pkcs8",
    });
    const spki = createPublicKey(this.key).export({ format: "der", type: "spki" });
    this.publicRaw = Buffer.from(spki.subarray(spki.length - 32));
  }

  /** A fresh key pair from the OS random source. */
  static generate(): Ed25519 {
    return new Ed25519(randomBytes(32));
  }

  /** The public key as 43-char unpadded base64url. */
  publicB64(): string {
    return b64url(this.publicRaw);
  }

  /** Unpadded base64url Ed25519 signature over the UTF-8 bytes of `text`. */
  signB64(text: string): string {
    return b64url(edSign(null, Buffer.from(text, "utf8"), this.key));
  }
}

/** Whether `sigB64` is a valid Ed25519 signature by `publicKeyB64` over the UTF-8 `text`. */
export function verifyB64(publicKeyB64: string, text: string, sigB64: string): boolean {
  try {
    const raw = fromB64url(publicKeyB64, "public key", 32);
    const key = createPublicKey({
      key: Buffer.concat([SPKI_ED25519, raw]),
      format: "der",
      type: "spki",
    });
    return edVerify(null, Buffer.from(text, "utf8"), key, fromB64url(sigB64, "signature", 64));
  } catch {
    return false;
  }
}

/** `dev_` + first 16 hex of SHA-256 of the raw 32 key bytes (docs/protocol.md, pairing step 1). */
export function deviceIdFor(publicRaw: Uint8Array): string {
  return "dev_" + sha256Hex(publicRaw).slice(0, 16);
}

/** `commitment` of `pair.grant`: SHA-256("ifp1-pair-commit" ‖ desktop nonce ‖ cert_fp bytes ‖
 * phone key), unpadded base64url. */
export function pairCommitment(desktopNonce: Uint8Array, certFp: string, phoneKey: Uint8Array): string {
  return b64url(
    createHash("sha256")
      .update("ifp1-pair-commit")
      .update(desktopNonce)
      .update(Buffer.from(certFp, "hex"))
      .update(phoneKey)
      .digest(),
  );
}

/** The verification code both screens show: first 4 bytes of SHA-256("ifp1-pair-code" ‖
 * desktop nonce ‖ phone nonce ‖ cert_fp bytes ‖ phone key), big-endian, mod 10^6, as `046 002`. */
export function verificationCode(
  desktopNonce: Uint8Array,
  phoneNonce: Uint8Array,
  certFp: string,
  phoneKey: Uint8Array,
): string {
  const d = createHash("sha256")
    .update("ifp1-pair-code")
    .update(desktopNonce)
    .update(phoneNonce)
    .update(Buffer.from(certFp, "hex"))
    .update(phoneKey)
    .digest();
  const n = d.readUInt32BE(0) % 1_000_000;
  const s = n.toString().padStart(6, "0");
  return `${s.slice(0, 3)} ${s.slice(3)}`;
}

/** RFC 3339 UTC with milliseconds, `Z`. */
export function rfc3339(ms: number): string {
  return new Date(ms).toISOString();
}

/** A pairing link, parsed (`switchboard://pair?addr=<ip>&port=<port>&code=<6 digits>&fp=<cert_fp>`). */
export interface PairingLink {
  host: string;
  port: number;
  code: string;
  fp: string;
}

/** Parses a pairing link; throws naming the bad part. */
export function parsePairingLink(link: string): PairingLink {
  const text = link.trim();
  const prefix = "switchboard://pair?";
  if (!text.startsWith(prefix)) {
    throw new Error(`pairing link: expected it to start with ${prefix} (got ${JSON.stringify(text.slice(0, 40))})`);
  }
  const q = new URLSearchParams(text.slice(prefix.length));
  const host = q.get("addr");
  const port = Number(q.get("port"));
  const code = (q.get("code") ?? "").replace("-", "");
  const fp = (q.get("fp") ?? "").toLowerCase();
  if (!host) throw new Error("pairing link: no addr");
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`pairing link: bad port ${JSON.stringify(q.get("port"))}`);
  if (!/^\d{6}$/.test(code)) throw new Error("pairing link: code is not 6 digits");
  if (!/^[0-9a-f]{64}$/.test(fp)) throw new Error("pairing link: fp is not 64 hex characters");
  return { host, port, code, fp };
}

// ---- the pinned hello binding (docs/protocol.md, "Hello bindings") --------------------------

/** The binding this tap's hello proofs use: `pinned` (Bun's WebSocket has no TLS exporter). */
export const BINDING = "pinned";

/** What the desktop's first-hello `ext["x-ifp-pinned-proof"]` signs. */
export function introPinnedText(nonce: string, certFp: string): string {
  return `ifp1-hello-desktop-pinned|${nonce}|${certFp}`;
}

/** What the phone's `control.hello` `payload.proof` signs in the pinned binding. */
export function helloPinnedText(nonce: string, deviceId: string, certFp: string): string {
  return `ifp1-hello-pinned|${nonce}|${deviceId}|${certFp}`;
}

/** What the desktop's answering `control.hello` `payload.proof` signs in the pinned binding. */
export function answerPinnedText(nonce: string, phoneDeviceId: string, certFp: string): string {
  return `ifp1-hello-desktop-pinned|${nonce}|${phoneDeviceId}|${certFp}`;
}

/** Lowercase hex without separators of a fingerprint written either way: Bun's
 * `fingerprint256` (`"AA:BB:…"`) or the pairing link's `fp` (`"aabb…"`). */
export function normalizeFingerprint(fp: string): string {
  return fp.replace(/:/g, "").toLowerCase();
}

/** PEM (`-----BEGIN CERTIFICATE-----`, 64-character lines) of a certificate's DER bytes. */
export function derToPem(der: Uint8Array): string {
  const b64 = Buffer.from(der).toString("base64");
  const lines = b64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE-----\n${lines.join("\n")}\n-----END CERTIFICATE-----\n`;
}
