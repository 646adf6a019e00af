// The tap's state file: identity (Ed25519 seed), the desktop it is paired with, its session and
// its outbox. One JSON file the author chooses, written atomically with mode 0600.
//
// A Lumiverse worker has no OS key store, so the seed lives in this file in the clear: whoever
// can read it can speak to the desktop as this tap (send dials under its device id). It cannot
// approve anything (the desktop never acts on a phone's behalf), but keep the file private to
// the account that runs Lumiverse, out of backups you share and out of the extension's folder.

import { promises as fsp, readFileSync, writeFileSync, renameSync, openSync, fsyncSync, closeSync, chmodSync } from "node:fs";
import { dirname, basename, join } from "node:path";
import { randomBytes } from "node:crypto";
import { b64url, deviceIdFor, Ed25519, fromB64url, randomId } from "./wire.js";

/** The desktop a tap is paired with. */
export interface DesktopRecord {
  host: string;
  port: number;
  /** Lowercase hex SHA-256 of the desktop certificate DER (pinned). */
  cert_fp: string;
  /** The desktop's Ed25519 key (b64url), learned in `pair.grant`. */
  public_key: string;
  /** The desktop's device id (the envelope `device` of its messages). */
  device_id: string;
}

/** What the state file holds (`version` 1). */
export interface TapState {
  version: 1;
  device_id: string;
  entity: string;
  label: string;
  /** 32-byte Ed25519 seed, b64url. Secret. */
  seed: string;
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

/** A fresh identity (not paired). */
export function freshState(label: string): TapState {
  const key = new Ed25519(randomBytes(32));
  const device_id = deviceIdFor(key.publicRaw);
  return {
    version: 1,
    device_id,
    entity: "ent_" + device_id.slice(4),
    label,
    seed: b64url(key.seed),
    generation: 1,
    session: randomId("ses_", 16),
    next_seq: 0,
    desktop: null,
    outbox: [],
    dropped: 0,
  };
}

/** Reads the state file at `path`, or `null` when there is none. Throws naming the file and
 * the field when it is not a tap state file. */
export function loadState(path: string): TapState | null {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw new Error(`${path}: cannot read the tap's state file: ${(e as Error).message}`);
  }
  let v: Partial<TapState>;
  try {
    v = JSON.parse(text) as Partial<TapState>;
  } catch (e) {
    throw new Error(`${path}: not JSON (${(e as Error).message}); move it away to start again (you will have to pair again)`);
  }
  const bad = (field: string) => new Error(`${path}: ${field} is missing or of the wrong type; not a switchboard-tap state file`);
  if (v.version !== 1) throw bad("version (1)");
  for (const f of ["device_id", "entity", "label", "seed", "session"] as const) {
    if (typeof v[f] !== "string") throw bad(f);
  }
  fromB64url(v.seed as string, `${path}: seed`, 32);
  if (!Number.isInteger(v.generation) || (v.generation as number) < 1) throw bad("generation");
  if (!Number.isInteger(v.next_seq) || (v.next_seq as number) < 0) throw bad("next_seq");
  if (!Array.isArray(v.outbox) || !v.outbox.every((x) => typeof x === "string")) throw bad("outbox");
  if (!Number.isInteger(v.dropped)) throw bad("dropped");
  if (v.desktop !== null) {
    const d = v.desktop as Partial<DesktopRecord> | undefined;
    if (!d || typeof d.host !== "string" || !Number.isInteger(d.port) || typeof d.cert_fp !== "string" || typeof d.public_key !== "string" || typeof d.device_id !== "string") {
      throw bad("desktop");
    }
  }
  return v as TapState;
}

/** Writes `state` to `path` atomically (temp file, fsync, rename), mode 0600. */
export function saveStateSync(path: string, state: TapState): void {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  writeFileSync(tmp, JSON.stringify(state), { mode: 0o600 });
  const fd = openSync(tmp, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

/** The async form of [`saveStateSync`]. */
export async function saveState(path: string, state: TapState): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  const fh = await fsp.open(tmp, "w", 0o600);
  try {
    await fh.writeFile(JSON.stringify(state));
    await fh.sync();
  } finally {
    await fh.close();
  }
  await fsp.chmod(tmp, 0o600);
  await fsp.rename(tmp, path);
}
