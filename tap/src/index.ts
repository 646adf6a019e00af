// switchboard-tap: stream a Lumiverse phone line's real dials to a paired Switchboard desktop.
// See README.md; the wire is docs/protocol.md of the Switchboard repository.

export { createTap, Tap, shapeOf, redactError, errorText } from "./tap.js";
export type { TapOptions, TapNotice, LineInfo, BridgeStatus, PhoneLineHandler, RpcContext, SpindleLike, Retention } from "./tap.js";
export { pair } from "./pair.js";
export type { PairOptions, PairResult } from "./pair.js";
export { parsePairingLink, verificationCode, pairCommitment } from "./wire.js";
export type { PairingLink } from "./wire.js";
export { LinkError } from "./conn.js";
export { loadState } from "./state.js";
export type { TapState, DesktopRecord } from "./state.js";
