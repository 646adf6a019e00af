// switchboard-tap: stream a Lumiverse phone line's real dials to a paired Switchboard desktop.
// See README.md; the wire is docs/protocol.md of the Switchboard repository.
//
// This is the entry an extension's backend imports: everything it bundles passes the Lumiverse
// host's install scanner (no filesystem, socket or subprocess modules, no reading of the
// environment, …; ../shared/specs/lumiverse-host.md section 2). test/bun/bundle.test.ts checks
// that on every build.
// The settings piece for the extension's frontend is `switchboard-tap/frontend`.

export { createTap, Tap, shapeOf, redactError, errorText } from "./tap.js";
export type { TapOptions, TapNotice, LineInfo, BridgeStatus, PhoneLineHandler, RpcContext, SpindleLike, Retention, PairingStatus } from "./tap.js";
export { parsePairingLink, verificationCode, pairCommitment, introPinnedText, helloPinnedText, answerPinnedText, normalizeFingerprint } from "./wire.js";
export type { PairingLink } from "./wire.js";
export { LinkError } from "./conn.js";
export type { SocketFactory, SocketLike } from "./conn.js";
export { STATE_PATH, SEED_KEY } from "./store.js";
export type { TapState, DesktopRecord, StorageLike, EnclaveLike } from "./store.js";
