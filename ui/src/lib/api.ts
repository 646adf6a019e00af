// The one module that talks to the Tauri host. Nothing else imports `@tauri-apps/*`.
// Every call returns typed data or throws an `IpcError` ({ kind, message }).
import { listen, type UnlistenFn } from "@tauri-apps/api/event";
import { Channel, invoke as tauriInvoke } from "@tauri-apps/api/core";
import type { AppInfo } from "../bindings/AppInfo";
import type { IpcError } from "../bindings/IpcError";
import type { IpcErrorKind } from "../bindings/IpcErrorKind";
import type { AppEventName, AppEvents, CommandName, Commands } from "../bindings/ipc";
import type { Settings } from "../bindings/Settings";
import type { WindowPlace } from "../bindings/WindowPlace";
import type { PaintMarks } from "../bindings/PaintMarks";
import type { Diagnostics } from "../bindings/Diagnostics";
import type { PhonesSnapshot } from "../bindings/PhonesSnapshot";
import type { PairingInvite } from "../bindings/PairingInvite";
import type { BridgeSnapshot } from "../bindings/BridgeSnapshot";
import type { ErrorExplanation } from "../bindings/ErrorExplanation";
import type { PhoneLinesSnapshot } from "../bindings/PhoneLinesSnapshot";
import type { ExclusionTest } from "../bindings/ExclusionTest";
import type { Banner } from "../bindings/Banner";
import type { Dial } from "../bindings/Dial";
import type { DialBatchMsg } from "../bindings/DialBatchMsg";
import type { DialClearScope } from "../bindings/DialClearScope";
import type { DialFilter } from "../bindings/DialFilter";
import type { DialPage } from "../bindings/DialPage";
import type { HistoryQuery } from "../bindings/HistoryQuery";
import type { DialSource } from "../bindings/DialSource";
import type { DialsStatus } from "../bindings/DialsStatus";
import type { ExportRequest } from "../bindings/ExportRequest";
import type { ExportSummary } from "../bindings/ExportSummary";
import type { ImportSummary } from "../bindings/ImportSummary";
import type { OpStats } from "../bindings/OpStats";
import type { ConfirmationsSnapshot } from "../bindings/ConfirmationsSnapshot";
import type { PhoneAutonomy } from "../bindings/PhoneAutonomy";
import type { NotificationStatus } from "../bindings/NotificationStatus";

/** True when running inside the Switchboard window (false in a plain browser or unit tests). */
export function inTauri(): boolean {
  return typeof window !== "undefined" && "__TAURI_INTERNALS__" in window;
}

/** Every error kind the host sends (a closed set; see `IpcErrorKind` in Rust). */
export const IPC_ERROR_KINDS: readonly IpcErrorKind[] = [
  "invalid_input", "not_found", "io", "key_store", "link", "conflict", "internal", "no_host", "read_only",
];

function isKind(k: unknown): k is IpcErrorKind {
  return typeof k === "string" && (IPC_ERROR_KINDS as readonly string[]).includes(k);
}

/** Normalises anything thrown by the host into `{ kind, message }`; an unknown kind becomes
 * `internal` (with the kind kept in the message). */
export function toIpcError(e: unknown): IpcError {
  if (e && typeof e === "object" && "kind" in e && "message" in e) {
    const o = e as { kind: unknown; message: unknown };
    if (isKind(o.kind)) return { kind: o.kind, message: String(o.message) };
    return { kind: "internal", message: `${String(o.kind)}: ${String(o.message)}` };
  }
  return { kind: "internal", message: e instanceof Error ? e.message : String(e) };
}

/** Calls host command `cmd` with its arguments, as the generated map `Commands` types them. */
async function call<K extends CommandName>(cmd: K, args?: Commands[K]["args"]): Promise<Commands[K]["ret"]> {
  if (!inTauri()) {
    throw { kind: "no_host", message: "Switchboard's desktop host is not running; open the app window." } as IpcError;
  }
  try {
    return await tauriInvoke<Commands[K]["ret"]>(cmd, args);
  } catch (e) {
    throw toIpcError(e);
  }
}

