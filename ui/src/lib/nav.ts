// The six views and the keyboard shortcuts between them (pure: unit-tested).

export type ViewId = "phones" | "phone-lines" | "bridge" | "dials" | "confirmations" | "settings";

export interface ViewDef {
  id: ViewId;
  label: string;
  /** The digit that, with Ctrl (Cmd on macOS), opens the view. */
  key: string;
}

export const VIEWS: readonly ViewDef[] = [
  { id: "phones", label: "Phones", key: "1" },
  { id: "phone-lines", label: "Phone lines", key: "2" },
  { id: "bridge", label: "Bridge status", key: "3" },
  { id: "dials", label: "Live dials", key: "4" },
  { id: "confirmations", label: "Confirmations", key: "5" },
  { id: "settings", label: "Settings", key: "6" },
];

export interface KeyLike {
  key: string;
  ctrlKey?: boolean;
  metaKey?: boolean;
  altKey?: boolean;
}

/** The view a global shortcut opens (Ctrl/Cmd + 1..6), or null. */
export function viewForShortcut(e: KeyLike): ViewId | null {
  if (!(e.ctrlKey || e.metaKey) || e.altKey) return null;
  return VIEWS.find((v) => v.key === e.key)?.id ?? null;
}

/** The view ArrowUp/ArrowDown/Home/End moves to from `current` in the sidebar, or null. */
export function viewForArrow(current: ViewId, key: string): ViewId | null {
  const i = VIEWS.findIndex((v) => v.id === current);
  if (i < 0) return null;
  const n = VIEWS.length;
  switch (key) {
    case "ArrowDown":
      return VIEWS[(i + 1) % n].id;
    case "ArrowUp":
      return VIEWS[(i - 1 + n) % n].id;
    case "Home":
      return VIEWS[0].id;
    case "End":
      return VIEWS[n - 1].id;
    default:
      return null;
  }
}

/** Reads a view id from a location hash (`#/dials`), defaulting to Phones. */
export function viewFromHash(hash: string): ViewId {
  const id = hash.replace(/^#\/?/, "");
  return VIEWS.find((v) => v.id === id)?.id ?? "phones";
}
