// The tap's state inside the Lumiverse host: everything but the key in the extension's own
// storage folder (`spindle.storage`, one JSON file swapped in atomically: written under a new
// name, then `move()`d over the old), the Ed25519 seed in the host's encrypted secret store
// (`spindle.enclave`, AES-256-GCM at rest, per user). Nothing to configure: the host gives each
// extension its own folder and secret namespace, kept across restarts and updates and removed
// with the extension (../shared/specs/lumiverse-host.md, section 3 "State").

import { randomBytes } from "node:crypto";
import { b64url, deviceIdFor, Ed25519, fromB64url, randomId } from "./wire.js";

/** `spindle.storage`, the calls the tap makes (paths relative to the extension's folder). */
export interface StorageLike {
  read(path: string): Promise<string>;
  write(path: string, data: string): Promise<void>;
  exists(path: string): Promise<boolean>;
  move(from: string, to: string): Promise<void>;
  delete?(path: string): Promise<void>;
}

/** `spindle.enclave`, the calls the tap makes. `userId` is required by operator-scoped
 * extensions (the host refuses `userId is required for operator-scoped extensions`). */
export interface EnclaveLike {
  get(key: string, userId?: string): Promise<string | null>;
  put(key: string, value: string, userId?: string): Promise<void>;
}

/** The desktop a tap is paired with. */
export interface DesktopRecord {
  host: string;
  port: number;
  /** Lowercase hex SHA-256 of the desktop certificate DER (pinned). */
  cert_fp: string;
  /** The desktop certificate as PEM (what `cert_fp` hashes): `tls.ca` of every connection. */
  cert_pem: string;
  /** The desktop's Ed25519 key (b64url), learned in `pair.grant`. */
  public_key: string;
  /** The desktop's device id (the envelope `device` of its messages). */
  device_id: string;
  /** The hello binding the pairing recorded (docs/protocol.md, "Hello bindings"). */
  binding: "pinned";
  /** The desktop's label, for the status line ("paired with …"). */
  label?: string;
}

/** What `switchboard-tap/state.json` holds (`version` 2). The seed is not in it. */
export interface TapState {
  version: 2;
  device_id: string;
  entity: string;
  label: string;
  /** The user whose enclave holds the seed (operator-scoped extensions need one); `null` for
   * a user-scoped extension (the host infers the user). */
  enclave_user: string | null;
  generation: number;
  /** The session dials and settings travel in, and the next `seq` in it. */
  session: string;
  next_seq: number;
  desktop: DesktopRecord | null;
  /** Serialised envelopes sent or waiting, not yet acknowledged, in send order. */
  outbox: string[];
  /** Messages dropped from a full outbox and not yet reported. */
  dropped: number;
}

/** Where the tap keeps its state in the extension's storage folder. */
export const STATE_PATH = "switchboard-tap/state.json";
const STATE_TMP = "switchboard-tap/state.json.new";
/** The enclave key of the tap's Ed25519 seed. */
export const SEED_KEY = "switchboard-tap.seed";

/** A fresh identity, in memory (written at pairing). */
export function freshIdentity(label: string): { state: TapState; key: Ed25519 } {
  const key = new Ed25519(randomBytes(32));
  const device_id = deviceIdFor(key.publicRaw);
  return {
    key,
    state: {
      version: 2,
      device_id,
      entity: "ent_" + device_id.slice(4),
      label,
      enclave_user: null,
      generation: 1,
      session: randomId("ses_", 16),
      next_seq: 0,
      desktop: null,
      outbox: [],
      dropped: 0,
    },
  };
}

/** Reads and checks the stored state: `null` when there is none, else the state, or an error
 * naming the file and the field. */
export async function loadState(storage: StorageLike): Promise<TapState | null> {
  if (!(await storage.exists(STATE_PATH))) return null;
  const text = await storage.read(STATE_PATH);
  let v: Partial<TapState>;
  try {
    v = JSON.parse(text) as Partial<TapState>;
  } catch (e) {
    throw new Error(`${STATE_PATH} (extension storage): not JSON (${(e as Error).message}); pair again from the extension's settings`);
  }
  const bad = (field: string) => new Error(`${STATE_PATH} (extension storage): ${field} is missing or of the wrong type; pair again from the extension's settings`);
  if (v.version !== 2) throw bad("version (2)");
  for (const f of ["device_id", "entity", "label", "session"] as const) {
    if (typeof v[f] !== "string") throw bad(f);
  }
  if (v.enclave_user !== null && typeof v.enclave_user !== "string") throw bad("enclave_user");
  if (!Number.isInteger(v.generation) || (v.generation as number) < 1) throw bad("generation");
  if (!Number.isInteger(v.next_seq) || (v.next_seq as number) < 0) throw bad("next_seq");
  if (!Array.isArray(v.outbox) || !v.outbox.every((x) => typeof x === "string")) throw bad("outbox");
  if (!Number.isInteger(v.dropped)) throw bad("dropped");
  if (v.desktop !== null) {
    const d = v.desktop as Partial<DesktopRecord> | undefined;
    if (
      !d ||
      typeof d.host !== "string" ||
      !Number.isInteger(d.port) ||
      typeof d.cert_fp !== "string" ||
      typeof d.cert_pem !== "string" ||
      typeof d.public_key !== "string" ||
      typeof d.device_id !== "string" ||
      d.binding !== "pinned"
    ) {
      throw bad("desktop");
    }
  }
  return v as TapState;
}

/** Writes `state` atomically: the whole file under a new name, then moved over the old one, so
 * a crash leaves either the old state or the new one, never half of one. */
export async function saveState(storage: StorageLike, state: TapState): Promise<void> {
  await storage.write(STATE_TMP, JSON.stringify(state));
  await storage.move(STATE_TMP, STATE_PATH);
}

/** Reads the seed from the enclave and checks it is the key of `state.device_id`. */
export async function loadKey(enclave: EnclaveLike, state: TapState): Promise<Ed25519> {
  const seed = await enclave.get(SEED_KEY, state.enclave_user ?? undefined);
  if (seed === null) {
    throw new Error(`the tap's key (${SEED_KEY}) is not in the host's enclave${state.enclave_user ? ` of user ${state.enclave_user}` : ""}; pair again from the extension's settings`);
  }
  const key = new Ed25519(fromB64url(seed, `enclave ${SEED_KEY}`, 32));
  if (deviceIdFor(key.publicRaw) !== state.device_id) {
    throw new Error(`the key in the enclave (${SEED_KEY}) is not the key of ${state.device_id}; pair again from the extension's settings`);
  }
  return key;
}

/** Puts the seed in the enclave (for `userId`, or the host's inferred user). */
export async function saveKey(enclave: EnclaveLike, key: Ed25519, userId: string | null): Promise<void> {
  await enclave.put(SEED_KEY, b64url(key.seed), userId ?? undefined);
}
