// Generated from the command list in src-tauri/src/commands/mod.rs and
// switchboard::app::AppEvent::ALL by `cargo test`; do not edit.
import type { AppInfo } from "./AppInfo";
import type { BridgeSnapshot } from "./BridgeSnapshot";
import type { BundleDetails } from "./BundleDetails";
import type { BundleInfo } from "./BundleInfo";
import type { BundleOptions } from "./BundleOptions";
import type { BundlePreview } from "./BundlePreview";
import type { ConfirmationsSnapshot } from "./ConfirmationsSnapshot";
import type { Diagnostics } from "./Diagnostics";
import type { Dial } from "./Dial";
import type { DialBanner } from "./DialBanner";
import type { DialBatchMsg } from "./DialBatchMsg";
import type { DialClearScope } from "./DialClearScope";
import type { DialConformance } from "./DialConformance";
import type { DialFilter } from "./DialFilter";
import type { DialHistoryPage } from "./DialHistoryPage";
import type { DialPage } from "./DialPage";
import type { DialSource } from "./DialSource";
import type { DialsStatus } from "./DialsStatus";
import type { ErrorExplanation } from "./ErrorExplanation";
import type { ExclusionTest } from "./ExclusionTest";
import type { ExportRequest } from "./ExportRequest";
import type { ExportSummary } from "./ExportSummary";
import type { FilterCheck } from "./FilterCheck";
import type { FollowBy } from "./FollowBy";
import type { HistoryQuery } from "./HistoryQuery";
import type { HistoryStats } from "./HistoryStats";
import type { HubNotice } from "./HubNotice";
import type { ImportSummary } from "./ImportSummary";
import type { MenuAction } from "./MenuAction";
import type { NotificationStatus } from "./NotificationStatus";
import type { OpStats } from "./OpStats";
import type { PaintMarks } from "./PaintMarks";
import type { PairingInvite } from "./PairingInvite";
import type { PhoneAutonomy } from "./PhoneAutonomy";
import type { PhoneLinesSnapshot } from "./PhoneLinesSnapshot";
import type { PhonesSnapshot } from "./PhonesSnapshot";
import type { SavedBundle } from "./SavedBundle";
import type { Settings } from "./Settings";
import type { TraySummary } from "./TraySummary";
import type { TrayView } from "./TrayView";
import type { WindowPlace } from "./WindowPlace";

/** Every command: what the window sends and what it gets back. */
export type Commands = {
  app_info: { args: Record<string, never>; ret: AppInfo };
  get_settings: { args: Record<string, never>; ret: Settings };
  save_settings: { args: { settings: Settings }; ret: Settings };
  diagnostics: { args: Record<string, never>; ret: Diagnostics };
  window_place: { args: Record<string, never>; ret: WindowPlace };
  save_window_place: { args: { place: WindowPlace }; ret: void };
  window_painted: { args: { view: string; scroll: number; marks?: PaintMarks | null }; ret: void };
  phones_snapshot: { args: Record<string, never>; ret: PhonesSnapshot };
  open_pairing: { args: { networks?: Array<string> | null }; ret: PairingInvite };
  close_pairing: { args: Record<string, never>; ret: void };
  confirm_pairing: { args: { id: string; codesMatch: boolean }; ret: void };
  unpair_phone: { args: { deviceId: string }; ret: boolean };
  bridge_snapshot: { args: Record<string, never>; ret: BridgeSnapshot };
  explain_error: { args: { text: string; caller?: string | null; endpoint?: string | null }; ret: ErrorExplanation };
  phone_lines_snapshot: { args: Record<string, never>; ret: PhoneLinesSnapshot };
  open_pairings_file: { args: { path: string }; ret: PhoneLinesSnapshot };
  show_phone_lines_of: { args: { phone: string }; ret: PhoneLinesSnapshot };
  close_pairings_file: { args: Record<string, never>; ret: PhoneLinesSnapshot };
  attach_describe: { args: { identifier: string; text: string }; ret: PhoneLinesSnapshot };
  revoke_phone_line: { args: { identifier: string; confirm: boolean }; ret: PhoneLinesSnapshot };
  test_exclusion: { args: { identifier: string; path: string }; ret: ExclusionTest };
  add_known_phone_line: { args: { identifier: string; name: string }; ret: PhoneLinesSnapshot };
  remove_known_phone_line: { args: { identifier: string }; ret: PhoneLinesSnapshot };
  dials_query: { args: { filter?: DialFilter | null; source?: DialSource | null }; ret: DialPage };
  dials_stats: { args: { filter?: DialFilter | null; source?: DialSource | null }; ret: Array<OpStats> };
  dials_subscribe: { args: { filter?: DialFilter | null; source?: DialSource | null; line?: string | null; channel: { onmessage: (message: DialBatchMsg) => void } }; ret: number };
  dials_history: { args: { query: HistoryQuery; source?: DialSource | null }; ret: DialHistoryPage };
  dials_history_stats: { args: { line: string; source?: DialSource | null }; ret: HistoryStats };
  dials_follow: { args: { id: string; startMs?: number | null; by: FollowBy; source?: DialSource | null }; ret: DialHistoryPage };
  parse_dial_filter: { args: { line: string }; ret: FilterCheck };
  dial_filter_help: { args: Record<string, never>; ret: string };
  dials_unsubscribe: { args: { id: number }; ret: boolean };
  dials_get: { args: { id: string; startMs?: number | null; seq?: number | null; source?: DialSource | null }; ret: Dial | null };
  dial_conformance: { args: { id: string; startMs?: number | null; seq?: number | null; source?: DialSource | null }; ret: DialConformance | null };
  dials_export: { args: { request: ExportRequest }; ret: ExportSummary };
  dials_import: { args: { path: string }; ret: ImportSummary };
  dials_close_import: { args: Record<string, never>; ret: void };
  dials_clear: { args: { scope: DialClearScope }; ret: number };
  dials_status: { args: Record<string, never>; ret: DialsStatus };
  dial_banner: { args: { dialId: string; startMs?: number | null; seq?: number | null; source?: DialSource | null }; ret: DialBanner | null };
  confirmations_snapshot: { args: Record<string, never>; ret: ConfirmationsSnapshot };
  autonomy_table: { args: { phone: string }; ret: PhoneAutonomy };
  notification_status: { args: Record<string, never>; ret: NotificationStatus };
  support_preview: { args: { options?: BundleOptions | null }; ret: BundlePreview };
  save_support_bundle: { args: { path: string; options?: BundleOptions | null }; ret: SavedBundle };
  open_bundle: { args: { path: string }; ret: BundleInfo };
  close_bundle: { args: Record<string, never>; ret: boolean };
  bundle_info: { args: Record<string, never>; ret: BundleInfo | null };
  tray_summary: { args: Record<string, never>; ret: TraySummary };
  bundle_details: { args: Record<string, never>; ret: BundleDetails | null };
};

/** A command's name. */
export type CommandName = keyof Commands;

/** Every event the window listens to, with its payload. */
export type AppEvents = {
  "switchboard://phones": null;
  "switchboard://phone-lines": null;
  "switchboard://confirmations": null;
  "switchboard://notice": HubNotice;
  "switchboard://bundle": null;
  "switchboard://open-view": TrayView;
  "switchboard://menu": MenuAction;
  "switchboard://bridge": null;
};

/** An event's name. */
export type AppEventName = keyof AppEvents;
