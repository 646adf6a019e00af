// The one module that talks to the Tauri host. Nothing else imports `@tauri-apps/*`.
// Every call returns typed data or throws an `IpcError` ({ kind, message }).
import { listen, type UnlistenFn } from "@tauri-apps/api/event";
import { Channel, invoke as tauriInvoke } from "@tauri-apps/api/core";
import type { AppInfo } from "../bindings/AppInfo";
import type { IpcError } from "../bindings/IpcError";
import type { Settings } from "../bindings/Settings";
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
import type { DialSource } from "../bindings/DialSource";
import type { DialsStatus } from "../bindings/DialsStatus";
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

/** Normalises anything thrown by the host into `{ kind, message }`. */
export function toIpcError(e: unknown): IpcError {
  if (e && typeof e === "object" && "kind" in e && "message" in e) {
    const o = e as { kind: unknown; message: unknown };
    return { kind: String(o.kind), message: String(o.message) };
  }
  return { kind: "internal", message: e instanceof Error ? e.message : String(e) };
}

async function call<T>(cmd: string, args?: Record<string, unknown>): Promise<T> {
  if (!inTauri()) {
    throw { kind: "no_host", message: "Switchboard's desktop host is not running; open the app window." } as IpcError;
  }
  try {
    return await tauriInvoke<T>(cmd, args);
  } catch (e) {
    throw toIpcError(e);
  }
}

export const api = {
  appInfo: () => call<AppInfo>("app_info"),
  getSettings: () => call<Settings>("get_settings"),
  saveSettings: (settings: Settings) => call<Settings>("save_settings", { settings }),
  diagnostics: () => call<Diagnostics>("diagnostics"),
  // Phones
  phonesSnapshot: () => call<PhonesSnapshot>("phones_snapshot"),
  /** The name each paired phone was paired under, by device id; empty when the link cannot
   * say (views then show device ids). */
  phoneNames: (): Promise<Record<string, string>> =>
    call<PhonesSnapshot>("phones_snapshot")
      .then((s) => Object.fromEntries(s.phones.map((p) => [p.record.device_id, p.record.label])))
      .catch(() => ({})),
  openPairing: () => call<PairingInvite>("open_pairing"),
  closePairing: () => call<void>("close_pairing"),
  unpairPhone: (deviceId: string) => call<boolean>("unpair_phone", { deviceId }),
  bridgeSnapshot: () => call<BridgeSnapshot>("bridge_snapshot"),
  explainError: (text: string, caller?: string, endpoint?: string) =>
    call<ErrorExplanation>("explain_error", { text, caller: caller || null, endpoint: endpoint || null }),
  phoneLinesSnapshot: () => call<PhoneLinesSnapshot>("phone_lines_snapshot"),
  openPairingsFile: (path: string) => call<PhoneLinesSnapshot>("open_pairings_file", { path }),
  closePairingsFile: () => call<PhoneLinesSnapshot>("close_pairings_file"),
  attachDescribe: (identifier: string, text: string) => call<PhoneLinesSnapshot>("attach_describe", { identifier, text }),
  revokePhoneLine: (identifier: string, confirm: boolean) => call<PhoneLinesSnapshot>("revoke_phone_line", { identifier, confirm }),
  testExclusion: (identifier: string, path: string) => call<ExclusionTest>("test_exclusion", { identifier, path }),
  addKnownPhoneLine: (identifier: string, name: string) => call<PhoneLinesSnapshot>("add_known_phone_line", { identifier, name }),
  removeKnownPhoneLine: (identifier: string) => call<PhoneLinesSnapshot>("remove_known_phone_line", { identifier }),
  // Live dials
  dialsQuery: (filter: DialFilter, source: DialSource = "live") => call<DialPage>("dials_query", { filter, source }),
  dialsStats: (filter: DialFilter, source: DialSource = "live") => call<OpStats[]>("dials_stats", { filter, source }),
  /** Streams a view: `onMessage` gets a snapshot, then batches (live only). Resolves to the subscription id. */
  dialsSubscribe: (filter: DialFilter, source: DialSource, onMessage: (m: DialBatchMsg) => void) => {
    if (!inTauri()) return call<number>("dials_subscribe");
    const channel = new Channel<DialBatchMsg>();
    channel.onmessage = onMessage;
    return call<number>("dials_subscribe", { filter, source, channel });
  },
  dialsUnsubscribe: (id: number) => call<boolean>("dials_unsubscribe", { id }),
  dialsGet: (id: string, startMs: number, source: DialSource) => call<Dial | null>("dials_get", { id, startMs, source }),
  dialBanner: (dialId: string, startMs: number, source: DialSource) => call<Banner | null>("dial_banner", { dialId, startMs, source }),
  dialsExport: (filter: DialFilter, path: string, source: DialSource) => call<ExportSummary>("dials_export", { filter, path, source }),
  dialsImport: (path: string) => call<ImportSummary>("dials_import", { path }),
  dialsCloseImport: () => call<null>("dials_close_import"),
  dialsClear: (scope: DialClearScope) => call<number>("dials_clear", { scope }),
  dialsStatus: () => call<DialsStatus>("dials_status"),
  // Confirmations (mirror only: there is no call that approves, declines or cancels)
  confirmationsSnapshot: () => call<ConfirmationsSnapshot>("confirmations_snapshot"),
  autonomyTable: (phone: string) => call<PhoneAutonomy>("autonomy_table", { phone }),
  notificationStatus: () => call<NotificationStatus>("notification_status"),
};

/**
 * Subscribes to a host notice (e.g. `switchboard://phones`); returns the unsubscribe function.
 * Outside the desktop window this does nothing.
 */
export async function onNotice(name: string, handler: () => void): Promise<UnlistenFn> {
  if (!inTauri()) return () => {};
  return listen(name, () => handler());
}
