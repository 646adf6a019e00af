// The one module that talks to the Tauri host. Nothing else imports `@tauri-apps/*`.
// Every call returns typed data or throws an `IpcError` ({ kind, message }).
import { invoke as tauriInvoke } from "@tauri-apps/api/core";
import { listen, type UnlistenFn } from "@tauri-apps/api/event";
import type { AppInfo } from "../bindings/AppInfo";
import type { IpcError } from "../bindings/IpcError";
import type { Settings } from "../bindings/Settings";
import type { Diagnostics } from "../bindings/Diagnostics";
import type { PhonesSnapshot } from "../bindings/PhonesSnapshot";
import type { PairingInvite } from "../bindings/PairingInvite";
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
  openPairing: () => call<PairingInvite>("open_pairing"),
  closePairing: () => call<void>("close_pairing"),
  unpairPhone: (deviceId: string) => call<boolean>("unpair_phone", { deviceId }),
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