export const api = {
  appInfo: () => call("app_info"),
  getSettings: () => call("get_settings"),
  saveSettings: (settings: Settings) => call("save_settings", { settings }),
  diagnostics: () => call("diagnostics"),
  // Where the person left the window, kept by the app while the window is closed to the tray
  windowPlace: () => call("window_place"),
  saveWindowPlace: (place: WindowPlace) => call("save_window_place", { place }),
  windowPainted: (view: string, scroll: number, marks: PaintMarks | null) =>
    call("window_painted", { view, scroll, marks }),
  // Phones
  phonesSnapshot: () => call("phones_snapshot"),
  /** The name each paired phone was paired under, by device id; empty when the link cannot
   * say (views then show device ids). */
  phoneNames: (): Promise<Record<string, string>> =>
    call("phones_snapshot")
      .then((s) => Object.fromEntries(s.phones.map((p) => [p.record.device_id, p.record.label])))
      .catch(() => ({})),
  openPairing: (networks?: string[] | null) => call("open_pairing", { networks: networks ?? null }),
  closePairing: () => call("close_pairing"),
  confirmPairing: (id: string, codesMatch: boolean) => call("confirm_pairing", { id, codesMatch }),
  unpairPhone: (deviceId: string) => call("unpair_phone", { deviceId }),
  bridgeSnapshot: () => call("bridge_snapshot"),
  explainError: (text: string, caller?: string, endpoint?: string) =>
    call("explain_error", { text, caller: caller || null, endpoint: endpoint || null }),
  phoneLinesSnapshot: () => call("phone_lines_snapshot"),
  openPairingsFile: (path: string) => call("open_pairings_file", { path }),
  showPhoneLinesOf: (phone: string) => call("show_phone_lines_of", { phone }),
  closePairingsFile: () => call("close_pairings_file"),
  attachDescribe: (identifier: string, text: string) => call("attach_describe", { identifier, text }),
  revokePhoneLine: (identifier: string, confirm: boolean) => call("revoke_phone_line", { identifier, confirm }),
  testExclusion: (identifier: string, path: string) => call("test_exclusion", { identifier, path }),
  addKnownPhoneLine: (identifier: string, name: string) => call("add_known_phone_line", { identifier, name }),
  removeKnownPhoneLine: (identifier: string) => call("remove_known_phone_line", { identifier }),
  // Live dials
  dialsQuery: (filter: DialFilter, source: DialSource = "live") => call("dials_query", { filter, source }),
  dialsStats: (filter: DialFilter, source: DialSource = "live") => call("dials_stats", { filter, source }),
  /** Streams a view: `onMessage` gets a snapshot, then batches (live only). Resolves to the subscription id. */
  dialsSubscribe: (filter: DialFilter, source: DialSource, onMessage: (m: DialBatchMsg) => void) => {
    if (!inTauri()) return call("dials_subscribe", { filter, source, channel: { onmessage: onMessage } });
    const channel = new Channel<DialBatchMsg>();
    channel.onmessage = onMessage;
    return call("dials_subscribe", { filter, source, channel });
  },
  /** Streams the new dials matching filter line `line` (an empty snapshot for live dials, then
   * batches); page the history with `dialsHistory`. Resolves to the subscription id. */
  dialsSubscribeLine: (line: string, source: DialSource, onMessage: (m: DialBatchMsg) => void) => {
    if (!inTauri()) return call("dials_subscribe", { line, source, channel: { onmessage: onMessage } });
    const channel = new Channel<DialBatchMsg>();
    channel.onmessage = onMessage;
    return call("dials_subscribe", { line, source, channel });
  },
  dialsUnsubscribe: (id: number) => call("dials_unsubscribe", { id }),
  // `seq` (the row's place in the timeline) finds a dial the core's ring no longer holds in SQLite.
  dialsGet: (id: string, startMs: number, source: DialSource, seq?: number) => call("dials_get", { id, startMs, seq, source }),
  dialBanner: (dialId: string, startMs: number, source: DialSource, seq?: number) => call("dial_banner", { dialId, startMs, seq, source }),
  dialConformance: (id: string, startMs: number, source: DialSource, seq?: number) => call("dial_conformance", { id, startMs, seq, source }),
  /** Exports dials as JSON Lines: with a filter `line`, every dial of the history matching it
   * (newest first); `redact` replaces request and response values by type markers, keeping keys
   * and shapes; `replace` overwrites a file already at `path`. */
  dialsExport: (request: ExportRequest) => call("dials_export", { request }),
  /** A page of the timeline (dials and connection events) matching a filter line. */
  dialsHistory: (query: HistoryQuery, source: DialSource) => call("dials_history", { query, source }),
  dialsHistoryStats: (line: string, source: DialSource) => call("dials_history_stats", { line, source }),
  /** The core's parser on a filter line: the canonical line or the error with its place. */
  parseDialFilter: (line: string) => call("parse_dial_filter", { line }),
  /** The filter line's grammar in words (`docs/dial-filter.md`). */
  dialFilterHelp: () => call("dial_filter_help"),
  dialsImport: (path: string) => call("dials_import", { path }),
  dialsCloseImport: () => call("dials_close_import"),
  dialsClear: (scope: DialClearScope) => call("dials_clear", { scope }),
  dialsStatus: () => call("dials_status"),
  // Confirmations (mirror only: there is no call that approves, declines or cancels)
  confirmationsSnapshot: () => call("confirmations_snapshot"),
  autonomyTable: (phone: string) => call("autonomy_table", { phone }),
  notificationStatus: () => call("notification_status"),
  // Support bundles: a preview of every file, the save, and opening one read only
  supportPreview: (includeParams: boolean) => call("support_preview", { options: { include_params: includeParams } }),
  saveSupportBundle: (path: string, includeParams: boolean) =>
    call("save_support_bundle", { path, options: { include_params: includeParams } }),
  openBundle: (path: string) => call("open_bundle", { path }),
  closeBundle: () => call("close_bundle"),
  bundleInfo: () => call("bundle_info"),
  /** The open bundle's sender's app, settings and per-phone Phone lines views (`null`: live). */
  bundleDetails: () => call("bundle_details"),
  traySummary: () => call("tray_summary"),
};

/**
 * Files dropped on the window: `onDrop` gets their paths. Returns the unsubscribe function;
 * outside the desktop window this does nothing.
 */
export async function onFilesDropped(onDrop: (paths: string[]) => void): Promise<UnlistenFn> {
  if (!inTauri()) return () => {};
  const { getCurrentWebview } = await import("@tauri-apps/api/webview");
  return getCurrentWebview().onDragDropEvent((e) => {
    if (e.payload.type === "drop" && e.payload.paths.length > 0) onDrop(e.payload.paths);
  });
}

/**
 * Subscribes to a host notice (e.g. `switchboard://phones`); returns the unsubscribe function.
 * Outside the desktop window this does nothing.
 */
export async function onNotice<K extends AppEventName>(name: K, handler: (payload: AppEvents[K]) => void): Promise<UnlistenFn> {
  if (!inTauri()) return () => {};
  return listen<AppEvents[K]>(name, (e) => handler(e.payload));
}
